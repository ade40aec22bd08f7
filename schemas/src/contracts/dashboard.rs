//! Payloads of the retained dashboard topics (`ocm-edge/<source>/dashboard/...`): small, flat views
//! for MQTT dashboards (MQTT Explorer, Node-RED, Grafana's MQTT source), so a panel can read
//! `works.applied` or `conditions.Available` without knowing OCM's condition lists.
//!
//! These types are the contract; the hub's `dashboard` module builds the same JSON, and the hub's
//! `contracts_dashboard` test checks its output against the schemas generated from these types.
//! Fields may be added; none is removed or renamed without a new topic.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::meta::{ConditionStatus, Time};

/// `ocm-edge/<source>/dashboard/summary`: fleet counters.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct DashboardSummary {
    pub clusters: ClusterCounts,
    pub works: WorkCounts,
}

/// Clusters by registration state; `available` counts accepted clusters whose
/// ManagedClusterConditionAvailable is True.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct ClusterCounts {
    pub pending: u64,
    pub accepted: u64,
    pub denied: u64,
    pub available: u64,
}

/// Works stored by the hub; `applied` have an Applied=True status, `deleting` wait for the agent.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct WorkCounts {
    pub total: u64,
    pub applied: u64,
    pub deleting: u64,
}

/// Registration state of a cluster on the hub.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum DashboardClusterState {
    Pending,
    Accepted,
    Denied,
}

/// `ocm-edge/<source>/dashboard/clusters/<cluster>`: one cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DashboardCluster {
    pub name: String,
    pub state: DashboardClusterState,
    /// Status of ManagedClusterConditionAvailable; null before the first lease.
    pub available: Option<ConditionStatus>,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// When the hub last received a lease renewal; null before the first.
    pub last_lease: Option<Time>,
    /// Keys of the cluster's taints (`cluster.open-cluster-management.io/unreachable`, ...).
    #[serde(default)]
    pub taints: Vec<String>,
    /// How many works the hub holds for the cluster.
    pub works: u64,
}

/// `ocm-edge/<source>/dashboard/works/<cluster>/<work>`: one work on one cluster. An empty retained
/// payload replaces it once the hub forgets the work (which clears the topic on the broker).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DashboardWork {
    pub cluster: String,
    pub name: String,
    /// The CloudEvents resourceversion of the spec.
    pub version: i64,
    /// Deletion requested, waiting for the agent's Deleted status.
    pub deleting: bool,
    /// Work conditions of the latest status by type (`{"Applied":"True","Available":"True"}`).
    #[serde(default)]
    pub conditions: BTreeMap<String, ConditionStatus>,
    /// When the hub accepted the latest status; null before the first.
    pub status_updated: Option<Time>,
}

/// `ocm-edge/<source>/dashboard/addons/<addon>`: one add-on over the fleet; an empty retained
/// payload once the add-on is deleted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DashboardAddOn {
    pub name: String,
    /// Its install strategy: `Manual` or `Placements`.
    pub install: String,
    /// Clusters it is enabled on.
    pub enabled: u64,
    /// Of those, where its Available condition is True.
    pub available: u64,
    /// Of those, where a new config is rolling out (Progressing True).
    pub progressing: u64,
    /// Of those, where its agent's own MQTT identity is bound (RegistrationApplied True).
    pub registered: u64,
}

/// `ocm-edge/<source>/dashboard/addons/<addon>/clusters/<cluster>`: one add-on on one cluster;
/// an empty retained payload once it is removed from the cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DashboardClusterAddOn {
    pub addon: String,
    pub cluster: String,
    /// Where its agent is installed on the cluster.
    pub namespace: String,
    /// Its conditions by type (`{"Available":"True","ManifestApplied":"True",...}`).
    #[serde(default)]
    pub conditions: BTreeMap<String, ConditionStatus>,
    /// Being removed (its pre-delete hooks run).
    pub deleting: bool,
}
