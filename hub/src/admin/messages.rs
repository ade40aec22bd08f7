//! Admin API request and response messages (the contract between the `ocm-edge` CLI and the hub).
//!
//! # Transport
//! MQTT 5 request/response through the broker: the CLI publishes one [`AdminRequest`] as compact
//! JSON (QoS 1, not retained) on `ocm-edge/<source>/admin/requests`, with the MQTT 5 *Response Topic*
//! `ocm-edge/<source>/admin/responses/<client-id>` and *Correlation Data* set. The hub answers each
//! request with exactly one [`AdminResponse`] on that response topic, copying the correlation data.
//! When no answer comes within half a second the client sends the same request again (same
//! correlation data, backing off to every 4 s) until its timeout: a hub that is (re)starting has
//! not subscribed yet and the broker keeps nothing for it. Every command is therefore safe to
//! receive twice (reads, accept/deny, overwrite and delete are idempotent; a repeated create
//! fails with AlreadyExists), and the client takes the first answer and drops the others.
//! A request the hub cannot parse is answered with [`AdminErrorKind::Invalid`] (when it carries a
//! response topic); a request without a response topic is logged, counted and dropped.
//!
//! # JSON shapes
//! ```json
//! {"command":"listClusters"}
//! {"command":"acceptCluster","name":"edge-1"}
//! {"command":"createWork","name":"web","clusters":["edge-1"],"manifests":[{...}],"overwrite":false}
//! {"command":"applyManifestWork","work":{"apiVersion":"work.open-cluster-management.io/v1",...}}
//! {"command":"getWork","cluster":"edge-1","name":"web"}
//!
//! {"ok":{"clusters":[{"name":"edge-1","state":"Pending",...}]}}
//! {"error":{"kind":"NotFound","message":"cluster \"edge-9\" is not known to the hub"}}
//! ```
//!
//! # Semantics the server guarantees
//! - A request that fails changes nothing (a `createWork` for clusters `a,b` where `b` is unknown
//!   stores no work on `a` either).
//! - Error messages are shown to the operator as they are: say what is wrong and how to fix it.

use std::collections::BTreeMap;

