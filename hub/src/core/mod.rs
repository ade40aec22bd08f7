//! The hub's state and its one owner, [`HubCore`]: pure, data in, data out.
//!
//! No IO here (no MQTT client, no redb, no clock): every entry point takes `now` and returns a
//! [`Change`]: the [`Record`]s to store and the [`Outbound`] messages to publish. Computing a change
//! (`&self`) and applying it ([`HubCore::apply`]) are separate steps, so the shell
//! ([`crate::process`]) can persist the records first and only then update the index and publish
//! (linkerd's index pattern). Only [`HubCore::apply`] changes the state.
//!
//! Each concern adds its handlers to [`HubCore`] in its own folder, as OCM runs one controller per
//! concern over one cache:
//! - [`crate::registration::join`]: join requests, accept / deny, the hub's view of a cluster;
//!   [`crate::registration::certificates`]: each accepted cluster's TLS client certificate.
//! - [`crate::availability::lease`]: birth / will, lease renewals, API-server health, deadlines.
//! - [`crate::work`]: create / update / delete of works, the statuses agents report, resync.
//! - [`objects`] (here): cluster sets, bindings, placements, decisions, add-on scores, replica
//!   sets, as the store keeps them.
//! - [`crate::placement::scheduling`]: PlacementDecisions for every Placement.
//! - [`crate::rollout::deploy`]: ManifestWorkReplicaSets fanned out as works.

pub mod objects;

/// A cluster's registration state is kept as the admin API shows it (same names on the wire and
/// in the store).
pub use ocm_edge_schemas::admin::ClusterState;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use ocm_edge_schemas::api::cluster::{
    ManagedCluster, ManagedClusterClaim, ManagedClusterStatus, Taint,
};
use ocm_edge_schemas::api::lease::Lease;
use ocm_edge_schemas::api::meta::{Condition, Time};
use ocm_edge_schemas::api::work::{ManifestWorkSpec, ManifestWorkStatus};
use ocm_edge_schemas::wire::resync::{ResourceVersionList, StatusHashList};
use ocm_edge_schemas::wire::works::{SpecEvent, StatusEvent};
use serde::{Deserialize, Serialize};

use crate::availability::{AvailabilityConfig, ClusterAvailability};
use crate::registration::certificates;
use crate::work::spec_clock;
use objects::{ObjectKey, ObjectKind, Objects, StoredObject};

/// Everything the hub keeps about one cluster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClusterRecord {
    pub name: String,
    pub acceptance: ClusterState,
    /// The labels placements select the cluster by. Taken from the agent's join requests only
    /// until the cluster is accepted: from then on an agent cannot change them (a cluster that
    /// labels itself into another cluster set would get that set's works).
    pub labels: BTreeMap<String, String>,
    /// The labels the agent last sent (shown, never used for selection once accepted).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub reported_labels: BTreeMap<String, String>,
    pub claims: Vec<ManagedClusterClaim>,
    pub lease_duration_seconds: i32,
    /// Conditions the hub owns (accepted / denied / joined / available).
    pub conditions: Vec<Condition>,
    pub taints: Vec<Taint>,
    /// When the hub last saw a lease renewal (hub clock, so agent clock skew does not matter);
    /// on acceptance it starts the grace period.
    pub last_lease: Option<Time>,
    /// What the agent reports about itself (claims, capacity, version, its own conditions).
    pub reported: ManagedClusterStatus,
    /// Latest presence (birth / will) the agent published.
    pub presence: Option<Presence>,
    pub requested_at: Time,
    /// The availability state machine of an accepted cluster (stored so taints keep their
    /// timeAdded and a stale will stays recognisable across hub restarts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub availability: Option<ClusterAvailability>,
    /// The agent's Ed25519 public key (32 bytes, base64) from its join request. Replaced by each
    /// join request until the cluster is accepted; from acceptance on, the hub takes the
    /// cluster's events only when this key signed them (`crate::process` checks, per intake).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_key: Option<String>,
    /// The TLS client certificate the hub issued for the bound key ([`certificates`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate: Option<certificates::ClusterCertificate>,
    /// Its certificates revoked before their end (kept until then, for the revocation list).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub revoked_certificates: Vec<certificates::RevokedCertificate>,
    /// When its removal started (`ocm-edge cluster remove`): its works are being deleted, and
    /// the hub forgets it once its agent confirmed the last
    /// ([`crate::registration::removal`]). Stored, so a restarted hub finishes the removal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removing: Option<Time>,
    /// The maintenance windows set on the hub (`ocm-edge cluster maintenance`), checked when
    /// set; sent to the agent in the hub's view ([`crate::registration::maintenance`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub maintenance_windows: Vec<String>,
}

