//! Retained dashboard topics for MQTT dashboards (MQTT Explorer, Node-RED, Grafana's MQTT source).
//!
//! At most every [`Dashboards::EVERY`] (0.5 s) the hub publishes, retained and as compact JSON, the
//! views that changed since the last time (a view whose payload is the same is not sent again):
//! - `ocm-edge/<source>/dashboard/summary`:
//!   `{"clusters":{"pending":0,"accepted":3,"denied":0,"available":3},"works":{"total":3,"applied":3,"deleting":0}}`
//! - `ocm-edge/<source>/dashboard/clusters/<cluster>`:
//!   `{"name","state","available":"True|False|Unknown","labels",{...},"lastLease","taints":[keys],"works"}`
//! - `ocm-edge/<source>/dashboard/works/<cluster>/<work>`:
//!   `{"cluster","name","version","deleting","conditions":{"Applied":"True",...},"statusUpdated"}`;
//!   an empty retained payload once the work is forgotten (which clears it on the broker).
//! - `ocm-edge/<source>/dashboard/addons/<addon>`:
//!   `{"name","install","enabled","available","progressing","registered"}`; cleared once deleted.
//! - `ocm-edge/<source>/dashboard/addons/<addon>/clusters/<cluster>`:
//!   `{"addon","cluster","namespace","conditions":{"Available":"True",...},"deleting"}`; cleared
//!   once the add-on is removed from the cluster.
//!
//! Dashboards are a convenience: they must not rely on every retained message arriving (a broker
//! may cap what it replays to a new wildcard subscriber, or keep retained messages only in
//! memory). No IO here: the hub publishes what [`Dashboards::take_due`] returns.

use std::collections::{BTreeSet, HashMap};
use std::hash::{Hash as _, Hasher as _};
use std::time::{Duration, Instant};

use ocm_edge_schemas::api::cluster::MANAGED_CLUSTER_CONDITION_AVAILABLE;
use ocm_edge_schemas::api::meta::{find_condition, is_condition_true};
use ocm_edge_schemas::api::work::WORK_APPLIED;
use ocm_edge_schemas::wire::topic;
use serde_json::{Map, Value, json};

use ocm_edge_schemas::api::addon::{
    CONDITION_AVAILABLE, CONDITION_PROGRESSING, CONDITION_REGISTRATION_APPLIED,
    ClusterManagementAddOn, ManagedClusterAddOn,
};

use crate::core::objects::{ObjectKey, ObjectKind};
use crate::core::{ClusterRecord, ClusterState, HubCore, Record, WorkKey, WorkRecord};

/// One retained message to publish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DashboardMessage {
    pub topic: String,
    /// Compact JSON, or empty to clear the retained message.
    pub payload: Vec<u8>,
}

/// What changed since the dashboards were last published: the hub collects it batch after
/// batch and publishes at most every [`Dashboards::EVERY`], so a rollout to a whole fleet costs
/// one message per changed view per interval, not one per status.
#[derive(Debug, Default)]
pub struct Dirty {
    clusters: BTreeSet<String>,
    works: BTreeSet<WorkKey>,
    summary: bool,
    addons: BTreeSet<String>,
    /// `(add-on, cluster)`.
    cluster_addons: BTreeSet<(String, String)>,
}

impl Dirty {
    /// Notes what `records` may have changed.
    pub fn add(&mut self, records: &[Record]) {
        for r in records {
            match r {
                Record::Cluster(c) => {
                    self.clusters.insert(c.name.clone());
                    self.summary = true;
                }
                Record::Work(w) => {
                    self.works.insert(w.key.clone());
                    self.clusters.insert(w.key.cluster.clone());
                    self.summary = true;
                }
                Record::ForgetWork(key) => {
                    self.works.insert(key.clone());
                    self.clusters.insert(key.cluster.clone());
                    self.summary = true;
                }
                Record::ForgetCluster(name) => {
                    self.clusters.insert(name.clone());
                    self.summary = true;
                }
                Record::Object(o) => self.add_object(&o.key()),
                Record::ForgetObject(key) => self.add_object(key),
                Record::Counters(_)
                | Record::RemovedRevoked(_)
                | Record::UnknownPresence(..)
                | Record::SpecClock(_) => {}
            }
        }
    }

