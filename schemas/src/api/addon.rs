//! OCM's add-on API (`addon.open-cluster-management.io`): [`ClusterManagementAddOn`] and
//! [`ManagedClusterAddOn`] as v1beta1 has them, [`AddOnDeploymentConfig`] (the same in v1alpha1
//! and v1beta1) and [`AddOnTemplate`] (v1alpha1, the only version OCM has of it).
//!
//! Objects written for v1alpha1 are read as OCM's conversion reads them
//! ([`convert_v1alpha1`]): a ClusterManagementAddOn's `supportedConfigs` with a `defaultConfig`
//! become `defaultConfigs`; a ManagedClusterAddOn's `installNamespace` becomes the annotation
//! [`INSTALL_NAMESPACE_ANNOTATION`].

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::meta::{Condition, ObjectMeta, resource};
use super::replicaset::RolloutStrategy;
use super::work::ManifestWorkSpec;

/// The API group of add-on objects.
pub const ADDON_GROUP: &str = "addon.open-cluster-management.io";
/// `resource` of an [`AddOnTemplate`] in an [`AddOnConfig`].
pub const ADDON_TEMPLATES: &str = "addontemplates";
/// `resource` of an [`AddOnDeploymentConfig`] in an [`AddOnConfig`].
pub const ADDON_DEPLOYMENT_CONFIGS: &str = "addondeploymentconfigs";
/// Install strategy: ManagedClusterAddOns are created by hand (`ocm-edge addon enable`).
pub const INSTALL_MANUAL: &str = "Manual";
/// Install strategy: a ManagedClusterAddOn on every cluster the placements select.
pub const INSTALL_PLACEMENTS: &str = "Placements";
/// Annotation that keeps a v1alpha1 ManagedClusterAddOn's `spec.installNamespace`.
pub const INSTALL_NAMESPACE_ANNOTATION: &str =
    "addon.open-cluster-management.io/v1alpha1-install-namespace";
/// OCM's name of a default config that names no object (its conversion writes it for a
/// supported config without a default): dropped when read.
pub const RESERVED_NO_DEFAULT: &str = "__reserved_no_default__";

/// Where an add-on's agent is installed when nothing says otherwise (OCM's default).
pub const DEFAULT_INSTALL_NAMESPACE: &str = "open-cluster-management-agent-addon";
/// Label of what belongs to an add-on (its works), naming it.
pub const LABEL_ADDON_NAME: &str = "open-cluster-management.io/addon-name";
/// Label of an add-on's pre-delete Job in its template (OCM's hook).
pub const LABEL_PRE_DELETE: &str = "open-cluster-management.io/addon-pre-delete";

/// ManagedClusterAddOn condition: the add-on's manifests are applied on the cluster.
pub const CONDITION_MANIFEST_APPLIED: &str = "ManifestApplied";
/// ManagedClusterAddOn condition: the add-on's agent is available.
pub const CONDITION_AVAILABLE: &str = "Available";
/// ManagedClusterAddOn condition: its configs are resolved and rendered.
pub const CONDITION_CONFIGURED: &str = "Configured";
/// ManagedClusterAddOn condition: a new config is rolling out to it.
pub const CONDITION_PROGRESSING: &str = "Progressing";
/// ManagedClusterAddOn condition: its registration (an MQTT identity here) is applied.
pub const CONDITION_REGISTRATION_APPLIED: &str = "RegistrationApplied";
/// ManagedClusterAddOn condition: its identity's client certificate was (re)issued.
pub const CONDITION_CERTIFICATE_ROTATED: &str = "ClusterCertificateRotated";

/// An add-on, as the hub manages it (cluster-scoped).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterManagementAddOn {
    /// `addon.open-cluster-management.io/v1beta1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `ClusterManagementAddOn`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Metadata; the name is the add-on's.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// What it is, its configs, where it installs.
    #[serde(default)]
    pub spec: ClusterManagementAddOnSpec,
    /// Per placement, how the install and its configs progress (the hub's).
    #[serde(
        default,
        skip_serializing_if = "ClusterManagementAddOnStatus::is_empty"
    )]
    pub status: ClusterManagementAddOnStatus,
}
resource!(
    ClusterManagementAddOn,
    "addon.open-cluster-management.io/v1beta1",
    "ClusterManagementAddOn",
    [metadata, spec, status]
);

