//! Link failures between the agent and a real broker: reconnect, presence with connection
//! sequence numbers, spec resync and outbox flush; plus readiness, hub view and API health.

use std::time::Duration;

use crate::support::*;
use ocm_edge_agent::{AgentConfig, ApplierConfig, Registration, start_agent};
use ocm_edge_schemas::api::cluster::ManagedCluster;
use ocm_edge_schemas::api::meta::{ConditionStatus, find_condition};
use ocm_edge_schemas::api::work::ManifestBundleStatus;
use ocm_edge_schemas::wire::cluster_events::{ClusterEnvelope, ClusterEvent};
use ocm_edge_schemas::wire::extensions as ext;
use ocm_edge_schemas::wire::resync::ResourceVersionList;
use ocm_edge_schemas::wire::works::Header;
use ocm_edge_schemas::wire::{data_as, data_json};

const CLUSTER: &str = "7ff1a8f4-8811-49b4-8c19-9271bc51975e";
const RID: &str = "55c61e54-a3f6-563d-9fec-b1fe297bdfdb";

fn agent_events() -> String {
    format!("sources/maestro/consumers/{CLUSTER}/agentevents")
}
fn source_events() -> String {
    format!("sources/maestro/consumers/{CLUSTER}/sourceevents")
}

fn config(url: &str, dir: &std::path::Path) -> AgentConfig {
    let mut cfg = AgentConfig::new(CLUSTER, url, dir);
    cfg.source_id = "maestro".into();
    cfg.accept_unsigned_from = Some("maestro".into());
    cfg.applier = ApplierConfig::Sim {
        ready_delay: Duration::ZERO,
    };
    cfg.reconnect_min = Duration::from_millis(50);
    cfg.reconnect_max = Duration::from_millis(200);
    cfg.reconcile_interval = Duration::from_millis(100);
    cfg.health_interval = Duration::from_millis(100);
    cfg
}

fn presence(ev: &cloudevents::Event) -> (String, u64) {
    let d = data_json(ev).unwrap().unwrap();
    (
        d["state"].as_str().unwrap().to_owned(),
        d["connectionSeq"].as_u64().unwrap(),
    )
}

