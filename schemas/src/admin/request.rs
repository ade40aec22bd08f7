//! [`AdminRequest`]: one command from a client to the hub, tagged by `command`.

use serde::de::Error as _;
use serde::ser::SerializeMap as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use std::collections::BTreeMap;

#[cfg(doc)]
use crate::admin::{AdminErrorKind, AdminPayload};
use crate::api::work::{DeleteOption, ManifestConfigOption, ManifestWork};

/// One command from the CLI to the hub.
///
/// A hub answers a command it does not know (sent by a newer client) with the error kind
/// `Unsupported`.
//
// `Serialize` and `Deserialize` are written by hand around the derived ones (`remote = "Self"`
// turns the derives into inherent functions) so that a command this build does not know decodes
// as `AdminRequest::Unknown` with its name instead of failing: a newer CLI talking to an older
// hub gets an answer saying what to upgrade, not "cannot read this request".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(
    remote = "Self",
    tag = "command",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
// `remote = "Self"` would otherwise name the schema "Self".
#[schemars(rename = "AdminRequest")]
pub enum AdminRequest {
    /// The clusters the hub knows (pending, accepted and denied), sorted by name. Answer:
    /// [`AdminPayload::Clusters`]. Paged with `after` and `limit`: a page shorter than `limit` is
    /// the last. An answer larger than the broker carries is refused with
    /// [`AdminErrorKind::TooLarge`]: ask again with a smaller `limit`.
    ListClusters {
        /// Only clusters whose name sorts after this one (the last name of the previous page).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after: Option<String>,
        /// At most this many clusters (absent: all).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u32>,
    },
    /// One cluster. Answer: [`AdminPayload::Cluster`]; [`AdminErrorKind::NotFound`] when unknown.
    GetCluster {
        /// Cluster name.
        name: String,
    },
    /// Accepts a cluster that asked to join (idempotent; also re-accepts a denied cluster), with
    /// the labels its agent sent but for the set label (a cluster never chooses its set), edited
    /// by the operator: `dropAgentLabels` starts from none, then `labels` are set and
    /// `removeLabels` removed. A cluster accepted into no set goes to the `default` set. Answer:
    /// [`AdminPayload::Cluster`] with the new state; NotFound when it never asked to join,
    /// Invalid for a label Kubernetes would refuse (nothing changes then).
    AcceptCluster {
        /// Cluster name.
        name: String,
        /// Labels to set (`cluster.open-cluster-management.io/clusterset` puts it in a set).
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        labels: BTreeMap<String, String>,
        /// Label keys to remove.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        remove_labels: Vec<String>,
        /// Take none of the labels the agent sent.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        drop_agent_labels: bool,
    },
    /// Denies a cluster (idempotent; also revokes an accepted one: its works stay stored but its
    /// events are ignored). Answer: [`AdminPayload::Cluster`]; NotFound when unknown.
    DenyCluster {
        /// Cluster name.
        name: String,
    },
    /// Removes a cluster from the hub (OCM's ManagedCluster deletion): the hub asks its agent to
    /// remove every work it applied (each per its `deleteOption`), and once the agent confirmed
    /// them all it revokes the cluster's key and certificate, drops its broker session and
    /// forgets its record, works and statuses. A cluster that is not accepted, or holds no work,
    /// is forgotten at once; `force` forgets an accepted one without waiting for its agent (what
    /// the agent applied stays on the cluster). A removed cluster's agent must join again (it
    /// is then Pending). Asked again while it is being removed, the deletes are sent again.
    /// Answer: [`AdminPayload::Cluster`], with `removing` set while the agent removes its works
    /// and `removed` once the hub forgot it; NotFound when the hub does not know it.
    RemoveCluster {
        /// Cluster name.
        name: String,
        /// Forget the cluster now, without waiting for its agent.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        force: bool,
    },
    /// Sets and removes labels of a known cluster: the labels placements and cluster sets select
    /// it by (the `cluster.open-cluster-management.io/clusterset` label is its set). An agent
    /// cannot change an accepted cluster's labels; this command is how the hub does. Removal
    /// comes after setting. Answer: [`AdminPayload::Cluster`]; NotFound when unknown, Invalid
    /// for a label Kubernetes would refuse (nothing changes then).
    LabelCluster {
        /// Cluster name.
        name: String,
        /// Labels to set (added or overwritten).
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        set: BTreeMap<String, String>,
        /// Label keys to remove.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        remove: Vec<String>,
    },
    /// Puts taints on a known cluster (one with the same key and effect is replaced; the hub
    /// stamps `timeAdded`) and removes the taints of the keys in `remove`. The availability
    /// taints (`unreachable`, `unavailable`) are the hub's own and refused. Answer:
    /// [`AdminPayload::Cluster`]; NotFound when unknown, Invalid otherwise (nothing changes then).
    TaintCluster {
        /// Cluster name.
        name: String,
        /// Taints to put on the cluster (`timeAdded` is ignored).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        add: Vec<crate::api::cluster::Taint>,
        /// Taint keys to remove.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        remove: Vec<String>,
    },
    /// Sets the maintenance windows of a known, accepted cluster on the hub (replacing those set
    /// before; none: updates at any time, as far as the hub is concerned). Each is
    /// `SCHEDULE;DURATION;TIME_ZONE` ([`crate::maintenance`]); the agent gets them with the
    /// hub's view of the cluster and applies new versions only when one of them (and one of its
    /// own `--maintenance-window`s, if it has any) is open. Answer: [`AdminPayload::Cluster`];
    /// NotFound when unknown, Invalid for a window that cannot be read (nothing changes then).
    SetMaintenanceWindows {
        /// Cluster name.
        name: String,
        /// The windows, e.g. `0 22 * * 1-5;6h;Europe/Berlin`.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        windows: Vec<String>,
    },
    /// Registers and accepts a cluster whose agent never asks to join (OCM's or maestro's own work
    /// agent): accepted at once, with no agent key, so its events are not signed. Answer:
    /// [`AdminPayload::Cluster`]; AlreadyExists when the hub knows a cluster of that name (accept
    /// or deny that one instead), Invalid for a name that can be no cluster.
    AddCluster {
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
    CreateWork(CreateWork),
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
    /// (cluster, name); views without `spec`. NotFound when `cluster` is given and unknown. Paged
    /// like [`AdminRequest::ListClusters`].
    ListWorks {
        /// Only this cluster's works.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cluster: Option<String>,
        /// Only works after this `(cluster, name)` (those of the previous page's last work).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after: Option<WorkRef>,
        /// At most this many works (absent: all).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u32>,
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
    /// A ManifestWorkReplicaSet's work as one cluster would get it (`spec.perCluster` rendered
    /// for the cluster), without sending anything: the stored set, or `object` when given (a set
    /// not applied yet). Answer: [`AdminPayload::Rendered`]; NotFound; Invalid with why the
    /// cluster cannot get the template.
    RenderReplicaSet {
        /// `default` when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        namespace: Option<String>,
        name: String,
        /// The cluster to render for.
        cluster: String,
        /// A ManifestWorkReplicaSet to render instead of the stored one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        object: Option<Value>,
    },
    /// Rolls a ManifestWorkReplicaSet back to a kept revision (like `kubectl rollout undo`): its
    /// template (and `perCluster`) become that revision's, rolled out with its strategy.
    /// Answer: [`AdminPayload::ReplicaSet`]; NotFound; Invalid when there is no such revision.
    UndoRollout {
        /// `default` when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        namespace: Option<String>,
        name: String,
        /// The revision (see `rollout history`); the one before the current one when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        to_revision: Option<i64>,
    },
    /// Puts accepted clusters in an ExclusiveClusterSetLabel set (their
    /// `cluster.open-cluster-management.io/clusterset` label; a cluster is in one such set at a
    /// time). All or nothing: the set must exist and select by that label (NotFound, Invalid),
    /// every cluster must be known and accepted (NotFound, NotAccepted). Answer:
    /// [`AdminPayload::Clusters`], one per cluster in the order given.
    SetClusterSet {
        /// Set name.
        set: String,
        /// Clusters to put in it; at least one.
        clusters: Vec<String>,
    },
    /// Binds a cluster set to a namespace (a ManagedClusterSetBinding named after the set), so
    /// placements there may choose its clusters. Idempotent. Answer: [`AdminPayload::Applied`];
    /// NotFound when the set does not exist.
    BindClusterSet {
        /// Set name.
        set: String,
        /// Namespace (`default` when absent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        namespace: Option<String>,
    },
    /// Removes a cluster set's binding from a namespace: placements there stop choosing its
    /// clusters. Answer: [`AdminPayload::Deleted`]; NotFound when the set is not bound there.
    UnbindClusterSet {
        /// Set name.
        set: String,
        /// Namespace (`default` when absent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        namespace: Option<String>,
    },
    /// Deletes a cluster set, binding, placement (with its decisions), score or replica set (its
    /// works are deleted first). Answer: [`AdminPayload::Deleted`]; NotFound; Invalid for the
    /// built-in `default` and `global` sets.
    DeleteObject {
        /// Kind, as OCM names it or short (`placement`, `clusterset`, `manifestworkreplicaset`).
        kind: String,
        /// `default` for namespaced kinds when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        namespace: Option<String>,
        name: String,
    },
    /// The add-ons (ClusterManagementAddOns), each with on how many clusters it is enabled and
    /// available (no rows: `getAddOn` pages them). Answer: [`AdminPayload::AddOns`], sorted by
    /// name.
    ListAddOns,
    /// One add-on with its clusters' rows (only `cluster`'s when given), sorted by cluster and
    /// paged like [`AdminRequest::ListClusters`]. Answer: [`AdminPayload::AddOn`]; NotFound when
    /// there is no such add-on.
    GetAddOn {
        /// Add-on name.
        name: String,
        /// Only this cluster's row.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cluster: Option<String>,
        /// Only rows of clusters sorting after this one (the last of the previous page).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after: Option<String>,
        /// At most this many rows (absent: all).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u32>,
    },
    /// Enables add-ons on clusters (a ManagedClusterAddOn in each cluster's namespace, as
    /// `clusteradm addon enable`), all or nothing: every add-on must exist and every cluster be
    /// known (NotFound), and each must pass the add-on's checks (Invalid). Already enabled ones
    /// are kept. Answer: [`AdminPayload::AddOns`] of the named add-ons.
    EnableAddOn {
        /// Add-on names; at least one.
        names: Vec<String>,
        /// Clusters; at least one.
        clusters: Vec<String>,
        /// Where the add-on's agent is installed (unless its AddOnDeploymentConfig says).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        namespace: Option<String>,
    },
    /// Disables add-ons on clusters: their ManagedClusterAddOns go and their agents' works are
    /// deleted (what is not enabled is skipped). Answer: [`AdminPayload::AddOns`] of the named
    /// add-ons; NotFound for an unknown add-on.
    DisableAddOn {
        /// Add-on names; at least one.
        names: Vec<String>,
        /// Clusters; at least one.
        clusters: Vec<String>,
    },
    /// Approves the MQTT identities that add-ons' agents asked for on clusters, for add-ons
    /// whose approval is `Manual` (annotation
    /// `edge.open-cluster-management.io/registration-approval`): the hub binds what each
    /// cluster's agent asked and issues its certificate. Answer: [`AdminPayload::AddOns`] of the
    /// named add-ons; NotFound for an unknown add-on or one not enabled on a cluster, Invalid
    /// when a cluster's agent has not asked yet.
    ApproveAddOn {
        /// Add-on names; at least one.
        names: Vec<String>,
        /// Clusters; at least one.
        clusters: Vec<String>,
    },
    /// A command this build does not know, as a newer client may send it; the hub answers it with
    /// [`AdminErrorKind::Unsupported`]. Only decoded, never a valid request: the JSON Schema
    /// leaves it out, and it encodes back as `{"command": <command>}`.
    #[serde(skip)]
    Unknown {
        /// The `command` as received.
        command: String,
    },
}

/// The arguments of [`AdminRequest::CreateWork`] (a struct so that the CLI builds the request
/// itself, not a copy of it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateWork {
    /// Work name (a valid Kubernetes name, also valid in MQTT topics).
    pub name: String,
    /// Target clusters; at least one, no duplicates.
    pub clusters: Vec<String>,
    /// Kubernetes objects as JSON, in apply order.
    pub manifests: Vec<Value>,
    /// How resources are deleted when the work is deleted (Foreground when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_option: Option<DeleteOption>,
    /// Per-resource options (update strategy, feedback rules, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub manifest_configs: Vec<ManifestConfigOption>,
    /// Replace an existing work of that name instead of failing with AlreadyExists.
    #[serde(default)]
    pub overwrite: bool,
    /// Per-cluster values and overrides, as a ManifestWorkReplicaSet's `spec.perCluster`: each
    /// cluster's work is rendered from the manifests with them. All or nothing: a cluster the
    /// work cannot be rendered for fails the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_cluster: Option<crate::api::replicaset::PerCluster>,
}

/// A work by cluster and name (a paging position).
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct WorkRef {
    pub cluster: String,
    pub name: String,
}

impl AdminRequest {
    /// AcceptCluster with the labels the agent sent, unedited.
    pub fn accept_cluster(name: impl Into<String>) -> Self {
        AdminRequest::AcceptCluster {
            name: name.into(),
            labels: BTreeMap::new(),
            remove_labels: vec![],
            drop_agent_labels: false,
        }
    }