/// Spec of a [`ClusterManagementAddOn`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterManagementAddOnSpec {
    /// Display name and description.
    #[serde(default)]
    pub add_on_meta: AddOnMeta,
    /// The configs of every cluster unless its placement or its ManagedClusterAddOn says
    /// otherwise (one per group and resource): an AddOnTemplate makes it a template add-on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub default_configs: Vec<AddOnConfig>,
    /// Manual (by hand) or Placements (where placements select).
    #[serde(default)]
    pub install_strategy: InstallStrategy,
}

/// What an add-on is, for people.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddOnMeta {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub display_name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
}

/// A config object of an add-on: its group and resource, its namespace (empty for
/// cluster-scoped ones) and name.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct AddOnConfig {
    /// `addon.open-cluster-management.io` for OCM's configs.
    #[serde(default)]
    pub group: String,
    /// `addontemplates` or `addondeploymentconfigs`.
    pub resource: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    pub name: String,
}

impl AddOnConfig {
    /// Whether this config is of `resource` in OCM's add-on group.
    pub fn is(&self, resource: &str) -> bool {
        self.group == ADDON_GROUP && self.resource == resource
    }
}

/// How ManagedClusterAddOns come to be.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstallStrategy {
    /// `Manual` (the default) or `Placements`.
    #[serde(rename = "type", default = "manual")]
    pub type_: String,
    /// With `Placements`: each placement, its configs and rollout strategy.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placements: Vec<PlacementStrategy>,
}

fn manual() -> String {
    INSTALL_MANUAL.to_owned()
}

impl Default for InstallStrategy {
    fn default() -> Self {
        InstallStrategy {
            type_: manual(),
            placements: vec![],
        }
    }
}

/// One placement of an add-on's install strategy.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlacementStrategy {
    /// The placement's namespace.
    pub namespace: String,
    /// The placement's name.
    pub name: String,
    /// Configs of the clusters it selects (before the default configs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub configs: Vec<AddOnConfig>,
    /// How a config change reaches them (All when absent).
    #[serde(default, skip_serializing_if = "RolloutStrategy::is_empty")]
    pub rollout_strategy: RolloutStrategy,
}

/// Status of a [`ClusterManagementAddOn`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterManagementAddOnStatus {
    /// The default configs as resolved.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub default_config_references: Vec<DefaultConfigReference>,
    /// Per placement of the install strategy.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub install_progressions: Vec<InstallProgression>,
}

impl ClusterManagementAddOnStatus {
    pub fn is_empty(&self) -> bool {
        self.default_config_references.is_empty() && self.install_progressions.is_empty()
    }
}

/// A config by name with the hash of its spec.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigSpecHash {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    pub name: String,
    /// SHA-256 of the config's spec (hex).
    pub spec_hash: String,
}

/// A default config as resolved.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DefaultConfigReference {
    pub group: String,
    pub resource: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired_config: Option<ConfigSpecHash>,
}

/// How one placement's install progresses.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstallProgression {
    /// The placement's namespace.
    pub namespace: String,
    /// The placement's name.
    pub name: String,
    /// Its configs: desired, last known good (every selected cluster took it), last applied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub config_references: Vec<InstallConfigReference>,
    /// `Progressing`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// One config of a placement's install.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstallConfigReference {
    pub group: String,
    pub resource: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired_config: Option<ConfigSpecHash>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_known_good_config: Option<ConfigSpecHash>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_applied_config: Option<ConfigSpecHash>,
}

/// An add-on on one cluster (in the cluster's namespace, named after the add-on).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterAddOn {
    /// `addon.open-cluster-management.io/v1beta1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `ManagedClusterAddOn`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Metadata: namespace = the cluster, name = the add-on.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// This cluster's own configs (before its placement's and the default ones).
    #[serde(default)]
    pub spec: ManagedClusterAddOnSpec,
    /// Conditions, install namespace, configs, health (the hub's).
    #[serde(default)]
    pub status: ManagedClusterAddOnStatus,
}
resource!(
    ManagedClusterAddOn,
    "addon.open-cluster-management.io/v1beta1",
    "ManagedClusterAddOn",
    [metadata, spec, status]
);

/// Spec of a [`ManagedClusterAddOn`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterAddOnSpec {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub configs: Vec<AddOnConfig>,
}

/// Status of a [`ManagedClusterAddOn`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterAddOnStatus {
    /// ManifestApplied, Available, Configured, Progressing, Degraded, RegistrationApplied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// What it consists of (its ManifestWork).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub related_objects: Vec<ObjectReference>,
    /// The add-on's display name and description.
    #[serde(default)]
    pub add_on_meta: AddOnMeta,
    /// Where its agent is installed on the cluster.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Its configs as resolved for this cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub config_references: Vec<ConfigReference>,
    /// What its agent registers with (as its template says).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub registrations: Vec<RegistrationConfig>,
    /// How its health is told.
    #[serde(default)]
    pub health_check: HealthCheck,
}

