//! Work types (work.open-cluster-management.io/v1): [`ManifestWork`] with every spec and status
//! field, and the CloudEvents payloads [`ManifestBundle`] / [`ManifestBundleStatus`] with the
//! conversions between the two shapes.
//!
//! Fields Go always writes (no `omitempty`, or a struct value) are always written here too, so
//! Go peers and status hashes see the same JSON: `spec.workload`, `deleteOption.propagationPolicy`,
//! `resourceIdentifier.group/namespace`, every `resourceMeta` field, `statusFeedback` and
//! `conditions` of a [`ManifestCondition`], `status.resourceStatus`, `manifests` and
//! `conditions` of the bundle payloads.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::meta::{Condition, ObjectMeta, resource};

/// Work condition: every manifest was applied.
pub const WORK_APPLIED: &str = "Applied";
/// Work condition: every applied resource exists on the cluster.
pub const WORK_AVAILABLE: &str = "Available";
/// Work condition: manifests are being applied.
pub const WORK_PROGRESSING: &str = "Progressing";
/// Work condition: the cluster's state does not match the desired state.
pub const WORK_DEGRADED: &str = "Degraded";
/// Work (and manifest) condition: a condition rule found the work complete.
pub const WORK_COMPLETE: &str = "Complete";
/// Work condition (ocm-edge): True while a new version waits on the cluster for a maintenance
/// window or the end of a hold on site (the version before stays applied and reconciled); its
/// observedGeneration is the generation that waits. False once a version that waited is applied.
pub const WORK_HELD: &str = "Held";
/// Reason of `Held=True`: someone at the machine holds updates (`ocm-edge-agent hold`).
pub const REASON_HELD_ON_SITE: &str = "HeldOnSite";
/// Reason of `Held=True`: no maintenance window of the cluster is open; the message says when
/// the next one opens.
pub const REASON_OUTSIDE_MAINTENANCE_WINDOW: &str = "OutsideMaintenanceWindow";
/// Reason of `Held=False`: the version that waited is applied.
pub const REASON_UPDATES_ALLOWED: &str = "UpdatesAllowed";
/// Work condition, as OCM's work agent sets it: True while the agent removes a deleted work's
/// objects and some are not gone yet (foreground deletion waits on their finalizers).
pub const WORK_DELETING: &str = "Deleting";
/// Reason of the [`WORK_DELETING`] condition (OCM's).
pub const REASON_WORK_DELETING: &str = "WorkDeleting";
/// Condition the agent adds to the last status of a deleted bundle.
pub const WORK_DELETED: &str = "Deleted";
/// Reason of the [`WORK_DELETED`] condition.
pub const REASON_MANIFESTS_DELETED: &str = "ManifestsDeleted";
/// Manifest condition: status feedback values were read.
pub const MANIFEST_STATUS_FEEDBACK_SYNCED: &str = "StatusFeedbackSynced";
/// Finalizer OCM puts on ManifestWorks.
pub const MANIFEST_WORK_FINALIZER: &str =
    "cluster.open-cluster-management.io/manifest-work-cleanup";
/// Default server-side-apply field manager.
pub const DEFAULT_FIELD_MANAGER: &str = "work-agent";

/// Kubernetes resources the hub wants on one managed cluster (namespace = cluster name).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestWork {
    /// `work.open-cluster-management.io/v1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `ManifestWork`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Metadata; the namespace is the cluster name.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The desired workload and how to apply it.
    #[serde(default)]
    pub spec: ManifestWorkSpec,
    /// Status reported by the agent.
    #[serde(default, skip_serializing_if = "ManifestWorkStatus::is_empty")]
    pub status: ManifestWorkStatus,
}
resource!(
    ManifestWork,
    "work.open-cluster-management.io/v1",
    "ManifestWork",
    [metadata, spec, status]
);

impl ManifestWork {
    /// A work `name` for cluster `cluster` (its namespace).
    pub fn new(cluster: impl Into<String>, name: impl Into<String>) -> Self {
        ManifestWork {
            metadata: ObjectMeta::namespaced(cluster, name),
            ..Default::default()
        }
    }
}