#[tokio::test]
async fn after_a_link_cut_the_agent_reconnects_with_a_new_sequence_number_resyncs_and_flushes_what_changed_offline()
 {
    let broker = start_broker();
    let proxy = LinkProxy::start(&broker).await;
    let dir = tempfile::tempdir().unwrap();
    let mut hub = HubPeer::connect(&broker, &agent_events()).await;
    let agent = start_agent(config(&proxy.url, dir.path())).await.unwrap();
    let mut counters = agent.counters();
    let birth = hub
        .next_event("presences.status.update_request", |_| true)
        .await;
    assert_eq!(presence(&birth), ("online".into(), 1));
    wait_counters(&mut counters, "subscribed", |c| c.spec_resyncs_sent >= 1).await;
    hub.publish_event(&maestro_spec(), &source_events()).await;
    hub.next_event("status.update_request", |e| ext::resource_id(e) == Ok(RID))
        .await;

    // The link breaks and stays down: the broker publishes the will of connection 1.
    proxy.block(true);
    proxy.cut();
    let will = hub
        .next_event("presences.status.update_request", |e| {
            presence(e).0 == "offline"
        })
        .await;
    assert_eq!(presence(&will), ("offline".into(), 1));
    wait_counters(&mut counters, "disconnected", |c| !c.connected).await;

    // Offline, the API server fails: the status changes and waits in the outbox.
    let sim = agent.sim().unwrap();
    sim.set_api_healthy(false);
    sim.modify("Deployment", "default", "maestro-e2e-upgrade-test", |d| {
        d["spec"]["replicas"] = serde_json::json!(3)
    });
    let errors = counters.borrow().apply_errors;
    wait_counters(&mut counters, "failing applies offline", |c| {
        c.apply_errors > errors && !c.connected
    })
    .await;

    proxy.block(false);
    let birth = hub
        .next_event("presences.status.update_request", |e| {
            presence(e).0 == "online"
        })
        .await;
    assert!(
        presence(&birth).1 >= 2,
        "a new connection has a new sequence number"
    );
    let resync = hub
        .next_event("spec.resync_request", |e| {
            data_as::<ResourceVersionList>(e, "ResourceVersionList")
                .is_ok_and(|l| !l.resource_versions.is_empty())
        })
        .await;
    let list: ResourceVersionList = data_as(&resync, "ResourceVersionList").unwrap();
    assert_eq!(list.resource_versions.len(), 1);
    assert_eq!(list.resource_versions[0].resource_id, RID);
    assert_eq!(list.resource_versions[0].resource_version, 1);
    let failed = hub
        .next_event("status.update_request", |e| {
            let s: ManifestBundleStatus = data_as(e, "ManifestBundleStatus").unwrap();
            find_condition(&s.conditions, "Applied")
                .is_some_and(|c| c.status == ConditionStatus::False)
        })
        .await;
    assert_eq!(ext::original_source(&failed).unwrap(), "maestro");

    // The API server returns: drift is corrected and the next status says Applied again.
    sim.set_api_healthy(true);
    hub.next_event("status.update_request", |e| {
        let s: ManifestBundleStatus = data_as(e, "ManifestBundleStatus").unwrap();
        find_condition(&s.conditions, "Applied").is_some_and(|c| c.status == ConditionStatus::True)
    })
    .await;
    assert_eq!(
        sim.get("Deployment", "default", "maestro-e2e-upgrade-test")
            .unwrap()["spec"]["replicas"],
        0
    );
    agent.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_join_request_stops_once_the_hub_accepts_and_api_health_changes_are_reported() {
    let broker = start_broker();
    let proxy = LinkProxy::start(&broker).await;
    let dir = tempfile::tempdir().unwrap();
    let mut hub = HubPeer::connect(&broker, &agent_events()).await;
    let agent = start_agent(config(&proxy.url, dir.path())).await.unwrap();
    let mut counters = agent.counters();
    hub.next_event("managedclusters.spec.create_request", |_| true)
        .await;

    let mut view = ManagedCluster::new(CLUSTER);
    view.spec.hub_accepts_client = true;
    let event = ClusterEvent::HubView(ClusterEnvelope {
        header: Header::new("maestro", chrono::Utc::now()),
        cluster: CLUSTER.into(),
        original_source: "maestro".into(),
        data: view,
    })
    .to_event()
    .unwrap();
    hub.publish_event(&event, &source_events()).await;
    wait_counters(&mut counters, "accepted", |c| {
        c.registration == Registration::Accepted
    })
    .await;

    // A reconnect does not ask to join again.
    proxy.cut();
    wait_counters(&mut counters, "reconnected", |c| {
        c.connections >= 2 && c.connected
    })
    .await;
    assert_eq!(counters.borrow().join_requests, 1);

    agent.sim().unwrap().set_api_healthy(false);
    let status = hub
        .next_event("managedclusters.status.update_request", |e| {
            let c: ManagedCluster = data_as(e, "ManagedCluster").unwrap();
            find_condition(&c.status.conditions, "ManagedClusterConditionAvailable")
                .is_some_and(|c| c.status == ConditionStatus::False)
        })
        .await;
    let c: ManagedCluster = data_as(&status, "ManagedCluster").unwrap();
    let cond = find_condition(&c.status.conditions, "ManagedClusterConditionAvailable").unwrap();
    assert_eq!(cond.reason, "ManagedClusterKubeAPIServerUnavailable");
    agent.shutdown().await.unwrap();
}

#[tokio::test]
async fn simulated_workloads_report_progressing_then_ready_with_well_known_feedback() {
    let broker = start_broker();
    let dir = tempfile::tempdir().unwrap();
    let mut hub = HubPeer::connect(&broker, &agent_events()).await;
    let mut cfg = config(&broker, dir.path());
    cfg.applier = ApplierConfig::Sim {
        ready_delay: Duration::from_millis(300),
    };
    let agent = start_agent(cfg).await.unwrap();
    let mut counters = agent.counters();
    wait_counters(&mut counters, "subscribed", |c| c.spec_resyncs_sent >= 1).await;

    let mut spec = maestro_spec();
    let mut data = data_json(&spec).unwrap().unwrap();
    data["manifests"][0]["spec"]["replicas"] = serde_json::json!(2);
    data["manifestConfigs"][0]["feedbackRules"] = serde_json::json!([{"type": "WellKnownStatus"}]);
    spec.set_data("application/json", data);
    hub.publish_event(&spec, &source_events()).await;

    let status_with = |progressing: ConditionStatus| {
        move |e: &cloudevents::Event| {
            let s: ManifestBundleStatus = data_as(e, "ManifestBundleStatus").unwrap();
            find_condition(&s.conditions, "Progressing").is_some_and(|c| c.status == progressing)
        }
    };
    hub.next_event("status.update_request", status_with(ConditionStatus::True))
        .await;
    let ready = hub
        .next_event("status.update_request", status_with(ConditionStatus::False))
        .await;
    let s: ManifestBundleStatus = data_as(&ready, "ManifestBundleStatus").unwrap();
    let values = &s.resource_status[0].status_feedback.values;
    let ready_replicas = values.iter().find(|v| v.name == "ReadyReplicas").unwrap();
    assert_eq!(ready_replicas.field_value.integer, Some(2));
    assert_eq!(
        ext::status_hash(&ready).unwrap(),
        ocm_edge_schemas::wire::status_hash::bundle_status_hash(&s)
    );
    agent.shutdown().await.unwrap();
}

#[tokio::test]
async fn an_update_that_drops_a_manifest_removes_its_object_and_a_big_bundle_fits_in_one_message() {
    let broker = start_broker();
    let dir = tempfile::tempdir().unwrap();
    let mut hub = HubPeer::connect(&broker, &agent_events()).await;
    let agent = start_agent(config(&broker, dir.path())).await.unwrap();
    let mut counters = agent.counters();
    wait_counters(&mut counters, "subscribed", |c| c.spec_resyncs_sent >= 1).await;

    let big = "x".repeat(400 * 1024);
    let mut v1 = maestro_spec();
    let mut data = data_json(&v1).unwrap().unwrap();
    data["manifests"].as_array_mut().unwrap().push(serde_json::json!(
        {"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big","namespace":"default"},"data":{"blob": big}}
    ));
    v1.set_data("application/json", data.clone());
    hub.publish_event(&v1, &source_events()).await;
    hub.next_event("status.update_request", |e| {
        ext::resource_version(e) == Ok(1)
    })
    .await;
    let sim = agent.sim().unwrap();
    assert_eq!(
        sim.get("ConfigMap", "default", "big").unwrap()["data"]["blob"]
            .as_str()
            .unwrap()
            .len(),
        400 * 1024
    );

    let mut v2 = maestro_spec();
    ext::set_resource_version(&mut v2, 2).unwrap();
    hub.publish_event(&v2, &source_events()).await;
    let status = hub
        .next_event("status.update_request", |e| {
            ext::resource_version(e) == Ok(2)
        })
        .await;
    let s: ManifestBundleStatus = data_as(&status, "ManifestBundleStatus").unwrap();
    assert_eq!(s.resource_status.len(), 1);
    assert!(
        sim.get("ConfigMap", "default", "big").is_none(),
        "dropped from the bundle, so deleted"
    );
    assert!(
        sim.get("Deployment", "default", "maestro-e2e-upgrade-test")
            .is_some()
    );
    agent.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_bundle_over_500_kib_or_without_a_resourceid_is_refused_and_nothing_is_applied() {
    let broker = start_broker();
    let dir = tempfile::tempdir().unwrap();
    let hub = HubPeer::connect(&broker, &agent_events()).await;
    let agent = start_agent(config(&broker, dir.path())).await.unwrap();
    let mut counters = agent.counters();
    wait_counters(&mut counters, "subscribed", |c| c.spec_resyncs_sent >= 1).await;

    // 600 KiB of manifests: over the limit the hub and the CLI enforce, so the agent refuses it
    // too, whoever published it.
    let mut big = maestro_spec();
    let mut data = data_json(&big).unwrap().unwrap();
    data["manifests"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!(
            {"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big","namespace":"default"},
             "data":{"blob": "x".repeat(600 * 1024)}}
        ));
    big.set_data("application/json", data);
    hub.publish_event(&big, &source_events()).await;
    wait_counters(&mut counters, "the big bundle refused", |c| {
        c.specs_refused >= 1
    })
    .await;

    let mut nameless = maestro_spec();
    ext::set_resource_id(&mut nameless, "");
    hub.publish_event(&nameless, &source_events()).await;
    let seen = wait_counters(&mut counters, "the nameless bundle refused", |c| {
        c.specs_refused >= 2
    })
    .await;
    assert_eq!(seen.specs_applied, 0, "{seen:?}");
    assert_eq!(seen.statuses_published, 0, "nothing to report: {seen:?}");
    let sim = agent.sim().unwrap();
    assert!(sim.get("ConfigMap", "default", "big").is_none());
    assert!(
        sim.get("Deployment", "default", "maestro-e2e-upgrade-test")
            .is_none()
    );
    agent.shutdown().await.unwrap();
}