/// An object an add-on consists of.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    pub group: String,
    pub resource: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    pub name: String,
}

/// A config of one cluster's add-on, as resolved and as applied.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigReference {
    pub group: String,
    pub resource: String,
    /// The config's generation when last resolved.
    #[serde(default)]
    pub last_observed_generation: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired_config: Option<ConfigSpecHash>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_applied_config: Option<ConfigSpecHash>,
}

/// A registration of an add-on's agent (OCM: `kubeClient` or `customSigner`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegistrationConfig {
    #[serde(rename = "type")]
    pub type_: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_client: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_signer: Option<Value>,
}

/// How an add-on's health is told: `Lease` (its agent renews a Lease) or `Customized` (probes
/// of its work).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HealthCheck {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub mode: String,
}

/// An add-on's agent as a ManifestWork spec to render per cluster (cluster-scoped; v1alpha1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddOnTemplate {
    /// `addon.open-cluster-management.io/v1alpha1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `AddOnTemplate`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: AddOnTemplateSpec,
}
resource!(
    AddOnTemplate,
    "addon.open-cluster-management.io/v1alpha1",
    "AddOnTemplate",
    [metadata, spec]
);

/// Spec of an [`AddOnTemplate`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddOnTemplateSpec {
    /// The add-on it is a template of.
    pub addon_name: String,
    /// The agent's manifests, with `{{VARIABLE}}`s rendered per cluster.
    #[serde(default)]
    pub agent_spec: ManifestWorkSpec,
    /// What the agent registers with on the hub.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub registration: Vec<RegistrationSpec>,
}

/// A registration an add-on's agent asks for (OCM: `KubeClient` or `CustomSigner`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegistrationSpec {
    #[serde(rename = "type")]
    pub type_: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_client: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_signer: Option<Value>,
}

/// Per-cluster settings of an add-on: its variables, where it installs, its images, proxy and
/// resources (namespaced).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddOnDeploymentConfig {
    /// `addon.open-cluster-management.io/v1beta1` (v1alpha1 is the same).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `AddOnDeploymentConfig`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: AddOnDeploymentConfigSpec,
}
resource!(
    AddOnDeploymentConfig,
    "addon.open-cluster-management.io/v1beta1",
    "AddOnDeploymentConfig",
    [metadata, spec]
);

/// Spec of an [`AddOnDeploymentConfig`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddOnDeploymentConfigSpec {
    /// `{{NAME}}` values for the template.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub customized_variables: Vec<CustomizedVariable>,
    /// Node selector and tolerations of the agent's pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_placement: Option<NodePlacement>,
    /// Image mirrors: an image from `source` is pulled from `mirror`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub registries: Vec<ImageMirror>,
    /// HTTP(S) proxy of the agent.
    #[serde(default, skip_serializing_if = "ProxyConfig::is_empty")]
    pub proxy_config: ProxyConfig,
    /// Where the agent is installed (the template's `{{INSTALL_NAMESPACE}}`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub agent_install_namespace: String,
    /// Compute resources per agent container; a container matching several takes the last.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_requirements: Vec<ContainerResourceRequirements>,
}

/// The resources of one agent container or a group of them (OCM's `resourceRequirements`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContainerResourceRequirements {
    /// `{resource_types}:{resource_name}:{container_name}`: `deployments`, `daemonsets`,
    /// `statefulsets`, `replicasets`, `jobs`, `cronjobs`, `pods` or `*`; `*` matches any run of
    /// characters in each part (`*:*:*`: every container of the agent).
    #[serde(rename = "containerID")]
    pub container_id: String,
    /// A Kubernetes ResourceRequirements (`requests`, `limits`), set on each matching container.
    #[serde(default)]
    pub resources: Value,
}

/// The resource types a `containerID` may name, with their kinds.
pub const CONTAINER_ID_RESOURCES: [(&str, &str); 7] = [
    ("deployments", "Deployment"),
    ("daemonsets", "DaemonSet"),
    ("statefulsets", "StatefulSet"),
    ("replicasets", "ReplicaSet"),
    ("jobs", "Job"),
    ("cronjobs", "CronJob"),
    ("pods", "Pod"),
];