    /// An add-on or one cluster's add-on changed (other objects have no view).
    fn add_object(&mut self, key: &ObjectKey) {
        match key.kind {
            ObjectKind::ClusterManagementAddOn => {
                self.addons.insert(key.name.clone());
            }
            ObjectKind::ManagedClusterAddOn => {
                self.addons.insert(key.name.clone());
                self.cluster_addons
                    .insert((key.name.clone(), key.namespace.clone()));
            }
            _ => {}
        }
    }

    pub fn is_empty(&self) -> bool {
        self.clusters.is_empty()
            && self.works.is_empty()
            && !self.summary
            && self.addons.is_empty()
            && self.cluster_addons.is_empty()
    }
}

/// The dashboard messages for what `records` changed (call after applying them to `core`).
pub fn messages_for(core: &HubCore, records: &[Record]) -> Vec<DashboardMessage> {
    let mut dirty = Dirty::default();
    dirty.add(records);
    render(core, &dirty)
}

/// The current views of what `dirty` names.
pub fn render(core: &HubCore, dirty: &Dirty) -> Vec<DashboardMessage> {
    let source = &core.config().source_id;
    let mut out = Vec::new();
    for name in &dirty.clusters {
        let Ok(t) = topic::dashboard_cluster(source, name) else {
            continue;
        };
        // A removed cluster's retained view is cleared (an empty payload).
        let payload = core
            .cluster(name)
            .map(|c| compact(&cluster_json(core, c)))
            .unwrap_or_default();
        out.push(DashboardMessage { topic: t, payload });
    }
    for key in &dirty.works {
        let Ok(t) = topic::dashboard_work(source, &key.cluster, &key.name) else {
            continue;
        };
        let payload = core
            .work(key)
            .map(|w| compact(&work_json(w)))
            .unwrap_or_default();
        out.push(DashboardMessage { topic: t, payload });
    }
    for (addon, cluster) in &dirty.cluster_addons {
        let Ok(t) = topic::dashboard_cluster_addon(source, addon, cluster) else {
            continue;
        };
        let key = ObjectKey::new(ObjectKind::ManagedClusterAddOn, cluster, addon);
        let payload = core
            .objects()
            .get(&key)
            .and_then(|o| o.as_cluster_addon())
            .map(|m| compact(&cluster_addon_json(m)))
            .unwrap_or_default();
        out.push(DashboardMessage { topic: t, payload });
    }
    for addon in &dirty.addons {
        let Ok(t) = topic::dashboard_addon(source, addon) else {
            continue;
        };
        let payload = core
            .addons()
            .find(|a| a.metadata.name == *addon)
            .map(|a| compact(&addon_json(core, a)))
            .unwrap_or_default();
        out.push(DashboardMessage { topic: t, payload });
    }
    if dirty.summary
        && let Ok(t) = topic::dashboard_summary(source)
    {
        out.push(DashboardMessage {
            topic: t,
            payload: compact(&summary_json(core)),
        });
    }
    out
}

/// The hub's dashboard publisher state: what changed, when to publish, and what was published
/// last on each topic (a view that did not change, e.g. a cluster's view when only one of its
/// works' statuses changed, is not sent again).
#[derive(Debug, Default)]
pub struct Dashboards {
    dirty: Dirty,
    due: Option<Instant>,
    /// Topic -> hash of the payload last published there.
    published: HashMap<String, u64>,
}

impl Dashboards {
    /// Longest delay between a change and its dashboard message.
    pub const EVERY: Duration = Duration::from_millis(500);

    /// Notes a stored batch; the first change after a publish starts the interval.
    pub fn changed(&mut self, records: &[Record], now: Instant) {
        self.dirty.add(records);
        if self.due.is_none() && !self.dirty.is_empty() {
            self.due = Some(now + Self::EVERY);
        }
    }

    /// When the next publish is due (None: nothing to publish).
    pub fn due(&self) -> Option<Instant> {
        self.due
    }