impl ClusterRecord {
    /// The cluster's TLS client certificate while it is accepted (a denied or pending cluster
    /// shows and gets none).
    pub fn current_certificate(&self) -> Option<&certificates::ClusterCertificate> {
        self.certificate
            .as_ref()
            .filter(|_| self.acceptance == ClusterState::Accepted)
    }

    /// Whether placements may choose it and works may be written to it: accepted and not being
    /// removed.
    pub fn is_schedulable(&self) -> bool {
        self.acceptance == ClusterState::Accepted && self.removing.is_none()
    }

    /// The agent key the hub holds this cluster's events to: set and accepted.
    pub fn bound_agent_key(&self) -> Option<&str> {
        self.agent_key
            .as_deref()
            .filter(|_| self.acceptance == ClusterState::Accepted)
    }
}

/// The agent's MQTT presence: birth on connect, will on a broken connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Presence {
    pub online: bool,
    /// The agent's connection sequence number; a will with an older number is stale.
    pub connection_seq: u64,
}

/// A work is identified by (cluster, name).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct WorkKey {
    pub cluster: String,
    pub name: String,
}

impl WorkKey {
    pub fn new(cluster: impl Into<String>, name: impl Into<String>) -> Self {
        WorkKey {
            cluster: cluster.into(),
            name: name.into(),
        }
    }
}

impl std::fmt::Display for WorkKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.cluster, self.name)
    }
}

/// Everything the hub keeps about one work.
// Not a ManifestWork: a stored record with the hub's bookkeeping (resourceid, status hash, last
// sequenceid, deletion handshake); `spec_event` turns it into the wire message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkRecord {
    pub key: WorkKey,
    /// UUID v5 of `<source>/<cluster>/<work>` (CONTRACTS "Work identity").
    pub resource_id: String,
    /// 1 at creation, +1 per spec change.
    pub resource_version: i64,
    /// Shared by every cluster the same write went to (one copy in memory, cheap clones).
    pub spec: Arc<ManifestWorkSpec>,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub created: Time,
    /// Set when deletion was requested; the work is forgotten on the agent's `Deleted` status.
    pub deleting: Option<Time>,
    pub status: Option<ManifestWorkStatus>,
    /// The `resource_version` that `status` reports on. Behind `resource_version` (or absent)
    /// until the agent confirms the current spec: such a work's spec is sent again after every
    /// (re)subscribe ([`HubCore::unconfirmed_specs`]). Absent in records stored before it was
    /// kept, which are sent again once.
    #[serde(default)]
    pub status_version: Option<i64>,
    pub status_hash: Option<String>,
    pub last_sequence_id: Option<String>,
    pub status_updated: Option<Time>,
}

/// Named counters (ignored, stale, malformed, ...), kept across restarts.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Counters(pub BTreeMap<String, u64>);

/// Counter names.
pub mod counter {
    /// Events from clusters that are unknown, pending or denied.
    pub const IGNORED_NOT_ACCEPTED: &str = "eventsIgnoredNotAccepted";
    /// MQTT messages that were not valid CloudEvents or payloads.
    pub const MALFORMED: &str = "messagesMalformed";
    /// Status events for an older resourceversion or with an old sequenceid.
    pub const STALE_STATUS: &str = "statusesStale";
    /// Status events whose hash equals the stored one.
    pub const UNCHANGED_STATUS: &str = "statusesUnchanged";
    /// Status events for a resourceid the hub does not hold.
    pub const UNKNOWN_WORK: &str = "statusesUnknownWork";
    /// Status events whose `originalsource` names another source (another hub's works).
    pub const FOREIGN_SOURCE: &str = "statusesForeignSource";
    /// Accepted status events.
    pub const STATUS_ACCEPTED: &str = "statusesAccepted";
    /// MQTT wills of an older connection than the agent's current one (ignored).
    pub const STALE_WILL: &str = "willsStale";
    /// Admin requests that could not be answered (no response topic, bad JSON).
    pub const ADMIN_DROPPED: &str = "adminRequestsDropped";
    /// Admin requests answered Unauthenticated or Forbidden.
    pub const ADMIN_REFUSED: &str = "adminRequestsRefused";
    /// Changes asked again (a resend, or a replay) and answered with the first answer.
    pub const ADMIN_REPEATED: &str = "adminRequestsRepeated";
    /// Agent events refused: not signed by the key bound to their cluster at acceptance, or a
    /// join request not signed by the key it carries.
    pub const AGENT_SIGNATURE_REFUSED: &str = "agentEventsRefusedSignature";
    /// Join requests of accepted clusters carrying other labels than the agent sent before
    /// (ignored: an accepted cluster's labels are the hub's).
    pub const AGENT_LABELS_IGNORED: &str = "agentLabelsIgnored";
    /// Clusters the hub forgot: removed (`ocm-edge cluster remove`) or unjoined by their agent.
    pub const CLUSTERS_REMOVED: &str = "clustersRemoved";
    /// Add-on registrations refused: the add-on is not installed on the cluster, does not
    /// register, is being removed, or the request is malformed.
    pub const ADDON_REGISTRATIONS_REFUSED: &str = "addonRegistrationsRefused";
    /// AddOnPlacementScores from add-on agents dropped: the identity is not bound, or the score
    /// names another cluster.
    pub const ADDON_SCORES_REFUSED: &str = "addonScoresRefused";
}

