//! What admin answers show about clusters, works and the hub itself.
//!
//! [`ClusterState`] and [`WriteOutcome`] are also what the hub's core keeps and returns: the admin
//! API shows them as they are.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::api::cluster::{ManagedClusterClaim, Taint};
use crate::api::meta::{Condition, Quantity, Time};
use crate::api::work::{ManifestCondition, ManifestWorkSpec};

/// Registration state of a cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub enum ClusterState {
    /// Asked to join; waiting for an operator.
    Pending,
    /// Accepted: its events are processed and works are sent to it.
    Accepted,
    /// Denied: its events are ignored.
    Denied,
}

impl std::fmt::Display for ClusterState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ClusterState::Pending => "Pending",
            ClusterState::Accepted => "Accepted",
            ClusterState::Denied => "Denied",
        })
    }
}

/// A cluster's TLS client certificate, as `cluster get` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterCertificateView {
    /// Serial number, hex (what a revocation list names).
    pub serial: String,
    /// When it ends (the agent asks for the next one after two thirds of its life).
    pub not_after: Time,
    /// It ended longer ago than the hub's grace: the agent's asking no longer renews it, an
    /// operator's `cluster accept` does.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub waits_for_operator: bool,
}

/// What the CLI shows about one cluster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterView {
    /// Cluster name.
    pub name: String,
    /// Registration state.
    pub state: ClusterState,
    /// The `ManagedClusterConditionAvailable` condition (absent before the first lease).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available: Option<Condition>,
    /// The labels placements select the cluster by: those its agent asked to join with, as
    /// accepted (an accepted cluster's agent cannot change them).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// The labels the agent sent last, when they differ from `labels` (shown, never used for
    /// selection).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub reported_labels: BTreeMap<String, String>,
    /// Claims the agent reports (product, platform, kube version, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<ManagedClusterClaim>,
    /// When the hub last received a lease renewal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_lease: Option<Time>,
    /// The agent's lease period in seconds.
    #[serde(default)]
    pub lease_duration_seconds: i32,
    /// Id of the agent's signing key ([`crate::wire::signature::key_id`] of its public key),
    /// sent with its join request: compare it with the one the agent logs at start before
    /// `cluster accept`, which binds it (the hub then takes only events that key signed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_key: Option<String>,
    /// The TLS client certificate the hub issued for the bound agent key (for brokers that take
    /// certificates as identities); absent for a cluster without a key or not accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate: Option<ClusterCertificateView>,
    /// Kubernetes version the agent reports, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes_version: Option<String>,
    /// Every condition of the ManagedCluster (HubAcceptedManagedCluster, ManagedClusterJoined, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Taints on the cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<Taint>,
    /// Maintenance windows set on the hub (`SCHEDULE;DURATION;TIME_ZONE`): the agent applies
    /// new versions only when one is open (and one of its own, if it has any).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub maintenance_windows: Vec<String>,
    /// How many works the hub holds for the cluster.
    #[serde(default)]
    pub works: u32,
    /// What the cluster has (`cpu`, `memory`, `pods`, `nodes`), as its agent reports.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub capacity: BTreeMap<String, Quantity>,
    /// What of it workloads may use, as its agent reports.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub allocatable: BTreeMap<String, Quantity>,
    /// When its removal started (`ocm-edge cluster remove`): the hub forgets it once its agent
    /// confirmed every work removed (`works` counts those left).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removing: Option<Time>,
    /// Set only in the answer to a removal: the hub forgot the cluster.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub removed: bool,
}

/// Identity of one manifest of a work's spec, for listings before any status arrives.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestSummary {
    /// Index in the spec.
    pub ordinal: i32,
    /// `apiVersion` of the manifest.
    pub api_version: String,
    /// `kind` of the manifest.
    pub kind: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace` (empty for cluster-scoped objects).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
}

/// What the CLI shows about one work on one cluster.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkView {
    /// Cluster (the work's namespace).
    pub cluster: String,
    /// Work name.
    pub name: String,
    /// The CloudEvents `resourceid` (UUID v5, see CONTRACTS "Work identity").
    pub resource_id: String,
    /// The CloudEvents `resourceversion`: 1 at creation, +1 per spec change.
    pub version: i64,
    /// Deletion requested; waiting for the agent's `Deleted` status.
    #[serde(default)]
    pub deleting: bool,
    /// When the work was created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<Time>,
    /// Labels of the work.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// The manifests of the spec, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub manifests: Vec<ManifestSummary>,
    /// Work conditions from the agent's latest status (Applied, Available, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Per-manifest status from the agent (conditions and status feedback).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_status: Vec<ManifestCondition>,
    /// When the hub accepted the latest status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_updated: Option<Time>,
    /// The `version` the status (`conditions`, `resourceStatus`) reports on: below `version`
    /// while the agent has not confirmed the current spec; absent before its first status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_version: Option<i64>,
    /// The full spec; set by GetWork only (lists stay small).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<ManifestWorkSpec>,
}

/// One word for a work's state, as `ocm-edge work list` shows it and the hub's metrics count
/// works (`ocm_edge_works{phase}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WorkPhase {
    /// No status yet.
    Pending,
    /// A status without Applied, Available, Degraded or Held True.
    Progressing,
    /// Applied True.
    Applied,
    /// Available True.
    Available,
    /// Degraded True.
    Degraded,
    /// The cluster stores the new version and waits for its maintenance window or the end of a
    /// hold (Held True).
    Held,
    /// The status is for an older version than the work's.
    Updating,
    /// Deletion requested; waiting for the agent.
    Deleting,
}