use ocm_edge_schemas::api::cluster::{ManagedClusterClaim, Taint};
use ocm_edge_schemas::api::meta::{Condition, Time};
use ocm_edge_schemas::api::work::{
    DeleteOption, ManifestCondition, ManifestConfigOption, ManifestWork, ManifestWorkSpec,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use super::fleet::{
    ClusterSetView, DecisionView, ObjectApplied, ObjectDeleted, PlacementView, ReplicaSetView,
};

/// Largest admin payload (request or response) either side must accept: a work may carry
/// 500 KiB of manifests, and JSON escaping plus views add to that.
pub const MAX_ADMIN_PAYLOAD_BYTES: usize = 2 * 1024 * 1024;

/// MQTT 5 user property naming the admin API version on requests and responses.
pub const ADMIN_API_VERSION_PROPERTY: &str = "ocm-edge-admin";
/// Current admin API version (value of [`ADMIN_API_VERSION_PROPERTY`]).
pub const ADMIN_API_VERSION: &str = "v1";

/// One command from the CLI to the hub.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(
    tag = "command",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum AdminRequest {
    /// Every cluster the hub knows (pending, accepted and denied). Answer: [`AdminPayload::Clusters`].
    ListClusters,
    /// One cluster. Answer: [`AdminPayload::Cluster`]; [`AdminErrorKind::NotFound`] when unknown.
    GetCluster {
        /// Cluster name.
        name: String,
    },
    /// Accepts a cluster that asked to join (idempotent; also re-accepts a denied cluster).
    /// Answer: [`AdminPayload::Cluster`] with the new state; NotFound when it never asked to join.
    AcceptCluster {
        /// Cluster name.
        name: String,
    },
    /// Denies a cluster (idempotent; also revokes an accepted one: its works stay stored but its
    /// events are ignored). Answer: [`AdminPayload::Cluster`]; NotFound when unknown.
    DenyCluster {
        /// Cluster name.
        name: String,
    },
    /// Creates the work `name` on every cluster in `clusters`, with the same manifests.
    ///
    /// All or nothing: every cluster must be known and accepted (NotFound / NotAccepted), the work
    /// must pass `ocm_edge_schemas::validate` (Invalid), and without `overwrite` no cluster may
    /// already hold a work of that name (AlreadyExists). With `overwrite` an existing work's spec
    /// is replaced (resourceversion +1 when it changed). Answer: [`AdminPayload::Written`], one
    /// entry per cluster in the order given.
    CreateWork {
        /// Work name (a valid Kubernetes name, also valid in MQTT topics).
        name: String,
        /// Target clusters; at least one, no duplicates.
        clusters: Vec<String>,
        /// Kubernetes objects as JSON, in apply order.
        manifests: Vec<Value>,
        /// How resources are deleted when the work is deleted (Foreground when absent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        delete_option: Option<DeleteOption>,
        /// Per-resource options (update strategy, feedback rules, ...).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        manifest_configs: Vec<ManifestConfigOption>,
        /// Replace an existing work of that name instead of failing with AlreadyExists.
        #[serde(default)]
        overwrite: bool,
    },
    /// Creates or updates one work from an OCM ManifestWork as written for OCM
    /// (`apiVersion: work.open-cluster-management.io/v1`, `kind: ManifestWork`, `metadata.namespace`
    /// = cluster). Like `kubectl apply`: creates when absent, replaces the spec when present.
    /// The hub keeps name, namespace, labels and annotations of `metadata` and ignores the status.
    /// Answer: [`AdminPayload::Written`] with one entry.
    ApplyManifestWork {
        /// The work.
        work: Box<ManifestWork>,
    },
    /// Works, all of them or those of one cluster. Answer: [`AdminPayload::Works`] sorted by
    /// (cluster, name); views without `spec`. NotFound when `cluster` is given and unknown.
    ListWorks {
        /// Only this cluster's works.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cluster: Option<String>,
    },
    /// One work with its spec. Answer: [`AdminPayload::Work`]; NotFound when absent.
    GetWork {
        /// Cluster (the work's namespace).
        cluster: String,
        /// Work name.
        name: String,
    },
    /// Starts deleting a work: the hub marks it deleting, sends the delete to the agent and
    /// forgets the work once the agent reports `Deleted`. Idempotent while deleting.
    /// Answer: [`AdminPayload::Work`] (with `deleting: true`); NotFound when absent.
    DeleteWork {
        /// Cluster (the work's namespace).
        cluster: String,
        /// Work name.
        name: String,
    },
    /// Hub counters. Answer: [`AdminPayload::Stats`].
    Stats,
    /// Creates or updates (like `kubectl apply`) a ManagedClusterSet, ManagedClusterSetBinding,
    /// Placement, AddOnPlacementScore or ManifestWorkReplicaSet written as for OCM; namespaced
    /// kinds without a namespace go to `default`. The hub keeps the status it owns.
    /// Answer: [`AdminPayload::Applied`]; Invalid for another kind or a bad name.
    ApplyObject {
        /// The object (JSON of OCM's YAML).
        object: Value,
    },
    /// Every cluster set with its members. Answer: [`AdminPayload::ClusterSets`].
    ListClusterSets,
    /// One cluster set. Answer: [`AdminPayload::ClusterSet`]; NotFound.
    GetClusterSet {
        /// Set name.
        name: String,
    },
    /// Placements (all namespaces when `namespace` is absent). Answer: [`AdminPayload::Placements`].
    ListPlacements {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        namespace: Option<String>,
    },
    /// One placement with its decisions and explanation. Answer: [`AdminPayload::Placement`].
    GetPlacement {
        /// `default` when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        namespace: Option<String>,
        name: String,
    },
    /// ManifestWorkReplicaSets. Answer: [`AdminPayload::ReplicaSets`].
    ListReplicaSets {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        namespace: Option<String>,
    },
    /// One ManifestWorkReplicaSet with its rollout table. Answer: [`AdminPayload::ReplicaSet`].
    GetReplicaSet {
        /// `default` when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        namespace: Option<String>,
        name: String,
    },
    /// Deletes a cluster set, binding, placement (with its decisions), score or replica set (its
    /// works are deleted first). Answer: [`AdminPayload::Deleted`]; NotFound.
    DeleteObject {
        /// Kind, as OCM names it or short (`placement`, `clusterset`, `manifestworkreplicaset`).
        kind: String,
        /// `default` for namespaced kinds when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        namespace: Option<String>,
        name: String,
    },
}

impl AdminRequest {
    /// The command name as it appears in JSON (`listClusters`, ...), for logs and errors.
    pub fn command(&self) -> &'static str {
        match self {
            AdminRequest::ListClusters => "listClusters",
            AdminRequest::GetCluster { .. } => "getCluster",
            AdminRequest::AcceptCluster { .. } => "acceptCluster",
            AdminRequest::DenyCluster { .. } => "denyCluster",
            AdminRequest::CreateWork { .. } => "createWork",
            AdminRequest::ApplyManifestWork { .. } => "applyManifestWork",
            AdminRequest::ListWorks { .. } => "listWorks",
            AdminRequest::GetWork { .. } => "getWork",
            AdminRequest::DeleteWork { .. } => "deleteWork",
            AdminRequest::Stats => "stats",
            AdminRequest::ApplyObject { .. } => "applyObject",
            AdminRequest::ListClusterSets => "listClusterSets",
            AdminRequest::GetClusterSet { .. } => "getClusterSet",
            AdminRequest::ListPlacements { .. } => "listPlacements",
            AdminRequest::GetPlacement { .. } => "getPlacement",
            AdminRequest::ListReplicaSets { .. } => "listReplicaSets",
            AdminRequest::GetReplicaSet { .. } => "getReplicaSet",
            AdminRequest::DeleteObject { .. } => "deleteObject",
        }
    }
}