impl Counters {
    pub fn get(&self, name: &str) -> u64 {
        self.0.get(name).copied().unwrap_or(0)
    }

    pub fn bump(&mut self, name: &str) {
        *self.0.entry(name.to_owned()).or_insert(0) += 1;
    }
}

/// One thing to store. Applying a record is idempotent.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    Cluster(Box<ClusterRecord>),
    Work(Box<WorkRecord>),
    ForgetWork(WorkKey),
    /// A removed cluster: its record goes (its works are forgotten by their own records).
    ForgetCluster(String),
    /// The revoked, not yet ended certificates of removed clusters, with their clusters (a full
    /// snapshot): the revocation list keeps them after the clusters' records are gone.
    RemovedRevoked(Vec<(String, certificates::RevokedCertificate)>),
    Counters(Counters),
    /// The birth or will of a cluster the hub does not know yet (the agent publishes its birth
    /// just before its join request). Kept in memory only, so the join can take the agent's
    /// connection sequence number; not stored.
    UnknownPresence(String, Presence),
    /// A cluster set, binding, placement, decision, score or replica set.
    Object(Box<StoredObject>),
    ForgetObject(ObjectKey),
    /// The last time stamped into a spec event ([`spec_clock::SpecClock`]); the shell adds it
    /// to what it stores when it moved.
    SpecClock(DateTime<Utc>),
}

/// A message to publish.
#[derive(Debug, Clone, PartialEq)]
pub enum Outbound {
    /// The hub's view of a cluster (`managedclusters.spec.update_request` on its sourceevents).
    HubView(Box<ManagedCluster>),
    /// A work spec event on the cluster's sourceevents, as it goes on the wire.
    Spec(Box<SpecEvent>),
    /// A `status.resync_request` with the hashes the hub holds for that cluster.
    StatusResyncRequest {
        cluster: String,
        hashes: StatusHashList,
    },
}

/// What one input does: records to store, then messages to publish.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Change {
    pub records: Vec<Record>,
    pub outbound: Vec<Outbound>,
}

impl Change {
    pub fn is_empty(&self) -> bool {
        self.records.is_empty() && self.outbound.is_empty()
    }

    pub fn extend(&mut self, other: Change) {
        for r in other.records {
            match (r, self.records.iter_mut().find_map(removed_revoked)) {
                // Each snapshot was made from the same stored list plus its own additions (two
                // certificates issued while planning one change): their union stands for both.
                (Record::RemovedRevoked(more), Some(list)) => {
                    for entry in more {
                        if !list.iter().any(|(_, r)| r.serial == entry.1.serial) {
                            list.push(entry);
                        }
                    }
                }
                (r, _) => self.records.push(r),
            }
        }
        self.outbound.extend(other.outbound);
    }
}

fn removed_revoked(r: &mut Record) -> Option<&mut Vec<(String, certificates::RevokedCertificate)>> {
    match r {
        Record::RemovedRevoked(list) => Some(list),
        _ => None,
    }
}

