//! Retained dashboard topics for MQTT dashboards (MQTT Explorer, Node-RED, Grafana's MQTT source).
//!
//! After each stored batch the hub republishes, retained and as compact JSON, the views the batch
//! touched:
//! - `ocm-edge/<source>/dashboard/summary`:
//!   `{"clusters":{"pending":0,"accepted":3,"denied":0,"available":3},"works":{"total":3,"applied":3,"deleting":0}}`
//! - `ocm-edge/<source>/dashboard/clusters/<cluster>`:
//!   `{"name","state","available":"True|False|Unknown","labels",{...},"lastLease","taints":[keys],"works"}`
//! - `ocm-edge/<source>/dashboard/works/<cluster>/<work>`:
//!   `{"cluster","name","version","deleting","conditions":{"Applied":"True",...},"statusUpdated"}`;
//!   an empty retained payload once the work is forgotten (which clears it on the broker).
//!
//! Dashboards are a convenience: they must not rely on every retained message arriving (a broker
//! may cap what it replays to a new wildcard subscriber, or keep retained messages only in
//! memory; DESIGN.md 4). Pure: no IO here.

use std::collections::BTreeSet;

use ocm_edge_schemas::api::cluster::MANAGED_CLUSTER_CONDITION_AVAILABLE;
use ocm_edge_schemas::api::meta::{find_condition, is_condition_true};
use ocm_edge_schemas::api::work::WORK_APPLIED;
use ocm_edge_schemas::wire::topic;
use serde_json::{Map, Value, json};

use crate::core::{ClusterRecord, ClusterState, HubCore, Record, WorkKey, WorkRecord};

/// One retained message to publish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DashboardMessage {
    pub topic: String,
    /// Compact JSON, or empty to clear the retained message.
    pub payload: Vec<u8>,
}

/// The dashboard messages for what `records` changed (call after applying them to `core`).
pub fn messages_for(core: &HubCore, records: &[Record]) -> Vec<DashboardMessage> {
    if records.is_empty() {
        return vec![];
    }
    let source = &core.config().source_id;
    let mut clusters = BTreeSet::new();
    let mut works: BTreeSet<WorkKey> = BTreeSet::new();
    let mut structural = false;
    for r in records {
        match r {
            Record::Cluster(c) => {
                clusters.insert(c.name.clone());
                structural = true;
            }
            Record::Work(w) => {
                works.insert(w.key.clone());
                clusters.insert(w.key.cluster.clone());
                structural = true;
            }
            Record::ForgetWork(key) => {
                works.insert(key.clone());
                clusters.insert(key.cluster.clone());
                structural = true;
            }
            Record::Counters(_)
            | Record::UnknownPresence(..)
            | Record::Object(_)
            | Record::ForgetObject(_) => {}
        }
    }
    let mut out = Vec::new();
    for name in &clusters {
        if let (Some(c), Ok(t)) = (core.cluster(name), topic::dashboard_cluster(source, name)) {
            out.push(DashboardMessage {
                topic: t,
                payload: compact(&cluster_json(core, c)),
            });
        }
    }
    for key in &works {
        let Ok(t) = topic::dashboard_work(source, &key.cluster, &key.name) else {
            continue;
        };
        let payload = core
            .work(key)
            .map(|w| compact(&work_json(w)))
            .unwrap_or_default();
        out.push(DashboardMessage { topic: t, payload });
    }
    if structural && let Ok(t) = topic::dashboard_summary(source) {
        out.push(DashboardMessage {
            topic: t,
            payload: compact(&summary_json(core)),
        });
    }
    out
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

    #[test]
    fn an_applied_status_updates_the_work_cluster_and_summary_views() {
        let mut core = core_with_work("a", "web");
        let id = core
            .work(&WorkKey::new("a", "web"))
            .unwrap()
            .resource_id
            .clone();
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