impl ContainerResourceRequirements {
    /// Checks `containerID` (three parts, a known resource type or `*`) and that `resources` is
    /// an object.
    ///
    /// # Errors
    /// What is wrong, for the user.
    pub fn validate(&self) -> Result<(), String> {
        let parts: Vec<&str> = self.container_id.split(':').collect();
        let known = |t: &str| t == "*" || CONTAINER_ID_RESOURCES.iter().any(|(r, _)| *r == t);
        if parts.len() != 3 || parts.iter().any(|p| p.is_empty()) || !known(parts[0]) {
            return Err(format!(
                "containerID {:?} is not {{resource_types}}:{{resource_name}}:{{container_name}} \
                 with a resource type of deployments, daemonsets, statefulsets, replicasets, jobs, \
                 cronjobs, pods or *",
                self.container_id
            ));
        }
        if !self.resources.is_object() {
            return Err(format!(
                "resources of containerID {:?} is not an object (requests, limits)",
                self.container_id
            ));
        }
        Ok(())
    }

    /// Whether it names container `container` of the `kind` object `name`.
    pub fn matches(&self, kind: &str, name: &str, container: &str) -> bool {
        let parts: Vec<&str> = self.container_id.split(':').collect();
        let [resource, object, c] = parts.as_slice() else {
            return false;
        };
        let kind_ok = *resource == "*"
            || CONTAINER_ID_RESOURCES
                .iter()
                .any(|(r, k)| r == resource && *k == kind);
        kind_ok && glob(object, name) && glob(c, container)
    }
}

/// Whether `text` matches `pattern`, where `*` stands for any run of characters.
fn glob(pattern: &str, text: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == text,
        Some((head, rest)) => {
            let Some(tail) = text.strip_prefix(head) else {
                return false;
            };
            (0..=tail.len())
                .filter(|i| tail.is_char_boundary(*i))
                .any(|i| glob(rest, &tail[i..]))
        }
    }
}

/// One template variable.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct CustomizedVariable {
    pub name: String,
    #[serde(default)]
    pub value: String,
}

/// Where an add-on's pods run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodePlacement {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Value>,
}

/// An image mirror.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct ImageMirror {
    pub mirror: String,
    pub source: String,
}

/// An add-on agent's proxy.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProxyConfig {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub http_proxy: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub https_proxy: String,
    /// PEM, base64 (as Go encodes bytes).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ca_bundle: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub no_proxy: String,
}

impl ProxyConfig {
    pub fn is_empty(&self) -> bool {
        *self == ProxyConfig::default()
    }
}