/// The hub's answer to one [`AdminRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum AdminResponse {
    /// The command succeeded.
    Ok(AdminPayload),
    /// The command failed and changed nothing.
    Error {
        /// What kind of failure (lets the CLI pick an exit code and a hint).
        kind: AdminErrorKind,
        /// What went wrong and how to fix it, for a human.
        message: String,
    },
}

impl AdminResponse {
    /// An error response.
    pub fn error(kind: AdminErrorKind, message: impl Into<String>) -> Self {
        AdminResponse::Error {
            kind,
            message: message.into(),
        }
    }
}

/// Why a command failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub enum AdminErrorKind {
    /// The cluster or work does not exist.
    NotFound,
    /// A work of that name already exists (use `overwrite`).
    AlreadyExists,
    /// The request is malformed or the work fails validation.
    Invalid,
    /// The cluster exists but is not accepted (pending or denied).
    NotAccepted,
    /// The hub failed (e.g. its store); the request may be retried.
    Internal,
    /// A kind this client does not know (sent by a newer hub).
    #[serde(other)]
    Unknown,
}

impl std::fmt::Display for AdminErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = match self {
            AdminErrorKind::NotFound => "NotFound",
            AdminErrorKind::AlreadyExists => "AlreadyExists",
            AdminErrorKind::Invalid => "Invalid",
            AdminErrorKind::NotAccepted => "NotAccepted",
            AdminErrorKind::Internal => "Internal",
            AdminErrorKind::Unknown => "Unknown",
        };
        f.write_str(s)
    }
}