    /// Every command this build knows, as it appears in JSON; a request naming another one decodes
    /// as [`AdminRequest::Unknown`].
    pub const COMMANDS: [&'static str; 33] = [
        "listClusters",
        "getCluster",
        "acceptCluster",
        "denyCluster",
        "removeCluster",
        "labelCluster",
        "taintCluster",
        "addCluster",
        "createWork",
        "applyManifestWork",
        "listWorks",
        "getWork",
        "deleteWork",
        "stats",
        "applyObject",
        "listClusterSets",
        "getClusterSet",
        "listPlacements",
        "getPlacement",
        "listReplicaSets",
        "getReplicaSet",
        "renderReplicaSet",
        "undoRollout",
        "setClusterSet",
        "bindClusterSet",
        "unbindClusterSet",
        "deleteObject",
        "listAddOns",
        "getAddOn",
        "enableAddOn",
        "disableAddOn",
        "approveAddOn",
        "setMaintenanceWindows",
    ];

    /// The command name as it appears in JSON (`listClusters`, ...), for logs and errors.
    /// [`AdminRequest::Unknown`] has no name known in advance: it gives `"unknown"`, and its
    /// `command` field holds the name received.
    pub fn command(&self) -> &'static str {
        match self {
            AdminRequest::ListClusters { .. } => "listClusters",
            AdminRequest::GetCluster { .. } => "getCluster",
            AdminRequest::AcceptCluster { .. } => "acceptCluster",
            AdminRequest::DenyCluster { .. } => "denyCluster",
            AdminRequest::RemoveCluster { .. } => "removeCluster",
            AdminRequest::LabelCluster { .. } => "labelCluster",
            AdminRequest::TaintCluster { .. } => "taintCluster",
            AdminRequest::AddCluster { .. } => "addCluster",
            AdminRequest::CreateWork(_) => "createWork",
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
            AdminRequest::RenderReplicaSet { .. } => "renderReplicaSet",
            AdminRequest::UndoRollout { .. } => "undoRollout",
            AdminRequest::SetClusterSet { .. } => "setClusterSet",
            AdminRequest::BindClusterSet { .. } => "bindClusterSet",
            AdminRequest::UnbindClusterSet { .. } => "unbindClusterSet",
            AdminRequest::DeleteObject { .. } => "deleteObject",
            AdminRequest::ListAddOns => "listAddOns",
            AdminRequest::GetAddOn { .. } => "getAddOn",
            AdminRequest::EnableAddOn { .. } => "enableAddOn",
            AdminRequest::DisableAddOn { .. } => "disableAddOn",
            AdminRequest::ApproveAddOn { .. } => "approveAddOn",
            AdminRequest::SetMaintenanceWindows { .. } => "setMaintenanceWindows",
            AdminRequest::Unknown { .. } => "unknown",
        }
    }