    /// The messages to publish now, if due: changed views only.
    pub fn take_due(&mut self, core: &HubCore, now: Instant) -> Vec<DashboardMessage> {
        if self.due.is_none_or(|d| d > now) {
            return vec![];
        }
        self.due = None;
        let dirty = std::mem::take(&mut self.dirty);
        render(core, &dirty)
            .into_iter()
            .filter(|m| {
                if m.payload.is_empty() {
                    // A cleared view: forget it (and always send the clear).
                    self.published.remove(&m.topic);
                    return true;
                }
                let mut h = std::collections::hash_map::DefaultHasher::new();
                m.payload.hash(&mut h);
                let hash = h.finish();
                self.published.insert(m.topic.clone(), hash) != Some(hash)
            })
            .collect()
    }

    /// The broker may have lost its retained messages (a restarted external broker): send every
    /// view again the next time it changes.
    pub fn forget_published(&mut self) {
        self.published.clear();
    }
}

fn compact(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).unwrap_or_default()
}

fn state(c: &ClusterRecord) -> &'static str {
    match c.acceptance {
        ClusterState::Pending => "Pending",
        ClusterState::Accepted => "Accepted",
        ClusterState::Denied => "Denied",
    }
}

fn cluster_json(core: &HubCore, c: &ClusterRecord) -> Value {
    json!({
        "name": c.name,
        "state": state(c),
        "available": find_condition(&c.conditions, MANAGED_CLUSTER_CONDITION_AVAILABLE)
            .map(|a| a.status.as_str()),
        "labels": c.labels,
        "lastLease": c.last_lease,
        "taints": c.taints.iter().map(|t| t.key.as_str()).collect::<Vec<_>>(),
        "works": core.works_of(&c.name).count(),
    })
}

fn work_json(w: &WorkRecord) -> Value {
    let conditions: Map<String, Value> = w
        .status
        .iter()
        .flat_map(|s| s.conditions.iter())
        .map(|c| (c.type_.clone(), Value::from(c.status.as_str())))
        .collect();
    json!({
        "cluster": w.key.cluster,
        "name": w.key.name,
        "version": w.resource_version,
        "deleting": w.deleting.is_some(),
        "conditions": conditions,
        "statusUpdated": w.status_updated,
    })
}

fn addon_json(core: &HubCore, a: &ClusterManagementAddOn) -> Value {
    let (mut enabled, mut available, mut progressing, mut registered) = (0, 0, 0, 0);
    for m in core
        .cluster_addons()
        .filter(|m| m.metadata.name == a.metadata.name)
    {
        enabled += 1;
        let is_true = |t: &str| is_condition_true(&m.status.conditions, t);
        available += u64::from(is_true(CONDITION_AVAILABLE));
        progressing += u64::from(is_true(CONDITION_PROGRESSING));
        registered += u64::from(
            !m.status.registrations.is_empty() && is_true(CONDITION_REGISTRATION_APPLIED),
        );
    }
    json!({
        "name": a.metadata.name,
        "install": a.spec.install_strategy.type_,
        "enabled": enabled,
        "available": available,
        "progressing": progressing,
        "registered": registered,
    })
}

fn cluster_addon_json(m: &ManagedClusterAddOn) -> Value {
    let conditions: Map<String, Value> = m
        .status
        .conditions
        .iter()
        .map(|c| (c.type_.clone(), Value::from(c.status.as_str())))
        .collect();
    json!({
        "addon": m.metadata.name,
        "cluster": m.metadata.namespace,
        "namespace": m.status.namespace,
        "conditions": conditions,
        "deleting": m.metadata.deletion_timestamp.is_some(),
    })
}