/// Desired state of a [`ManifestWork`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestWorkSpec {
    /// The manifests.
    #[serde(default)]
    pub workload: ManifestsTemplate,
    /// How resources are deleted when the work is deleted (Foreground when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_option: Option<DeleteOption>,
    /// Per-resource options.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::api::meta::null_as_empty"
    )]
    #[schemars(with = "Option<Vec<ManifestConfigOption>>")]
    pub manifest_configs: Vec<ManifestConfigOption>,
    /// Identity the agent applies with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executor: Option<ManifestWorkExecutor>,
}

/// The manifests of a work.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestsTemplate {
    /// Kubernetes objects, in apply order.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::api::meta::null_as_empty"
    )]
    #[schemars(with = "Option<Vec<Manifest>>")]
    pub manifests: Vec<Manifest>,
}

/// One Kubernetes object, kept exactly as written (Go's `runtime.RawExtension`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct Manifest(pub Value);

impl Manifest {
    fn str_at(&self, pointer: &str) -> Option<&str> {
        self.0.pointer(pointer).and_then(Value::as_str)
    }

    /// `apiVersion`, e.g. `apps/v1`.
    pub fn api_version(&self) -> Option<&str> {
        self.str_at("/apiVersion")
    }

    /// `kind`, e.g. `Deployment`.
    pub fn kind(&self) -> Option<&str> {
        self.str_at("/kind")
    }

    /// `metadata.name`.
    pub fn name(&self) -> Option<&str> {
        self.str_at("/metadata/name")
    }

    /// `metadata.namespace`.
    pub fn namespace(&self) -> Option<&str> {
        self.str_at("/metadata/namespace")
    }

    /// Group, plural resource, name and namespace of the object (empty where the manifest has
    /// none), as a work's resource identifiers name it.
    pub fn resource_identifier(&self) -> ResourceIdentifier {
        ResourceIdentifier {
            group: self
                .group_version()
                .map(|(g, _)| g.to_owned())
                .unwrap_or_default(),
            resource: plural(self.kind().unwrap_or_default()),
            name: self.name().unwrap_or_default().to_owned(),
            namespace: self.namespace().unwrap_or_default().to_owned(),
        }
    }

    /// API group and version from `apiVersion` (`("", "v1")` for the core group).
    pub fn group_version(&self) -> Option<(&str, &str)> {
        let api_version = self.api_version()?;
        Some(api_version.split_once('/').unwrap_or(("", api_version)))
    }
}

impl From<Value> for Manifest {
    fn from(v: Value) -> Self {
        Manifest(v)
    }
}

/// Deletion propagation of a work's resources.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
pub enum PropagationPolicy {
    /// Delete every resource, waiting for dependents.
    #[default]
    Foreground,
    /// Leave every resource on the cluster.
    Orphan,
    /// Leave only the resources listed in `selectivelyOrphans`.
    SelectivelyOrphan,
}

/// How a work's resources are deleted.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeleteOption {
    /// Foreground, Orphan or SelectivelyOrphan.
    #[serde(default)]
    pub propagation_policy: PropagationPolicy,
    /// Resources to orphan with SelectivelyOrphan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selectively_orphans: Option<SelectivelyOrphan>,
    /// Delete the work this long after it is Complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds_after_finished: Option<i64>,
}

/// Resources to orphan.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SelectivelyOrphan {
    /// One rule per orphaned resource.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::api::meta::null_as_empty"
    )]
    #[schemars(with = "Option<Vec<OrphaningRule>>")]
    pub orphaning_rules: Vec<OrphaningRule>,
}

/// A resource to orphan (same shape as [`ResourceIdentifier`], as in Go).
pub type OrphaningRule = ResourceIdentifier;

