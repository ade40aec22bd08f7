//! Cluster registration types: [`ManagedCluster`] (cluster.open-cluster-management.io/v1),
//! [`ClusterClaim`] (v1alpha1), [`ManagedClusterSet`] and [`ManagedClusterSetBinding`] (v1beta2),
//! with OCM's condition types, taint keys and well-known labels.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::meta::{Condition, LabelSelector, ObjectMeta, Quantity, Time, is_zero_i32, resource};

/// Condition: the hub accepted the cluster (`spec.hubAcceptsClient` is true).
pub const HUB_ACCEPTED_MANAGED_CLUSTER: &str = "HubAcceptedManagedCluster";
/// Condition: the hub denied the cluster.
pub const HUB_DENIED_MANAGED_CLUSTER: &str = "HubDeniedManagedCluster";
/// Condition: the cluster's agent joined the hub.
pub const MANAGED_CLUSTER_JOINED: &str = "ManagedClusterJoined";
/// Condition: the cluster is available (True), unavailable (False) or unreachable (Unknown).
pub const MANAGED_CLUSTER_CONDITION_AVAILABLE: &str = "ManagedClusterConditionAvailable";
/// Condition: the cluster's clock is in sync with the hub's.
pub const MANAGED_CLUSTER_CONDITION_CLOCK_SYNCED: &str = "ManagedClusterConditionClockSynced";

/// Taint put by the hub when the Available condition is Unknown.
pub const TAINT_UNREACHABLE: &str = "cluster.open-cluster-management.io/unreachable";
/// Taint put by the hub when the Available condition is False.
pub const TAINT_UNAVAILABLE: &str = "cluster.open-cluster-management.io/unavailable";

/// Label with the cluster's name, set by the hub on every ManagedCluster.
pub const LABEL_CLUSTER_NAME: &str = "open-cluster-management.io/cluster-name";
/// Label assigning a cluster to a ManagedClusterSet (ExclusiveClusterSetLabel selector).
pub const LABEL_CLUSTER_SET: &str = "cluster.open-cluster-management.io/clusterset";
/// The set every cluster belongs to unless labelled otherwise.
pub const DEFAULT_CLUSTER_SET: &str = "default";
/// The set selecting every cluster (LabelSelector with an empty selector).
pub const GLOBAL_CLUSTER_SET: &str = "global";

/// Reserved claim: the cluster's unique id.
pub const CLAIM_ID: &str = "id.k8s.io";
/// Reserved claim: the Kubernetes version.
pub const CLAIM_KUBE_VERSION: &str = "kubeversion.open-cluster-management.io";
/// Reserved claim: the platform (e.g. AWS, BareMetal).
pub const CLAIM_PLATFORM: &str = "platform.open-cluster-management.io";
/// Reserved claim: the product (e.g. K3s, KinD, MicroK8s).
pub const CLAIM_PRODUCT: &str = "product.open-cluster-management.io";

/// Capacity key for the number of nodes the agent counted (OCM's API has no field for it; its
/// add-ons count node-derived things in capacity the same way, e.g. `socket_worker`).
pub const CAPACITY_NODES: &str = "nodes";

/// A cluster managed by the hub.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedCluster {
    /// `cluster.open-cluster-management.io/v1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `ManagedCluster`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Metadata; the name is the cluster name.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// What the hub wants.
    #[serde(default)]
    pub spec: ManagedClusterSpec,
    /// What the hub and agent observe.
    #[serde(default, skip_serializing_if = "ManagedClusterStatus::is_empty")]
    pub status: ManagedClusterStatus,
}
resource!(
    ManagedCluster,
    "cluster.open-cluster-management.io/v1",
    "ManagedCluster",
    [metadata, spec, status]
);

impl ManagedCluster {
    /// A cluster object named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        ManagedCluster {
            metadata: ObjectMeta::named(name),
            ..Default::default()
        }
    }

    /// The cluster name (`metadata.name`).
    pub fn name(&self) -> &str {
        &self.metadata.name
    }
}

/// Desired state of a [`ManagedCluster`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterSpec {
    /// API server endpoints of the managed cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub managed_cluster_client_configs: Vec<ManagedClusterClientConfig>,
    /// Whether the hub accepts the cluster's agent. Always written, as Go does.
    #[serde(default)]
    pub hub_accepts_client: bool,
    /// How often the agent renews its lease; 0 (omitted) means the default of 60.
    #[serde(default, skip_serializing_if = "is_zero_i32")]
    pub lease_duration_seconds: i32,
    /// Taints keeping placements away from the cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<Taint>,
}

/// An API server endpoint of a managed cluster.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterClientConfig {
    /// The URL of the cluster's API server.
    #[serde(default)]
    pub url: String,
    /// Base64 PEM CA bundle.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ca_bundle: String,
}

/// Effect of a [`Taint`] on placements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
pub enum TaintEffect {
    /// No new placement may select the cluster; existing decisions are removed.
    #[default]
    NoSelect,
    /// Placements avoid the cluster unless nothing else fits.
    PreferNoSelect,
    /// No new placement may select the cluster; existing decisions stay.
    NoSelectIfNew,
}

impl TaintEffect {
    /// Every effect, in OCM's order.
    pub const ALL: [TaintEffect; 3] = [
        TaintEffect::NoSelect,
        TaintEffect::PreferNoSelect,
        TaintEffect::NoSelectIfNew,
    ];