fn summary_json(core: &HubCore) -> Value {
    let (mut pending, mut accepted, mut denied, mut available) = (0, 0, 0, 0);
    for c in core.clusters() {
        match c.acceptance {
            ClusterState::Pending => pending += 1,
            ClusterState::Denied => denied += 1,
            ClusterState::Accepted => {
                accepted += 1;
                if is_condition_true(&c.conditions, MANAGED_CLUSTER_CONDITION_AVAILABLE) {
                    available += 1;
                }
            }
        }
    }
    let (mut total, mut applied, mut deleting) = (0, 0, 0);
    for w in core.works() {
        total += 1;
        if w.deleting.is_some() {
            deleting += 1;
        }
        if w.status
            .as_ref()
            .is_some_and(|s| is_condition_true(&s.conditions, WORK_APPLIED))
        {
            applied += 1;
        }
    }
    json!({
        "clusters": {"pending": pending, "accepted": accepted, "denied": denied, "available": available},
        "works": {"total": total, "applied": applied, "deleting": deleting},
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::testkit::*;

    fn payload(msgs: &[DashboardMessage], topic: &str) -> Option<Value> {
        msgs.iter()
            .find(|m| m.topic == topic)
            .map(|m| serde_json::from_slice(&m.payload).unwrap_or(Value::Null))
    }

    fn resource_id_of(core: &HubCore, cluster: &str, work: &str) -> String {
        core.work(&WorkKey::new(cluster, work))
            .map(|w| w.resource_id.clone())
            .unwrap_or_default()
    }

    #[test]
    fn an_applied_status_updates_the_work_cluster_and_summary_views() {
        let mut core = core_with_work("a", "web");
        let id = resource_id_of(&core, "a", "web");
        let change = step(&mut core, status_input("a", &id, 1, "5", applied()), 1);
        let msgs = messages_for(&core, &change.records);
        let work = payload(&msgs, "ocm-edge/ocm-edge/dashboard/works/a/web").unwrap();
        assert_eq!(work["conditions"]["Applied"], "True");
        let cluster = payload(&msgs, "ocm-edge/ocm-edge/dashboard/clusters/a").unwrap();
        assert_eq!(
            (cluster["state"].as_str(), cluster["works"].as_u64()),
            (Some("Accepted"), Some(1))
        );
        let summary = payload(&msgs, "ocm-edge/ocm-edge/dashboard/summary").unwrap();
        assert_eq!(summary["works"]["applied"], 1);
    }

    #[test]
    fn changes_are_published_once_per_interval_and_unchanged_views_are_not_sent_again() {
        let mut core = core_with_work("a", "web");
        let id = resource_id_of(&core, "a", "web");
        let mut dashboards = Dashboards::default();
        let t0 = Instant::now();
        let first = step(&mut core, status_input("a", &id, 1, "5", applied()), 1);
        dashboards.changed(&first.records, t0);
        assert!(dashboards.take_due(&core, t0).is_empty(), "not due yet");
        let due = dashboards.due().unwrap();
        assert_eq!(due, t0 + Dashboards::EVERY);
        let sent = dashboards.take_due(&core, due);
        let topics: Vec<&str> = sent.iter().map(|m| m.topic.as_str()).collect();
        assert_eq!(topics.len(), 3, "{topics:?}");
        assert_eq!(dashboards.due(), None);

        // A newer status changes the work's view only: the cluster and the summary are the same.
        let mut both = applied();
        both.conditions
            .push(ocm_edge_schemas::api::meta::Condition::new(
                "Available",
                ocm_edge_schemas::api::meta::ConditionStatus::True,
                "ResourcesAvailable",
                "All resources are available",
            ));
        let second = step(&mut core, status_input("a", &id, 1, "6", both), 2);
        dashboards.changed(&second.records, due);
        let sent = dashboards.take_due(&core, due + Dashboards::EVERY);
        let topics: Vec<&str> = sent.iter().map(|m| m.topic.as_str()).collect();
        assert_eq!(topics, ["ocm-edge/ocm-edge/dashboard/works/a/web"]);

        // After a reconnect everything that changes is sent again.
        dashboards.forget_published();
        dashboards.changed(&second.records, due);
        assert_eq!(dashboards.take_due(&core, due + Dashboards::EVERY).len(), 3);
    }

    #[test]
    fn a_forgotten_work_clears_its_retained_view_and_counters_alone_publish_nothing() {
        let mut core = core_with_work("a", "web");
        let records = vec![Record::ForgetWork(WorkKey::new("a", "web"))];
        core.apply(&records);
        let msgs = messages_for(&core, &records);
        let work = msgs
            .iter()
            .find(|m| m.topic == "ocm-edge/ocm-edge/dashboard/works/a/web")
            .unwrap();
        assert!(work.payload.is_empty());
        let counters = core.count("x");
        assert!(messages_for(&core, &counters.records).is_empty());
    }
}