/// Group, resource, name and namespace of a resource. `group` and `namespace` are always
/// written (empty = core group / cluster-scoped), as Go does.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceIdentifier {
    /// API group; empty for the core group.
    #[serde(default)]
    pub group: String,
    /// Plural resource name, e.g. `deployments`.
    #[serde(default)]
    pub resource: String,
    /// Object name.
    #[serde(default)]
    pub name: String,
    /// Namespace; empty for cluster-scoped resources.
    #[serde(default)]
    pub namespace: String,
}

/// Options for one resource of a work.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestConfigOption {
    /// Which resource the options apply to.
    #[serde(default)]
    pub resource_identifier: ResourceIdentifier,
    /// Status fields to report back.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::api::meta::null_as_empty"
    )]
    #[schemars(with = "Option<Vec<FeedbackRule>>")]
    pub feedback_rules: Vec<FeedbackRule>,
    /// How to update the resource (Update when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_strategy: Option<UpdateStrategy>,
    /// How to compute conditions (e.g. Complete) from the resource.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::api::meta::null_as_empty"
    )]
    #[schemars(with = "Option<Vec<ConditionRule>>")]
    pub condition_rules: Vec<ConditionRule>,
    /// Poll (default) or Watch for status feedback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback_scrape_type: Option<FeedbackScrapeType>,
}

/// How status feedback is collected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
pub enum FeedbackScrapeType {
    /// Read periodically.
    #[default]
    Poll,
    /// Watch the resource.
    Watch,
}

/// Update strategy type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
pub enum UpdateStrategyType {
    /// Update the whole object.
    #[default]
    Update,
    /// Create if missing, never update.
    CreateOnly,
    /// Server-side apply.
    ServerSideApply,
    /// Only check existence (and read feedback).
    ReadOnly,
}

/// How to update a resource.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateStrategy {
    /// Update, CreateOnly, ServerSideApply or ReadOnly.
    #[serde(rename = "type", default)]
    pub type_: UpdateStrategyType,
    /// Options for ServerSideApply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_side_apply: Option<ServerSideApplyConfig>,
}

/// Server-side-apply options.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServerSideApplyConfig {
    /// Take ownership of conflicting fields. Always written, as Go does.
    #[serde(default)]
    pub force: bool,
    /// Field manager (default `work-agent`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub field_manager: String,
    /// Fields not to overwrite.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::api::meta::null_as_empty"
    )]
    #[schemars(with = "Option<Vec<IgnoreField>>")]
    pub ignore_fields: Vec<IgnoreField>,
}

/// When [`IgnoreField`] paths are ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
pub enum IgnoreFieldsCondition {
    /// Whenever the resource exists on the cluster.
    #[default]
    OnSpokePresent,
    /// When another actor changed the field on the cluster.
    OnSpokeChange,
}

/// JSON paths a server-side apply leaves alone.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IgnoreField {
    /// When to ignore.
    #[serde(default)]
    pub condition: IgnoreFieldsCondition,
    /// Kubernetes JSONPaths, e.g. `.spec.replicas` or
    /// `.spec.template.spec.containers[?(@.name=="app")].image`.
    #[serde(default, deserialize_with = "crate::api::meta::null_as_empty")]
    #[schemars(with = "Option<Vec<String>>")]
    pub json_paths: Vec<String>,
    /// RFC 6901 JSON Pointers, e.g. `/spec/replicas`.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::api::meta::null_as_empty"
    )]
    #[schemars(with = "Option<Vec<String>>")]
    pub json_pointers: Vec<String>,
    /// jq path expressions: OCM's API has them; ocm-edge refuses them (they are programs with no
    /// bound on their running time), so they are kept only to say so.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::api::meta::null_as_empty"
    )]
    #[schemars(with = "Option<Vec<String>>")]
    pub jq_path_expressions: Vec<String>,
}

/// Feedback rule type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
pub enum FeedbackType {
    /// Common status fields of well-known kinds (Deployment ReadyReplicas, ...).
    #[default]
    WellKnownStatus,
    /// The fields named by `jsonPaths`.
    #[serde(rename = "JSONPaths")]
    JsonPaths,
}