/// Something an agent said, decoded from its CloudEvent.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentInput {
    /// `managedclusters.spec.create_request`.
    JoinRequest {
        cluster: String,
        request: Box<ManagedCluster>,
    },
    /// `managedclusters.status.update_request`.
    ClusterStatus {
        cluster: String,
        status: Box<ManagedClusterStatus>,
    },
    /// `leases.spec.update_request`.
    LeaseRenewal { cluster: String, lease: Box<Lease> },
    /// `presences.status.update_request` (birth, or the will).
    Presence {
        cluster: String,
        presence: Presence,
        /// The chunked-transfer offer an ocm-edge agent's birth carries (the hub loop keeps it).
        transfer: Option<ocm_edge_schemas::wire::chunks::TransferOffer>,
    },
    /// `manifestbundles.status.update_request` or `status.resync_response`; its `cluster` is the
    /// topic's. `hash` is the status hash of its status, computed where it was decoded (an
    /// intake task, not the hub task; never taken from the sender).
    WorkStatus {
        event: Box<StatusEvent>,
        hash: String,
    },
    /// `addonplacementscores.status.update_request`: a score for placements.
    AddOnScore {
        cluster: String,
        score: Box<ocm_edge_schemas::api::placement::AddOnPlacementScore>,
    },
    /// `managedclusteraddons.status.update_request`: the agent asks to bind the password hash
    /// of an add-on's MQTT identity on its cluster.
    AddOnRegistration {
        cluster: String,
        addon: String,
        password_sha256: String,
        /// The identity's Ed25519 public key (base64) to certify; empty: none.
        public_key: String,
        /// The registration's nonce the agent derived them for.
        nonce: String,
    },
    /// `managedclusters.spec.delete_request`: the agent left (`ocm-edge-agent unjoin`).
    Unjoin {
        cluster: String,
        /// It left what it applied on the cluster.
        kept_resources: bool,
    },
    /// `manifestbundles.spec.resync_request`.
    SpecResyncRequest {
        cluster: String,
        versions: ResourceVersionList,
        /// The agent's offer of chunked transfers (the hub loop uses it when publishing).
        transfer: Option<ocm_edge_schemas::wire::chunks::TransferOffer>,
    },
}

impl AgentInput {
    pub fn cluster(&self) -> &str {
        match self {
            AgentInput::JoinRequest { cluster, .. }
            | AgentInput::ClusterStatus { cluster, .. }
            | AgentInput::LeaseRenewal { cluster, .. }
            | AgentInput::Presence { cluster, .. }
            | AgentInput::SpecResyncRequest { cluster, .. }
            | AgentInput::Unjoin { cluster, .. }
            | AgentInput::AddOnRegistration { cluster, .. }
            | AgentInput::AddOnScore { cluster, .. } => cluster,
            AgentInput::WorkStatus { event, .. } => &event.cluster,
        }
    }
}

/// Settings of the core.
#[derive(Debug, Clone)]
pub struct CoreConfig {
    pub source_id: String,
    /// Lease grace period and the other availability settings.
    pub availability: AvailabilityConfig,
    pub status_resync_batch: usize,
}

/// The hub's state: one owner (the hub task), changed only through [`HubCore::apply`].
#[derive(Debug)]
//
// The fields are private to this module: the handlers in the concerns' folders read them through
// the accessors below, so nothing but `apply` and the restore functions here can change them.
pub struct HubCore {
    cfg: CoreConfig,
    clusters: BTreeMap<String, ClusterRecord>,
    works: BTreeMap<WorkKey, WorkRecord>,
    by_resource_id: HashMap<String, WorkKey>,
    counters: Counters,
    /// Latest presence of clusters not known yet (see [`Record::UnknownPresence`]).
    unknown_presence: HashMap<String, Presence>,
    objects: Objects,
    /// Stamps spec events, never going back ([`spec_clock::SpecClock`]).
    spec_clock: spec_clock::SpecClock,
    /// Issues accepted clusters' certificates (none: the hub issues none).
    certificates: Option<certificates::CertificatePolicy>,
    /// The revoked certificates of removed clusters ([`Record::RemovedRevoked`]).
    removed_revoked: Vec<(String, certificates::RevokedCertificate)>,
    /// Whether what the sets' and bindings' conditions depend on (a cluster's labels or
    /// acceptance, a set, a binding) changed since they were last written: work statuses, which
    /// make most fleet batches, do not, so [`HubCore::reconcile_fleet`] skips that pass for them.
    set_conditions_stale: bool,
    /// Whether what add-ons are rendered from (add-on objects, placements and their decisions,
    /// which clusters may take work) changed since [`HubCore::reconcile_fleet`] last rendered
    /// them all.
    addons_stale: bool,
    /// Clusters whose add-ons' conditions may have changed since (their add-on works' statuses,
    /// their availability): only those are looked at when nothing else changed.
    addon_clusters_dirty: std::collections::BTreeSet<String>,
    /// The revoked certificates may have changed since the shell last looked
    /// ([`HubCore::take_revocations_changed`]).
    revocations_changed: bool,
    /// When add-on rollouts must be looked at again (a deadline or a soak time ends).
    addons_requeue_at: Option<DateTime<Utc>>,
    /// What ManifestWorkReplicaSets with `perCluster` rendered for each cluster, kept between
    /// fleet passes (not stored: it is derived).
    render_cache: crate::rollout::deploy::RenderCache,
}

