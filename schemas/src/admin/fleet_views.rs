//! Views of cluster sets, placements and ManifestWorkReplicaSets in admin answers, and what
//! `applyObject` and `deleteObject` did.
//!
//! In the JSON Schema these are open objects (see [`super::AdminPayload`]); the Rust types are the
//! contract.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::WriteOutcome;
use super::explanation::Explanation;
use crate::api::placement::Placement;
use crate::api::replicaset::ManifestWorkReplicaSet;

/// What an ApplyObject did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectApplied {
    pub kind: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    pub name: String,
    pub outcome: WriteOutcome,
}

/// A ManagedClusterSet with its members and where it is bound.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSetView {
    pub name: String,
    /// `ExclusiveClusterSetLabel` or `LabelSelector`.
    pub selector_type: String,
    /// Accepted clusters the set selects, sorted.
    pub clusters: Vec<String>,
    /// Namespaces with a ManagedClusterSetBinding to the set.
    pub bound_namespaces: Vec<String>,
    /// The set's status conditions (`ClusterSetEmpty`), as the hub last wrote them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<crate::api::meta::Condition>,
}

/// One decided cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionView {
    pub cluster: String,
    pub group_index: i32,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group_name: String,
    /// The PlacementDecision object holding it.
    pub decision: String,
}

/// A Placement, its decisions and why each cluster was or was not selected.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlacementView {
    pub placement: Placement,
    pub decisions: Vec<DecisionView>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<Explanation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requeue_at: Option<DateTime<Utc>>,
}

/// One kept revision of a ManifestWorkReplicaSet's template.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RevisionRow {
    /// Its number (grows with every new or restored revision).
    pub revision: i64,
    /// Its hash (the `controller-hash` label of works carrying it).
    pub hash: String,
    /// When the hub first rolled it out (or restored it).
    pub created: DateTime<Utc>,
    /// Its manifests, `kind name` each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub manifests: Vec<String>,
}

/// A ManifestWorkReplicaSet with its status and rollout table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaSetView {
    pub set: ManifestWorkReplicaSet,
    pub clusters: Vec<RolloutRow>,
    #[serde(default)]
    pub deleting: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requeue_at: Option<DateTime<Utc>>,
    /// The revisions the hub keeps, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub revisions: Vec<RevisionRow>,
}

/// The object a DeleteObject removed (or started removing).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectDeleted {
    pub kind: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    pub name: String,
}

/// One selected cluster of a ManifestWorkReplicaSet, as `ocm-edge rollout status` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RolloutRow {
    pub cluster: String,
    pub placement: String,
    pub group_index: i32,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group_name: String,
    /// ToApply, Progressing, Succeeded, Failed, TimeOut, or Held (the cluster stores the
    /// template and waits for its maintenance window or the end of a hold on site).
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recheck_at: Option<DateTime<Utc>>,
    pub current_template: bool,
    pub reachable: bool,
    /// Why the set's template cannot be rendered for this cluster (`spec.perCluster`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// An add-on (ClusterManagementAddOn) with where it is installed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AddOnView {
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub display_name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// `Manual` or `Placements`.
    pub install_strategy: String,
    /// With `Placements`: `namespace/name` of each placement.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placements: Vec<String>,
    /// Its default configs, `resource namespace/name`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub default_configs: Vec<String>,
    /// On how many clusters it is enabled.
    #[serde(default)]
    pub enabled: u32,
    /// On how many of them it is available.
    #[serde(default)]
    pub available: u32,
    /// With `Placements`: each placement's rollout, `namespace/name: Reason (message)`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub progressions: Vec<String>,
    /// One row per cluster it is enabled on, sorted by cluster (a page of them in `getAddOn`,
    /// none in `listAddOns`).
    #[serde(default)]
    pub clusters: Vec<ClusterAddOnRow>,
}

/// An add-on on one cluster (its ManagedClusterAddOn).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterAddOnRow {
    pub cluster: String,
    /// `manual` or `placement`.
    pub installed_by: String,
    /// Where its agent is installed on the cluster.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Its configs as applied, `resource name@hash` (first 8 hex digits).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub configs: Vec<String>,
    /// Its conditions: Configured, ManifestApplied, Available, ...
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<crate::api::meta::Condition>,
}