    /// For a command that [changes something](AdminRequest::changes_something), the `ocm-edge`
    /// command that shows whether it was carried out; `None` for reads. The hub stores a change before it answers, so a change
    /// sent without an answer may well be in force: the CLI says where to look instead of
    /// calling it lost.
    pub fn how_to_check(&self) -> Option<String> {
        let work =
            |name: &str, cluster: &str| format!("ocm-edge work get {name} --cluster {cluster}");
        match self {
            AdminRequest::AcceptCluster { name, .. }
            | AdminRequest::DenyCluster { name }
            | AdminRequest::RemoveCluster { name, .. }
            | AdminRequest::LabelCluster { name, .. }
            | AdminRequest::TaintCluster { name, .. }
            | AdminRequest::SetMaintenanceWindows { name, .. }
            | AdminRequest::AddCluster { name } => Some(format!("ocm-edge cluster get {name}")),
            AdminRequest::CreateWork(c) => Some(match c.clusters.as_slice() {
                [one] => work(&c.name, one),
                _ => "ocm-edge work list".to_owned(),
            }),
            AdminRequest::ApplyManifestWork { work: w } => Some(work(
                w.metadata.name.as_str(),
                w.metadata.namespace.as_str(),
            )),
            AdminRequest::DeleteWork { cluster, name } => Some(work(name, cluster)),
            AdminRequest::SetClusterSet { set, .. }
            | AdminRequest::BindClusterSet { set, .. }
            | AdminRequest::UnbindClusterSet { set, .. } => {
                Some(format!("ocm-edge clusterset get {set}"))
            }
            AdminRequest::UndoRollout {
                namespace, name, ..
            } => Some(format!(
                "ocm-edge rollout history {name} -n {}",
                namespace.as_deref().unwrap_or("default")
            )),
            AdminRequest::EnableAddOn { names, .. }
            | AdminRequest::DisableAddOn { names, .. }
            | AdminRequest::ApproveAddOn { names, .. } => Some(match names.as_slice() {
                [one] => format!("ocm-edge addon get {one}"),
                _ => "ocm-edge addon list".to_owned(),
            }),
            AdminRequest::ApplyObject { .. } | AdminRequest::DeleteObject { .. } => Some(
                "ocm-edge placement list, ocm-edge clusterset list or ocm-edge rollout list"
                    .to_owned(),
            ),
            // Reads, and commands this build does not know.
            _ => None,
        }
    }