/// Whether objects of `kind` are what add-ons are rendered from.
fn feeds_addons(kind: ObjectKind) -> bool {
    matches!(
        kind,
        ObjectKind::ClusterManagementAddOn
            | ObjectKind::ManagedClusterAddOn
            | ObjectKind::AddOnTemplate
            | ObjectKind::AddOnDeploymentConfig
            | ObjectKind::Placement
            | ObjectKind::PlacementDecision
    )
}

/// Whether objects of `kind` are what the sets' and bindings' conditions read.
fn is_set_or_binding(kind: ObjectKind) -> bool {
    matches!(
        kind,
        ObjectKind::ManagedClusterSet | ObjectKind::ManagedClusterSetBinding
    )
}

/// Most presences of unknown clusters kept in memory.
const MAX_UNKNOWN_PRESENCES: usize = 10_000;

impl HubCore {
    pub fn new(cfg: CoreConfig) -> Self {
        HubCore {
            cfg,
            clusters: BTreeMap::new(),
            works: BTreeMap::new(),
            by_resource_id: HashMap::new(),
            counters: Counters::default(),
            unknown_presence: HashMap::new(),
            objects: Objects::default(),
            spec_clock: spec_clock::SpecClock::default(),
            certificates: None,
            removed_revoked: vec![],
            set_conditions_stale: true,
            addons_stale: true,
            addon_clusters_dirty: Default::default(),
            revocations_changed: false,
            addons_requeue_at: None,
            render_cache: Default::default(),
        }
    }

    /// How accepted clusters' certificates are issued (none: the hub issues none).
    pub(crate) fn certificate_policy(&self) -> Option<&certificates::CertificatePolicy> {
        self.certificates.as_ref()
    }

    /// Issue accepted clusters' certificates with `policy` from now on.
    pub fn set_certificate_policy(&mut self, policy: certificates::CertificatePolicy) {
        self.certificates = Some(policy);
    }

    /// A core holding what the store loaded.
    pub fn restore(
        cfg: CoreConfig,
        clusters: Vec<ClusterRecord>,
        works: Vec<WorkRecord>,
        counters: Counters,
        spec_clock: Option<DateTime<Utc>>,
    ) -> Self {
        let mut core = HubCore::new(cfg);
        core.counters = counters;
        core.spec_clock = spec_clock::SpecClock::starting_after(spec_clock);
        for c in clusters {
            core.clusters.insert(c.name.clone(), c);
        }
        for mut w in works {
            if w.status_version.is_none() {
                // Stored before `status_version` was kept: the status's conditions say which
                // generation (the hub sends its resourceversion as the generation) they observed.
                // Without this, a work whose status never changes again would be sent again
                // after every (re)subscribe, for ever.
                w.status_version = w.status.as_ref().and_then(|s| {
                    s.conditions
                        .iter()
                        .map(|c| c.observed_generation)
                        .filter(|g| *g > 0)
                        .max()
                });
            }
            core.by_resource_id
                .insert(w.resource_id.clone(), w.key.clone());
            core.works.insert(w.key.clone(), w);
        }
        core
    }

    /// Starts every lease grace period no earlier than `now` (call once after a restart): the
    /// hub heard nothing while it was down, which says nothing about the clusters. Accepted
    /// clusters stored by a hub without availability tracking start being tracked now.
    pub fn set_grace_start(&mut self, now: DateTime<Utc>) {
        for c in self.clusters.values_mut() {
            if c.acceptance != ClusterState::Accepted {
                continue;
            }
            match &mut c.availability {
                Some(a) => a.resume(now),
                None => {
                    // Keep what the older hub stored (condition, taints, timeAdded).
                    let a = ClusterAvailability::adopt(
                        c.lease_duration_seconds,
                        &c.conditions,
                        &c.taints,
                        now,
                    );
                    a.apply_to(&mut c.conditions, &mut c.taints);
                    c.availability = Some(a);
                }
            }
        }
    }

    pub fn config(&self) -> &CoreConfig {
        &self.cfg
    }

    /// Whether the revoked certificates may have changed since the last call (records applied
    /// since then revoked, issued or dropped one): the shell writes the revocation list again.
    pub fn take_revocations_changed(&mut self) -> bool {
        std::mem::take(&mut self.revocations_changed)
    }