/// A v1alpha1 ClusterManagementAddOn or ManagedClusterAddOn (as JSON) the way OCM's conversion
/// makes it v1beta1; other objects unchanged. The apiVersion becomes v1beta1.
pub fn convert_v1alpha1(mut value: Value) -> Value {
    let kind = value
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match kind {
        "ClusterManagementAddOn" => {
            // Exported from an OCM hub, v1beta1 names a missing default so.
            if let Some(Value::Array(defaults)) = value.pointer_mut("/spec/defaultConfigs") {
                defaults
                    .retain(|c| c.get("name").and_then(Value::as_str) != Some(RESERVED_NO_DEFAULT));
            }
            if let Some(spec) = value.get_mut("spec").and_then(Value::as_object_mut)
                && let Some(Value::Array(supported)) = spec.remove("supportedConfigs")
            {
                let mut defaults: Vec<Value> = supported
                    .into_iter()
                    .filter_map(|c| {
                        let default = c.get("defaultConfig")?;
                        if default.get("name").and_then(Value::as_str) == Some(RESERVED_NO_DEFAULT)
                        {
                            return None;
                        }
                        let mut config = serde_json::Map::new();
                        for field in ["group", "resource"] {
                            if let Some(v) = c.get(field) {
                                config.insert(field.to_owned(), v.clone());
                            }
                        }
                        for field in ["namespace", "name"] {
                            if let Some(v) = default.get(field) {
                                config.insert(field.to_owned(), v.clone());
                            }
                        }
                        Some(Value::Object(config))
                    })
                    .collect();
                if let Some(Value::Array(given)) = spec.remove("defaultConfigs") {
                    defaults.extend(given);
                }
                spec.insert("defaultConfigs".to_owned(), Value::Array(defaults));
            }
        }
        "ManagedClusterAddOn" => {
            let namespace = value
                .get_mut("spec")
                .and_then(Value::as_object_mut)
                .and_then(|spec| spec.remove("installNamespace"));
            if let Some(Value::String(ns)) = namespace
                && !ns.is_empty()
            {
                let metadata = value.as_object_mut().map(|o| {
                    o.entry("metadata")
                        .or_insert_with(|| Value::Object(Default::default()))
                });
                if let Some(Value::Object(m)) = metadata {
                    let annotations = m
                        .entry("annotations")
                        .or_insert_with(|| Value::Object(Default::default()));
                    if let Value::Object(a) = annotations {
                        a.insert(INSTALL_NAMESPACE_ANNOTATION.to_owned(), Value::String(ns));
                    }
                }
            }
        }
        _ => return value,
    }
    value["apiVersion"] = Value::String(format!("{ADDON_GROUP}/v1beta1"));
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn container_ids_match_as_ocm_describes_them() {
        let req = |id: &str| ContainerResourceRequirements {
            container_id: id.to_owned(),
            resources: serde_json::json!({"limits": {"memory": "64Mi"}}),
        };
        assert!(req("*:*:*").matches("Deployment", "agent", "main"));
        assert!(req("deployments:agent:main").matches("Deployment", "agent", "main"));
        assert!(!req("deployments:agent:main").matches("DaemonSet", "agent", "main"));
        assert!(req("daemonsets:*:side*").matches("DaemonSet", "x", "sidecar"));
        assert!(!req("daemonsets:*:side*").matches("DaemonSet", "x", "main"));
        assert!(req("*:hello-*-agent:*").matches("Job", "hello-1-agent", "c"));
        assert!(!req("*:hello-*-agent:*").matches("Job", "hello-1-agents", "c"));
        for bad in ["deployments:agent", "services:a:b", "::", "*:*:"] {
            assert!(req(bad).validate().is_err(), "{bad}");
        }
        assert!(req("pods:*:*").validate().is_ok());
        let mut not_object = req("*:*:*");
        not_object.resources = serde_json::json!("1Gi");
        assert!(not_object.validate().unwrap_err().contains("not an object"));
    }
    use serde_json::json;

    #[test]
    fn a_v1alpha1_cluster_management_addon_reads_as_ocms_conversion_makes_it() {
        let v1alpha1 = json!({
            "apiVersion": "addon.open-cluster-management.io/v1alpha1",
            "kind": "ClusterManagementAddOn",
            "metadata": {"name": "hello"},
            "spec": {"supportedConfigs": [
                {"group": "addon.open-cluster-management.io", "resource": "addontemplates",
                 "defaultConfig": {"name": "hello-template"}},
                {"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs"}
            ]}
        });
        let cma: ClusterManagementAddOn =
            serde_json::from_value(convert_v1alpha1(v1alpha1)).unwrap();
        assert_eq!(cma.api_version, "addon.open-cluster-management.io/v1beta1");
        assert_eq!(
            cma.spec.default_configs,
            [AddOnConfig {
                group: ADDON_GROUP.into(),
                resource: ADDON_TEMPLATES.into(),
                namespace: String::new(),
                name: "hello-template".into(),
            }],
            "a supported config without a default is no default config"
        );
        assert_eq!(cma.spec.install_strategy.type_, INSTALL_MANUAL);
    }

    #[test]
    fn ocms_reserved_no_default_config_is_dropped() {
        let cma: ClusterManagementAddOn = serde_json::from_value(convert_v1alpha1(json!({
            "apiVersion": "addon.open-cluster-management.io/v1beta1",
            "kind": "ClusterManagementAddOn", "metadata": {"name": "a"},
            "spec": {"defaultConfigs": [
                {"group": ADDON_GROUP, "resource": ADDON_DEPLOYMENT_CONFIGS,
                 "name": RESERVED_NO_DEFAULT},
                {"group": ADDON_GROUP, "resource": ADDON_TEMPLATES, "name": "t"}]}
        })))
        .unwrap();
        assert_eq!(cma.spec.default_configs.len(), 1);
        assert_eq!(cma.spec.default_configs[0].name, "t");
    }

    #[test]
    fn a_v1alpha1_managed_cluster_addons_install_namespace_becomes_ocms_annotation() {
        let mca: ManagedClusterAddOn = serde_json::from_value(convert_v1alpha1(json!({
            "apiVersion": "addon.open-cluster-management.io/v1alpha1",
            "kind": "ManagedClusterAddOn",
            "metadata": {"name": "hello", "namespace": "edge-1"},
            "spec": {"installNamespace": "hello-ns"}
        })))
        .unwrap();
        assert_eq!(
            mca.metadata.annotations[INSTALL_NAMESPACE_ANNOTATION],
            "hello-ns"
        );
    }
}