    /// Whether the command changes what the hub holds (false for reads, and for a command this
    /// build does not know, which the hub refuses).
    pub fn changes_something(&self) -> bool {
        match self {
            AdminRequest::AcceptCluster { .. }
            | AdminRequest::DenyCluster { .. }
            | AdminRequest::RemoveCluster { .. }
            | AdminRequest::LabelCluster { .. }
            | AdminRequest::TaintCluster { .. }
            | AdminRequest::SetMaintenanceWindows { .. }
            | AdminRequest::AddCluster { .. }
            | AdminRequest::CreateWork(_)
            | AdminRequest::ApplyManifestWork { .. }
            | AdminRequest::DeleteWork { .. }
            | AdminRequest::ApplyObject { .. }
            | AdminRequest::UndoRollout { .. }
            | AdminRequest::SetClusterSet { .. }
            | AdminRequest::BindClusterSet { .. }
            | AdminRequest::UnbindClusterSet { .. }
            | AdminRequest::DeleteObject { .. }
            | AdminRequest::EnableAddOn { .. }
            | AdminRequest::DisableAddOn { .. }
            | AdminRequest::ApproveAddOn { .. } => true,
            AdminRequest::ListClusters { .. }
            | AdminRequest::GetCluster { .. }
            | AdminRequest::ListWorks { .. }
            | AdminRequest::GetWork { .. }
            | AdminRequest::Stats
            | AdminRequest::ListClusterSets
            | AdminRequest::GetClusterSet { .. }
            | AdminRequest::ListPlacements { .. }
            | AdminRequest::GetPlacement { .. }
            | AdminRequest::ListReplicaSets { .. }
            | AdminRequest::GetReplicaSet { .. }
            | AdminRequest::RenderReplicaSet { .. }
            | AdminRequest::ListAddOns
            | AdminRequest::GetAddOn { .. }
            | AdminRequest::Unknown { .. } => false,
        }
    }
}