    /// Whether storing `new` (`None`: forgetting) as the object `key` changes the certificates
    /// a cluster's add-on holds (and so which issued ones count as revoked).
    fn addon_certificates_change(
        &self,
        key: &objects::ObjectKey,
        new: Option<&ocm_edge_schemas::api::addon::ManagedClusterAddOn>,
    ) -> bool {
        if key.kind != objects::ObjectKind::ManagedClusterAddOn {
            return false;
        }
        let held = |m: Option<&ocm_edge_schemas::api::addon::ManagedClusterAddOn>| {
            m.map(crate::addon::held_serials).unwrap_or_default()
        };
        held(self.objects.get(key).and_then(|o| o.as_cluster_addon())) != held(new)
    }

    /// Applies records (after the shell stored them).
    pub fn apply(&mut self, records: &[Record]) {
        for r in records {
            match r {
                Record::Cluster(c) => {
                    // Only a cluster with revoked certificates can change the list (a lease
                    // renewal of any other costs no pass over the fleet).
                    self.revocations_changed |= !c.revoked_certificates.is_empty();
                    let old = self.clusters.insert(c.name.clone(), (**c).clone());
                    self.set_conditions_stale |= old
                        .as_ref()
                        .is_none_or(|old| old.labels != c.labels || old.acceptance != c.acceptance);
                    if self.objects.has_cluster_addons() {
                        self.addons_stale |= old
                            .as_ref()
                            .is_none_or(|o| o.is_schedulable() != c.is_schedulable());
                        self.addon_clusters_dirty.insert(c.name.clone());
                    }
                }
                Record::Work(w) => {
                    if let Some(addon) = crate::addon::addon_of_work(&w.key.name) {
                        // Its status may let a placement's rollout move on to other clusters;
                        // a cluster's own add-on's conditions only need its cluster looked at.
                        self.addons_stale |= self.objects.placed_addon(&w.key.cluster, addon);
                        self.addon_clusters_dirty.insert(w.key.cluster.clone());
                    }
                    self.by_resource_id
                        .insert(w.resource_id.clone(), w.key.clone());
                    self.works.insert(w.key.clone(), (**w).clone());
                }
                Record::ForgetWork(key) => {
                    if crate::addon::addon_of_work(&key.name).is_some() {
                        // A re-enabled add-on waits for its old work to go; a removal waits
                        // for its hook's: both are written in a full pass.
                        self.addons_stale = true;
                        self.addon_clusters_dirty.insert(key.cluster.clone());
                    }
                    if let Some(w) = self.works.remove(key) {
                        self.by_resource_id.remove(&w.resource_id);
                    }
                }
                Record::ForgetCluster(name) => {
                    self.set_conditions_stale |= self.clusters.remove(name).is_some();
                    self.addons_stale = true;
                }
                Record::RemovedRevoked(list) => {
                    self.revocations_changed = true;
                    self.removed_revoked = list.clone();
                }
                Record::Counters(c) => self.counters = c.clone(),
                Record::Object(o) => {
                    self.set_conditions_stale |= is_set_or_binding(o.kind());
                    self.addons_stale |= feeds_addons(o.kind());
                    self.revocations_changed |=
                        self.addon_certificates_change(&o.key(), o.as_cluster_addon());
                    self.objects.apply(r);
                }
                Record::ForgetObject(key) => {
                    self.set_conditions_stale |= is_set_or_binding(key.kind);
                    self.addons_stale |= feeds_addons(key.kind);
                    self.revocations_changed |= self.addon_certificates_change(key, None);
                    self.objects.apply(r);
                }
                // The clock moved when it stamped; this only stores it.
                Record::SpecClock(_) => {}
                Record::UnknownPresence(cluster, p) => {
                    // Bounded: presences of clusters that never join must not grow the map.
                    if self.unknown_presence.len() >= MAX_UNKNOWN_PRESENCES {
                        self.unknown_presence.clear();
                    }
                    self.unknown_presence.insert(cluster.clone(), *p);
                }
            }
        }
    }

    /// The last time stamped into a spec event, to store ([`Record::SpecClock`]).
    pub fn spec_clock(&self) -> Option<DateTime<Utc>> {
        self.spec_clock.last()
    }

    /// The `ce-time` of a spec event made at `now` ([`spec_clock::SpecClock::stamp`]).
    pub(crate) fn spec_time(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        self.spec_clock.stamp(now)
    }

    pub fn cluster(&self, name: &str) -> Option<&ClusterRecord> {
        self.clusters.get(name)
    }

    pub fn clusters(&self) -> impl Iterator<Item = &ClusterRecord> {
        self.clusters.values()
    }

    pub fn work(&self, key: &WorkKey) -> Option<&WorkRecord> {
        self.works.get(key)
    }