impl WorkPhase {
    /// Every phase.
    pub const ALL: [WorkPhase; 8] = [
        WorkPhase::Pending,
        WorkPhase::Progressing,
        WorkPhase::Applied,
        WorkPhase::Available,
        WorkPhase::Degraded,
        WorkPhase::Held,
        WorkPhase::Updating,
        WorkPhase::Deleting,
    ];

    /// The phase of a work at `version` (being deleted or not) whose latest status, on
    /// `status_version`, has `conditions`.
    pub fn of(
        deleting: bool,
        version: i64,
        status_version: Option<i64>,
        conditions: &[Condition],
    ) -> Self {
        let is_true = |t: &str| crate::api::meta::is_condition_true(conditions, t);
        if deleting {
            WorkPhase::Deleting
        } else if status_version.is_some_and(|v| v < version) {
            WorkPhase::Updating
        } else if is_true(crate::api::work::WORK_HELD) {
            WorkPhase::Held
        } else if is_true(crate::api::work::WORK_DEGRADED) {
            WorkPhase::Degraded
        } else if is_true(crate::api::work::WORK_AVAILABLE) {
            WorkPhase::Available
        } else if is_true(crate::api::work::WORK_APPLIED) {
            WorkPhase::Applied
        } else if conditions.is_empty() {
            WorkPhase::Pending
        } else {
            WorkPhase::Progressing
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            WorkPhase::Pending => "Pending",
            WorkPhase::Progressing => "Progressing",
            WorkPhase::Applied => "Applied",
            WorkPhase::Available => "Available",
            WorkPhase::Degraded => "Degraded",
            WorkPhase::Held => "Held",
            WorkPhase::Updating => "Updating",
            WorkPhase::Deleting => "Deleting",
        }
    }
}

impl WorkView {
    /// The work's [`WorkPhase`].
    pub fn phase(&self) -> WorkPhase {
        WorkPhase::of(
            self.deleting,
            self.version,
            self.status_version,
            &self.conditions,
        )
    }
}

/// What a CreateWork or ApplyManifestWork did to one work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkWritten {
    /// Created, updated or left as it was.
    pub outcome: WriteOutcome,
    /// The work after the write: identity, version and labels only (no manifests, no status: a
    /// write to a whole fleet fits in one answer; `getWork` shows the rest).
    pub work: WorkView,
}

/// What a write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub enum WriteOutcome {
    /// The work did not exist; version 1.
    Created,
    /// The spec changed; version bumped and the new spec sent.
    Updated,
    /// The spec was identical; nothing sent.
    Unchanged,
}

impl std::fmt::Display for WriteOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            WriteOutcome::Created => "created",
            WriteOutcome::Updated => "updated",
            WriteOutcome::Unchanged => "unchanged",
        })
    }
}

/// Hub counters (the admin request `stats`; the CLI has no command for it yet).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HubStats {
    /// Clusters by state.
    pub clusters_pending: u64,
    /// Clusters by state.
    pub clusters_accepted: u64,
    /// Clusters by state.
    pub clusters_denied: u64,
    /// Accepted clusters whose Available condition is True.
    pub clusters_available: u64,
    /// Works stored (including those being deleted).
    pub works: u64,
    /// Other counters by name (events received, ignored from unaccepted clusters, malformed,
    /// stale statuses dropped, ...); names are the hub's and may grow.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub counters: BTreeMap<String, u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    // The hub stores ClusterState in its cluster records: the names must not change.
    #[test]
    fn states_and_outcomes_are_written_as_their_variant_names() {
        let states = [
            ClusterState::Pending,
            ClusterState::Accepted,
            ClusterState::Denied,
        ];
        for s in states {
            let json = serde_json::to_string(&s).unwrap();
            assert_eq!(json, format!("\"{s}\""));
            assert_eq!(serde_json::from_str::<ClusterState>(&json).unwrap(), s);
        }
        assert_eq!(
            serde_json::to_string(&WriteOutcome::Unchanged).unwrap(),
            r#""Unchanged""#
        );
        assert_eq!(WriteOutcome::Unchanged.to_string(), "unchanged");
    }
}