/// Which status fields to report back.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeedbackRule {
    /// WellKnownStatus or JSONPaths.
    #[serde(rename = "type", default)]
    pub type_: FeedbackType,
    /// Paths for JSONPaths.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::api::meta::null_as_empty"
    )]
    #[schemars(with = "Option<Vec<JsonPath>>")]
    pub json_paths: Vec<JsonPath>,
}

/// A named JSON path into a resource's status.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JsonPath {
    /// Alias reported in the feedback value.
    #[serde(default)]
    pub name: String,
    /// Resource version to read; latest when empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// The path, e.g. `.status.readyReplicas`.
    #[serde(default)]
    pub path: String,
}

/// Condition rule type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
pub enum ConditionRuleType {
    /// OCM's hard-coded rules for common kinds: `Complete` of a Job (Complete or Failed) and of
    /// a Pod (Succeeded or Failed). `WellKnownCompletions`, its name in earlier OCM releases,
    /// is read as this.
    #[default]
    #[serde(alias = "WellKnownCompletions")]
    WellKnownConditions,
    /// User CEL expressions.
    #[serde(rename = "CEL")]
    Cel,
}

/// How to set a condition of a manifest from the resource.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConditionRule {
    /// Condition type to set (Complete when empty). Required for CEL rules. Always written.
    #[serde(default)]
    pub condition: String,
    /// WellKnownConditions or CEL.
    #[serde(rename = "type", default)]
    pub type_: ConditionRuleType,
    /// CEL expressions over `object` (the applied resource), ANDed. Each may also be written
    /// `{expression: ...}`, as ocm-edge's first releases wrote it.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "cel_expressions"
    )]
    #[schemars(with = "Option<Vec<String>>")]
    pub cel_expressions: Vec<String>,
    /// Message of the condition.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// CEL expression computing the message, over `object` and `result` (the rule's outcome);
    /// overrides `message` when it yields a non-empty string.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message_expression: String,
}

impl ConditionRule {
    /// The condition type the rule sets: `condition`, or Complete when empty.
    pub fn condition_type(&self) -> &str {
        if self.condition.is_empty() {
            WORK_COMPLETE
        } else {
            &self.condition
        }
    }
}

/// `celExpressions` as OCM writes it (strings), or as ocm-edge first wrote it (`{expression}`).
fn cel_expressions<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Written {
        Ocm(String),
        Object { expression: String },
    }
    let written: Option<Vec<Written>> = Deserialize::deserialize(d)?;
    Ok(written
        .unwrap_or_default()
        .into_iter()
        .map(|w| match w {
            Written::Ocm(s) | Written::Object { expression: s } => s,
        })
        .collect())
}

/// The identity the agent applies a work with.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestWorkExecutor {
    /// The subject.
    #[serde(default)]
    pub subject: ManifestWorkExecutorSubject,
}

/// Executor subject type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
pub enum ManifestWorkExecutorSubjectType {
    /// A service account on the managed cluster.
    #[default]
    ServiceAccount,
}

/// Executor subject.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestWorkExecutorSubject {
    /// ServiceAccount.
    #[serde(rename = "type", default)]
    pub type_: ManifestWorkExecutorSubjectType,
    /// The service account, for type ServiceAccount.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account: Option<ManifestWorkSubjectServiceAccount>,
}

/// A service account on the managed cluster.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestWorkSubjectServiceAccount {
    /// Its namespace.
    #[serde(default)]
    pub namespace: String,
    /// Its name.
    #[serde(default)]
    pub name: String,
}

/// Observed state of a [`ManifestWork`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestWorkStatus {
    /// Applied, Available, Progressing, Degraded, Complete, Deleted.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::api::meta::null_as_empty"
    )]
    #[schemars(with = "Option<Vec<Condition>>")]
    pub conditions: Vec<Condition>,
    /// Per-manifest status; always written (`{}` when empty), as Go does.
    #[serde(default)]
    pub resource_status: ManifestResourceStatus,
}