    pub fn work_by_resource_id(&self, id: &str) -> Option<&WorkRecord> {
        self.by_resource_id.get(id).and_then(|k| self.works.get(k))
    }

    /// Works of every cluster, sorted by (cluster, name).
    pub fn works(&self) -> impl Iterator<Item = &WorkRecord> {
        self.works.values()
    }

    /// Clusters sorted by name, from the first after `after` (all when None).
    pub fn clusters_after<'a>(
        &'a self,
        after: Option<&'a str>,
    ) -> impl Iterator<Item = &'a ClusterRecord> + 'a {
        use std::ops::Bound;
        let start = after.map_or(Bound::Unbounded, Bound::Excluded);
        self.clusters
            .range::<str, _>((start, Bound::Unbounded))
            .map(|(_, c)| c)
    }

    /// Works sorted by (cluster, name), from the first after `after` (all when None).
    pub fn works_after<'a>(
        &'a self,
        after: Option<&'a WorkKey>,
    ) -> impl Iterator<Item = &'a WorkRecord> + 'a {
        use std::ops::Bound;
        let start = after.map_or(Bound::Unbounded, Bound::Excluded);
        self.works.range((start, Bound::Unbounded)).map(|(_, w)| w)
    }

    /// Works of one cluster, sorted by name.
    pub fn works_of<'a>(&'a self, cluster: &'a str) -> impl Iterator<Item = &'a WorkRecord> + 'a {
        let start = WorkKey::new(cluster, "");
        self.works
            .range(start..)
            .take_while(move |(k, _)| k.cluster == cluster)
            .map(|(_, w)| w)
    }

    /// Cluster sets, bindings, placements, decisions, scores and replica sets.
    /// The ManifestWorkReplicaSets' per-cluster renders kept between fleet passes.
    pub(crate) fn render_cache(&self) -> &crate::rollout::deploy::RenderCache {
        &self.render_cache
    }

    pub fn objects(&self) -> &Objects {
        &self.objects
    }

    /// The revoked certificates of removed clusters the store loaded.
    pub fn restore_removed_revoked(
        &mut self,
        list: Vec<(String, certificates::RevokedCertificate)>,
    ) {
        self.removed_revoked = list;
    }

    /// The revoked certificates of removed clusters ([`Record::RemovedRevoked`]).
    pub(crate) fn removed_revoked(&self) -> &[(String, certificates::RevokedCertificate)] {
        &self.removed_revoked
    }

    /// Adds the objects the store loaded (after [`HubCore::restore`]).
    pub fn restore_objects(&mut self, objects: Vec<StoredObject>) {
        for o in objects {
            self.objects.by_key.insert(o.key(), o);
        }
    }

    /// The latest presence of a cluster the hub did not know when it arrived.
    pub(crate) fn unknown_presence(&self, cluster: &str) -> Option<Presence> {
        self.unknown_presence.get(cluster).copied()
    }

    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// A change that only bumps a counter.
    pub fn count(&self, name: &str) -> Change {
        let mut counters = self.counters.clone();
        counters.bump(name);
        Change {
            records: vec![Record::Counters(counters)],
            outbound: vec![],
        }
    }

    pub(crate) fn is_accepted(&self, cluster: &str) -> bool {
        self.clusters
            .get(cluster)
            .is_some_and(|c| c.acceptance == ClusterState::Accepted)
    }

    /// Writes the sets' and bindings' conditions, schedules placements, applies their decisions
    /// to `self`, then plans replica sets: the shell calls this after every batch and at
    /// [`HubCore::fleet_requeue_at`]. Each step's records are applied before the next step reads
    /// them.
    pub fn reconcile_fleet(&mut self, now: DateTime<Utc>) -> Change {
        // Sets' and bindings' conditions (what `clusterset list` shows; placements read sets
        // and bindings, not these conditions).
        let mut change = Change::default();
        if self.set_conditions_stale {
            change = self.reconcile_cluster_sets(now);
            self.apply(&change.records);
            // Its own records are conditions only: nothing they depend on.
            self.set_conditions_stale = false;
        }
        // A pass that writes decisions changes what the next one reads (Steady scores, Balance
        // counts): run until nothing changes, bounded.
        for _ in 0..3 {
            let pass = self.reconcile_placements(now);
            if pass.is_empty() {
                break;
            }
            self.apply(&pass.records);
            change.extend(pass);
        }
        // Add-ons follow placements, their objects and their works' statuses. The first pass
        // may create clusters' add-ons (the Placements strategy) that the second renders.
        if self.addons_requeue_at.is_some_and(|t| t <= now) {
            self.addons_stale = true;
        }
        for _ in 0..2 {
            let dirty = std::mem::take(&mut self.addon_clusters_dirty);
            let stale = self.addons_stale;
            let (pass, requeue) = self.reconcile_addons(stale, &dirty, now);
            if stale {
                self.addons_requeue_at = requeue;
            }
            // Only a cluster's add-on created by this pass needs another (its status written
            // by it does not).
            let created = pass.records.iter().any(|r| {
                matches!(r, Record::Object(o) if o.kind() == ObjectKind::ManagedClusterAddOn
                    && self.objects.get(&o.key()).is_none())
            });
            self.apply(&pass.records);
            change.extend(pass);
            self.addons_stale = created;
            if !created {
                break;
            }
        }
        // What the passes wrote themselves needs no other look.
        self.addons_stale = false;
        self.addon_clusters_dirty.clear();
        // Completed works whose TTL ran out are deleted (OCM's garbage collection) before the
        // rollouts read the works.
        let expired = self.expire_finished_works(now);
        self.apply(&expired.records);
        change.extend(expired);
        // Works written by a pass are read back by the next one (their rollout status).
        for _ in 0..3 {
            let pass = self.reconcile_replica_sets(now);
            if pass.is_empty() {
                break;
            }
            self.apply(&pass.records);
            change.extend(pass);
        }
        change
    }

    /// When the hub must wake up for placements, replica sets, add-on rollouts or completed
    /// works' TTLs (None: nothing scheduled).
    pub fn fleet_requeue_at(&self) -> Option<DateTime<Utc>> {
        [
            self.placements_requeue_at(),
            self.replica_sets_requeue_at(),
            self.addons_requeue_at,
            self.finished_works_requeue_at(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Handles one agent event. Events from clusters that are not accepted are ignored and
    /// counted, except the join request and presence.
    pub fn handle_agent(&self, input: AgentInput, now: DateTime<Utc>) -> Change {
        match input {
            AgentInput::JoinRequest { cluster, request } => {
                self.join_request(&cluster, &request, now)
            }
            AgentInput::Presence {
                cluster, presence, ..
            } => self.presence(&cluster, presence, now),
            // An agent asks after every (re)connect; one the hub has not accepted (denied while it
            // was away, or dropped from the broker when it was denied) hears where it stands
            // instead: its view, and no work.
            AgentInput::SpecResyncRequest { cluster, .. } if !self.is_accepted(&cluster) => {
                let mut change = self.count(counter::IGNORED_NOT_ACCEPTED);
                let view = match self.clusters.get(&cluster) {
                    Some(c) => crate::registration::hub_view(c),
                    // Removed (or never joined): its agent, which may still hold an accepted
                    // view, learns that it must join again.
                    None => crate::registration::removal::unknown_view(&cluster, now),
                };
                change.outbound.push(Outbound::HubView(Box::new(view)));
                change
            }
            other if !self.is_accepted(other.cluster()) => {
                self.count(counter::IGNORED_NOT_ACCEPTED)
            }
            AgentInput::Unjoin {
                cluster,
                kept_resources,
            } => self.unjoin(&cluster, kept_resources, now),
            AgentInput::ClusterStatus { cluster, status } => {
                self.cluster_status(&cluster, *status, now)
            }
            AgentInput::LeaseRenewal { cluster, lease } => {
                self.lease_renewal(&cluster, &lease, now)
            }
            AgentInput::WorkStatus { event, hash } => self.work_status(*event, hash, now),
            AgentInput::SpecResyncRequest {
                cluster, versions, ..
            } => {
                let mut change = self.spec_resync(&cluster, &versions, now);
                // An agent asks after every (re)connect: tell it which statuses the hub holds too.
                // It marks the matching ones confirmed, so its next reconnect resends only what
                // changed since, not every status (any OCM agent answers this resync request).
                change
                    .outbound
                    .extend(self.status_resync_requests(&cluster));
                change
            }
            AgentInput::AddOnScore { cluster, score } => self.addon_score(&cluster, *score),
            AgentInput::AddOnRegistration {
                cluster,
                addon,
                password_sha256,
                public_key,
                nonce,
            } => self.addon_registration(
                crate::addon::AddOnRegistrationRequest {
                    cluster: &cluster,
                    addon: &addon,
                    password_sha256: &password_sha256,
                    public_key: &public_key,
                    nonce: &nonce,
                },
                now,
            ),
        }
    }
}

pub(crate) fn time(now: DateTime<Utc>) -> Time {
    Time::new(now)
}

#[cfg(test)]
pub(crate) mod testkit;