impl Serialize for AdminRequest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            AdminRequest::Unknown { command } => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("command", command)?;
                map.end()
            }
            // The inherent function derived with `remote = "Self"`.
            known => AdminRequest::serialize(known, serializer),
        }
    }
}

impl<'de> Deserialize<'de> for AdminRequest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // The derived decoder buffers the whole request to find the tag anyway; buffering it as a
        // Value first lets us read the tag ourselves.
        let value = Value::deserialize(deserializer)?;
        if let Some(command) = value.get("command").and_then(Value::as_str)
            && !Self::COMMANDS.contains(&command)
        {
            return Ok(AdminRequest::Unknown {
                command: command.to_owned(),
            });
        }
        // A known command with bad fields, or no `command` at all, stays an error.
        AdminRequest::deserialize(value).map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn requests_are_tagged_by_command_with_camel_case_fields() {
        let req = AdminRequest::CreateWork(CreateWork {
            name: "web".into(),
            clusters: vec!["edge-1".into()],
            manifests: vec![
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"}}),
            ],
            delete_option: None,
            manifest_configs: vec![],
            overwrite: true,
            per_cluster: None,
        });
        let v = serde_json::to_value(&req).unwrap();
        assert_eq!(v["command"], "createWork");
        assert_eq!(v["overwrite"], true);
        assert!(v.get("deleteOption").is_none());
        let back: AdminRequest = serde_json::from_value(v).unwrap();
        assert_eq!(back, req);

        let list: AdminRequest = serde_json::from_str(r#"{"command":"listWorks"}"#).unwrap();
        assert_eq!(
            list,
            AdminRequest::ListWorks {
                cluster: None,
                after: None,
                limit: None
            }
        );
        let page: AdminRequest = serde_json::from_str(
            r#"{"command":"listWorks","after":{"cluster":"c","name":"w"},"limit":2}"#,
        )
        .unwrap();
        assert_eq!(
            page,
            AdminRequest::ListWorks {
                cluster: None,
                after: Some(WorkRef {
                    cluster: "c".into(),
                    name: "w".into()
                }),
                limit: Some(2)
            }
        );
        let get: AdminRequest =
            serde_json::from_str(r#"{"command":"getWork","cluster":"c","name":"w"}"#).unwrap();
        assert_eq!(get.command(), "getWork");
    }

    #[test]
    fn an_unknown_command_decodes_as_unknown_with_its_name() {
        let r: AdminRequest =
            serde_json::from_str(r#"{"command":"drainCluster","name":"edge-1","force":true}"#)
                .unwrap();
        assert_eq!(
            r,
            AdminRequest::Unknown {
                command: "drainCluster".into()
            }
        );
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"command":"drainCluster"}"#
        );
    }

    #[test]
    fn a_known_command_with_missing_fields_or_no_command_does_not_decode() {
        for bad in [
            r#"{"command":"getWork","cluster":"edge-1"}"#,
            r#"{"command":"acceptCluster","name":7}"#,
            r#"{"name":"edge-1"}"#,
            r#"{"command":42}"#,
            r#"{"command":"listClusters""#,
        ] {
            let err = serde_json::from_str::<AdminRequest>(bad);
            assert!(err.is_err(), "{bad} decoded as {err:?}");
        }
        let err = serde_json::from_str::<AdminRequest>(r#"{"command":"getWork","cluster":"c"}"#)
            .unwrap_err();
        assert!(err.to_string().contains("missing field `name`"), "{err}");
    }

    #[test]
    fn every_command_name_round_trips_and_is_listed() {
        let samples = [
            json!({"command": "listClusters"}),
            json!({"command": "getCluster", "name": "c"}),
            json!({"command": "acceptCluster", "name": "c"}),
            json!({"command": "denyCluster", "name": "c"}),
            json!({"command": "removeCluster", "name": "c", "force": true}),
            json!({"command": "labelCluster", "name": "c", "set": {"tier": "canary"}, "remove": ["old"]}),
            json!({"command": "taintCluster", "name": "c", "add": [{"key": "k", "effect": "NoSelect"}], "remove": ["old"]}),
            json!({"command": "addCluster", "name": "c"}),
            json!({"command": "createWork", "name": "w", "clusters": ["c"], "manifests": []}),
            json!({"command": "applyManifestWork", "work": {"metadata": {"name": "w", "namespace": "c"},
                   "spec": {"workload": {"manifests": []}}}}),
            json!({"command": "listWorks"}),
            json!({"command": "getWork", "cluster": "c", "name": "w"}),
            json!({"command": "deleteWork", "cluster": "c", "name": "w"}),
            json!({"command": "stats"}),
            json!({"command": "applyObject", "object": {}}),
            json!({"command": "listClusterSets"}),
            json!({"command": "getClusterSet", "name": "s"}),
            json!({"command": "listPlacements"}),
            json!({"command": "getPlacement", "name": "p"}),
            json!({"command": "listReplicaSets"}),
            json!({"command": "getReplicaSet", "name": "r"}),
            json!({"command": "renderReplicaSet", "name": "r", "cluster": "c"}),
            json!({"command": "undoRollout", "name": "r", "toRevision": 2}),
            json!({"command": "setClusterSet", "set": "s", "clusters": ["c"]}),
            json!({"command": "bindClusterSet", "set": "s", "namespace": "n"}),
            json!({"command": "unbindClusterSet", "set": "s"}),
            json!({"command": "deleteObject", "kind": "Placement", "name": "p"}),
            json!({"command": "listAddOns"}),
            json!({"command": "getAddOn", "name": "a"}),
            json!({"command": "enableAddOn", "names": ["a"], "clusters": ["c"]}),
            json!({"command": "disableAddOn", "names": ["a"], "clusters": ["c"]}),
            json!({"command": "approveAddOn", "names": ["a"], "clusters": ["c"]}),
            json!({"command": "setMaintenanceWindows", "name": "c", "windows": ["0 22 * * *;2h;Europe/Berlin"]}),
        ];
        assert_eq!(samples.len(), AdminRequest::COMMANDS.len());
        for (sample, name) in samples.iter().zip(AdminRequest::COMMANDS) {
            let r: AdminRequest = serde_json::from_value(sample.clone()).unwrap();
            assert_eq!(r.command(), name);
            assert_eq!(serde_json::to_value(&r).unwrap()["command"], name);
        }
    }
    #[test]
    fn the_schema_lists_exactly_the_known_commands() {
        let schema = crate::contracts::schema_of::<AdminRequest>();
        let mut in_schema: Vec<&str> = schema["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["properties"]["command"]["const"].as_str().unwrap())
            .collect();
        in_schema.sort_unstable();
        let mut known = AdminRequest::COMMANDS.to_vec();
        known.sort_unstable();
        assert_eq!(in_schema, known);
    }
}