impl ManifestWorkStatus {
    /// Whether nothing has been reported.
    pub fn is_empty(&self) -> bool {
        self.conditions.is_empty() && self.resource_status.manifests.is_empty()
    }
}

/// Per-manifest status of a work.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestResourceStatus {
    /// One entry per applied manifest.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::api::meta::null_as_empty"
    )]
    #[schemars(with = "Option<Vec<ManifestCondition>>")]
    pub manifests: Vec<ManifestCondition>,
}

/// Status of one manifest.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestCondition {
    /// Which manifest.
    #[serde(default)]
    pub resource_meta: ResourceMeta,
    /// Feedback values; always written (`{}` when empty), as Go does.
    #[serde(default)]
    pub status_feedback: StatusFeedbackResult,
    /// Applied, Available, StatusFeedbackSynced, ...; always written.
    #[serde(default, deserialize_with = "crate::api::meta::null_as_empty")]
    #[schemars(with = "Option<Vec<Condition>>")]
    pub conditions: Vec<Condition>,
}

/// Identity of a manifest in a status (Go's `ManifestResourceMeta`); every field always written.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceMeta {
    /// Index of the manifest in the spec.
    #[serde(default)]
    pub ordinal: i32,
    /// API group.
    #[serde(default)]
    pub group: String,
    /// API version.
    #[serde(default)]
    pub version: String,
    /// Kind.
    #[serde(default)]
    pub kind: String,
    /// Plural resource.
    #[serde(default)]
    pub resource: String,
    /// Name.
    #[serde(default)]
    pub name: String,
    /// Namespace.
    #[serde(default)]
    pub namespace: String,
}

/// Status values reported for a manifest.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatusFeedbackResult {
    /// The values.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::api::meta::null_as_empty"
    )]
    #[schemars(with = "Option<Vec<FeedbackValue>>")]
    pub values: Vec<FeedbackValue>,
}

/// One reported value.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeedbackValue {
    /// Alias from the feedback rule (or a well-known name like ReadyReplicas).
    #[serde(default)]
    pub name: String,
    /// The value.
    #[serde(default)]
    pub field_value: FieldValue,
}

/// Type of a [`FieldValue`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
pub enum ValueType {
    /// `integer` is set.
    #[default]
    Integer,
    /// `string` is set.
    String,
    /// `boolean` is set.
    Boolean,
    /// `jsonRaw` is set (a JSON text of at most 1024 bytes).
    JsonRaw,
}

/// A status value.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FieldValue {
    /// Which of the fields is set.
    #[serde(rename = "type", default)]
    pub type_: ValueType,
    /// Integer value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integer: Option<i64>,
    /// String value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub string: Option<String>,
    /// Boolean value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boolean: Option<bool>,
    /// JSON text for lists and objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json_raw: Option<String>,
}

impl FieldValue {
    /// An Integer value.
    pub fn integer(v: i64) -> Self {
        FieldValue {
            type_: ValueType::Integer,
            integer: Some(v),
            ..Default::default()
        }
    }
    /// A String value.
    pub fn string(v: impl Into<String>) -> Self {
        FieldValue {
            type_: ValueType::String,
            string: Some(v.into()),
            ..Default::default()
        }
    }
    /// A Boolean value.
    pub fn boolean(v: bool) -> Self {
        FieldValue {
            type_: ValueType::Boolean,
            boolean: Some(v),
            ..Default::default()
        }
    }
    /// A JsonRaw value.
    pub fn json_raw(v: impl Into<String>) -> Self {
        FieldValue {
            type_: ValueType::JsonRaw,
            json_raw: Some(v.into()),
            ..Default::default()
        }
    }
}

/// Spec payload of `io.open-cluster-management.works.v1alpha1.manifestbundles` events
/// (sdk-go `payload.ManifestBundle`). Note the spelling `executer`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestBundle {
    /// The manifests; always written.
    #[serde(default, deserialize_with = "crate::api::meta::null_as_empty")]
    #[schemars(with = "Option<Vec<Manifest>>")]
    pub manifests: Vec<Manifest>,
    /// Deletion options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_option: Option<DeleteOption>,
    /// Per-resource options.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::api::meta::null_as_empty"
    )]
    #[schemars(with = "Option<Vec<ManifestConfigOption>>")]
    pub manifest_configs: Vec<ManifestConfigOption>,
    /// The work's executor (`spec.executor` of a ManifestWork).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executer: Option<ManifestWorkExecutor>,
}