/// The successful result of a command; which variant answers which command is documented on
/// [`AdminRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum AdminPayload {
    /// Answer to ListClusters, sorted by name.
    Clusters(Vec<ClusterView>),
    /// Answer to GetCluster, AcceptCluster, DenyCluster.
    Cluster(Box<ClusterView>),
    /// Answer to CreateWork and ApplyManifestWork.
    Written(Vec<WorkWritten>),
    /// Answer to ListWorks.
    Works(Vec<WorkView>),
    /// Answer to GetWork and DeleteWork.
    Work(Box<WorkView>),
    /// Answer to Stats.
    Stats(HubStats),
    /// Answer to ApplyObject.
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    Applied(ObjectApplied),
    /// Answer to ListClusterSets.
    #[schemars(with = "Vec<serde_json::Map<String, serde_json::Value>>")]
    ClusterSets(Vec<ClusterSetView>),
    /// Answer to GetClusterSet.
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    ClusterSet(Box<ClusterSetView>),
    /// Answer to ListPlacements.
    #[schemars(with = "Vec<serde_json::Map<String, serde_json::Value>>")]
    Placements(Vec<PlacementView>),
    /// Answer to GetPlacement.
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    Placement(Box<PlacementView>),
    /// Answer to ListReplicaSets.
    #[schemars(with = "Vec<serde_json::Map<String, serde_json::Value>>")]
    ReplicaSets(Vec<ReplicaSetView>),
    /// Answer to GetReplicaSet.
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    ReplicaSet(Box<ReplicaSetView>),
    /// Answer to DeleteObject.
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    Deleted(ObjectDeleted),
}

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
    /// Labels the agent asked to join with.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Claims the agent reports (product, platform, kube version, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<ManagedClusterClaim>,
    /// When the hub last received a lease renewal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_lease: Option<Time>,
    /// The agent's lease period in seconds.
    #[serde(default)]
    pub lease_duration_seconds: i32,
    /// Kubernetes version the agent reports, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes_version: Option<String>,
    /// Every condition of the ManagedCluster (HubAcceptedManagedCluster, ManagedClusterJoined, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Taints on the cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<Taint>,
    /// How many works the hub holds for the cluster.
    #[serde(default)]
    pub works: u32,
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// The full spec; set by GetWork only (lists stay small).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<ManifestWorkSpec>,
}

/// What a CreateWork or ApplyManifestWork did to one work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkWritten {
    /// Created, updated or left as it was.
    pub outcome: WriteOutcome,
    /// The work after the write.
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

/// Hub counters for `ocm-edge stats` and tests.
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
    use serde_json::json;

    #[test]
    fn requests_are_tagged_by_command_with_camel_case_fields() {
        let req = AdminRequest::CreateWork {
            name: "web".into(),
            clusters: vec!["edge-1".into()],
            manifests: vec![
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"}}),
            ],
            delete_option: None,
            manifest_configs: vec![],
            overwrite: true,
        };
        let v = serde_json::to_value(&req).unwrap();
        assert_eq!(v["command"], "createWork");
        assert_eq!(v["overwrite"], true);
        assert!(v.get("deleteOption").is_none());
        let back: AdminRequest = serde_json::from_value(v).unwrap();
        assert_eq!(back, req);

        let list: AdminRequest = serde_json::from_str(r#"{"command":"listWorks"}"#).unwrap();
        assert_eq!(list, AdminRequest::ListWorks { cluster: None });
        let get: AdminRequest =
            serde_json::from_str(r#"{"command":"getWork","cluster":"c","name":"w"}"#).unwrap();
        assert_eq!(get.command(), "getWork");
    }

    #[test]
    fn an_unknown_command_does_not_parse() {
        assert!(serde_json::from_str::<AdminRequest>(r#"{"command":"dropTables"}"#).is_err());
    }

    #[test]
    fn responses_are_ok_or_error_objects() {
        let ok = AdminResponse::Ok(AdminPayload::Clusters(vec![]));
        assert_eq!(
            serde_json::to_string(&ok).unwrap(),
            r#"{"ok":{"clusters":[]}}"#
        );
        let err = AdminResponse::error(AdminErrorKind::NotFound, "cluster \"x\" is not known");
        let text = serde_json::to_string(&err).unwrap();
        assert_eq!(
            text,
            r#"{"error":{"kind":"NotFound","message":"cluster \"x\" is not known"}}"#
        );
        assert_eq!(serde_json::from_str::<AdminResponse>(&text).unwrap(), err);
    }

    #[test]
    fn an_error_kind_from_a_newer_hub_reads_as_unknown() {
        let r: AdminResponse =
            serde_json::from_str(r#"{"error":{"kind":"Throttled","message":"m"}}"#).unwrap();
        assert_eq!(r, AdminResponse::error(AdminErrorKind::Unknown, "m"));
    }
}