    /// The wire name (as in OCM's YAML).
    pub fn as_str(self) -> &'static str {
        match self {
            TaintEffect::NoSelect => "NoSelect",
            TaintEffect::PreferNoSelect => "PreferNoSelect",
            TaintEffect::NoSelectIfNew => "NoSelectIfNew",
        }
    }
}

/// A taint on a [`ManagedCluster`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Taint {
    /// Taint key, e.g. [`TAINT_UNREACHABLE`].
    pub key: String,
    /// Optional value.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub value: String,
    /// What the taint does.
    pub effect: TaintEffect,
    /// When the hub added the taint (tolerationSeconds count from here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_added: Option<Time>,
}

/// Observed state of a [`ManagedCluster`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterStatus {
    /// HubAcceptedManagedCluster, ManagedClusterJoined, ManagedClusterConditionAvailable, ...
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Total resources of the cluster (e.g. `cpu`, `memory`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub capacity: BTreeMap<String, Quantity>,
    /// Resources available for workloads.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub allocatable: BTreeMap<String, Quantity>,
    /// Kubernetes version of the cluster.
    #[serde(default, skip_serializing_if = "ManagedClusterVersion::is_empty")]
    pub version: ManagedClusterVersion,
    /// Claims the agent reports about its cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_claims: Vec<ManagedClusterClaim>,
}

impl ManagedClusterStatus {
    /// Whether nothing has been observed yet.
    pub fn is_empty(&self) -> bool {
        self == &ManagedClusterStatus::default()
    }
}

/// Kubernetes version of a managed cluster.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterVersion {
    /// e.g. `v1.31.2+k3s1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kubernetes: String,
}

impl ManagedClusterVersion {
    /// Whether no version is known.
    pub fn is_empty(&self) -> bool {
        self.kubernetes.is_empty()
    }
}

/// A claim as reported in `ManagedCluster.status.clusterClaims`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterClaim {
    /// Claim name, e.g. [`CLAIM_PLATFORM`].
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Claim value.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub value: String,
}

/// A fact about a cluster, declared on the managed cluster itself
/// (cluster.open-cluster-management.io/v1alpha1, cluster-scoped).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterClaim {
    /// `cluster.open-cluster-management.io/v1alpha1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `ClusterClaim`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Metadata; the name is the claim name.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The claim's value.
    #[serde(default)]
    pub spec: ClusterClaimSpec,
}
resource!(
    ClusterClaim,
    "cluster.open-cluster-management.io/v1alpha1",
    "ClusterClaim",
    [metadata, spec]
);

/// The value of a [`ClusterClaim`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterClaimSpec {
    /// The claimed value.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub value: String,
}

/// Condition on a ManagedClusterSet: no cluster is in the set.
pub const CLUSTER_SET_EMPTY: &str = "ClusterSetEmpty";
/// Condition on a ManagedClusterSetBinding: the set exists and is bound.
pub const CLUSTER_SET_BINDING_BOUND: &str = "Bound";

/// A group of clusters (cluster.open-cluster-management.io/v1beta2, cluster-scoped).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterSet {
    /// `cluster.open-cluster-management.io/v1beta2`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `ManagedClusterSet`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Metadata; the name is the set name.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// How clusters are selected.
    #[serde(default)]
    pub spec: ManagedClusterSetSpec,
    /// Conditions.
    #[serde(default, skip_serializing_if = "ConditionsStatus::is_empty")]
    pub status: ConditionsStatus,
}
resource!(
    ManagedClusterSet,
    "cluster.open-cluster-management.io/v1beta2",
    "ManagedClusterSet",
    [metadata, spec, status]
);

/// Spec of a [`ManagedClusterSet`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterSetSpec {
    /// How clusters are selected.
    #[serde(default)]
    pub cluster_selector: ManagedClusterSelector,
}

/// How a [`ManagedClusterSet`] selects clusters.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterSelector {
    /// ExclusiveClusterSetLabel (default) or LabelSelector; `None` when the document omits it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector_type: Option<SelectorType>,
    /// Used with LabelSelector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
}

/// Selector type of a [`ManagedClusterSelector`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
pub enum SelectorType {
    /// Clusters labelled `cluster.open-cluster-management.io/clusterset=<set name>`.
    #[default]
    ExclusiveClusterSetLabel,
    /// Clusters matching `labelSelector`.
    LabelSelector,
}

/// A status made only of conditions (ManagedClusterSet, ManagedClusterSetBinding).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConditionsStatus {
    /// Conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

impl ConditionsStatus {
    /// Whether there are no conditions.
    pub fn is_empty(&self) -> bool {
        self.conditions.is_empty()
    }
}

/// Makes a [`ManagedClusterSet`] usable by placements in a namespace (v1beta2, namespaced;
/// the binding's name must equal the set's name).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterSetBinding {
    /// `cluster.open-cluster-management.io/v1beta2`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `ManagedClusterSetBinding`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Which set is bound.
    #[serde(default)]
    pub spec: ManagedClusterSetBindingSpec,
    /// Conditions (Bound).
    #[serde(default, skip_serializing_if = "ConditionsStatus::is_empty")]
    pub status: ConditionsStatus,
}
resource!(
    ManagedClusterSetBinding,
    "cluster.open-cluster-management.io/v1beta2",
    "ManagedClusterSetBinding",
    [metadata, spec, status]
);

/// Spec of a [`ManagedClusterSetBinding`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterSetBindingSpec {
    /// Name of the bound set.
    #[serde(default)]
    pub cluster_set: String,
}