impl From<ManifestWorkSpec> for ManifestBundle {
    fn from(spec: ManifestWorkSpec) -> Self {
        ManifestBundle {
            manifests: spec.workload.manifests,
            delete_option: spec.delete_option,
            manifest_configs: spec.manifest_configs,
            executer: spec.executor,
        }
    }
}

impl From<&ManifestWorkSpec> for ManifestBundle {
    fn from(spec: &ManifestWorkSpec) -> Self {
        spec.clone().into()
    }
}

impl From<ManifestBundle> for ManifestWorkSpec {
    fn from(bundle: ManifestBundle) -> Self {
        ManifestWorkSpec {
            workload: ManifestsTemplate {
                manifests: bundle.manifests,
            },
            delete_option: bundle.delete_option,
            manifest_configs: bundle.manifest_configs,
            executor: bundle.executer,
        }
    }
}

impl From<&ManifestBundle> for ManifestWorkSpec {
    fn from(bundle: &ManifestBundle) -> Self {
        bundle.clone().into()
    }
}

/// Status payload of manifestbundles events (sdk-go `payload.ManifestBundleStatus`): the
/// per-manifest list is flat here, while [`ManifestWorkStatus`] nests it under `manifests`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestBundleStatus {
    /// The spec this status is for; optional, lets a cache-less source rebuild the work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest_bundle: Option<ManifestBundle>,
    /// Work conditions; always written.
    #[serde(default, deserialize_with = "crate::api::meta::null_as_empty")]
    #[schemars(with = "Option<Vec<Condition>>")]
    pub conditions: Vec<Condition>,
    /// Per-manifest status.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::api::meta::null_as_empty"
    )]
    #[schemars(with = "Option<Vec<ManifestCondition>>")]
    pub resource_status: Vec<ManifestCondition>,
}

impl From<ManifestWorkStatus> for ManifestBundleStatus {
    fn from(status: ManifestWorkStatus) -> Self {
        ManifestBundleStatus {
            manifest_bundle: None,
            conditions: status.conditions,
            resource_status: status.resource_status.manifests,
        }
    }
}

impl From<&ManifestWorkStatus> for ManifestBundleStatus {
    fn from(status: &ManifestWorkStatus) -> Self {
        status.clone().into()
    }
}

impl From<ManifestBundleStatus> for ManifestWorkStatus {
    /// Drops `manifestBundle`, which a work status has no place for.
    fn from(status: ManifestBundleStatus) -> Self {
        ManifestWorkStatus {
            conditions: status.conditions,
            resource_status: ManifestResourceStatus {
                manifests: status.resource_status,
            },
        }
    }
}

impl From<&ManifestBundleStatus> for ManifestWorkStatus {
    fn from(status: &ManifestBundleStatus) -> Self {
        ManifestWorkStatus {
            conditions: status.conditions.clone(),
            resource_status: ManifestResourceStatus {
                manifests: status.resource_status.clone(),
            },
        }
    }
}

/// The plural resource name Kubernetes uses for `kind` (lowercase, English plural rules as in
/// apimachinery's `UnsafeGuessKindToResource`). The kube applier asks discovery instead.
pub fn plural(kind: &str) -> String {
    let lower = kind.to_ascii_lowercase();
    if lower.is_empty() {
        return lower;
    }
    if lower == "endpoints" {
        return lower;
    }
    if lower.ends_with('s') {
        return format!("{lower}es");
    }
    if let Some(stem) = lower.strip_suffix('y')
        && !stem.ends_with(['a', 'e', 'i', 'o', 'u'])
    {
        return format!("{stem}ies");
    }
    format!("{lower}s")
}
