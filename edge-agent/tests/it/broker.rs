//! The agent against a real embedded broker (rmqtt, MQTT 5) with a raw client playing the hub.

use std::time::Duration;

use crate::support::*;
use cloudevents::{AttributesReader, AttributesWriter, Event};
use ocm_edge_agent::{AgentConfig, ApplierConfig, start_agent};
use ocm_edge_schemas::api::meta::is_condition_true;
use ocm_edge_schemas::api::work::ManifestBundleStatus;
use ocm_edge_schemas::wire::extensions as ext;
use ocm_edge_schemas::wire::status_hash::bundle_status_hash;
use ocm_edge_schemas::wire::{MqttMessage, data_as};

const MAESTRO_CLUSTER: &str = "7ff1a8f4-8811-49b4-8c19-9271bc51975e";
const MAESTRO_RESOURCE_ID: &str = "55c61e54-a3f6-563d-9fec-b1fe297bdfdb";

pub(crate) fn maestro_config(url: &str, dir: &std::path::Path) -> AgentConfig {
    let mut cfg = AgentConfig::new(MAESTRO_CLUSTER, url, dir);
    cfg.source_id = "maestro".into();
    cfg.accept_unsigned_from = Some("maestro".into());
    cfg.applier = ApplierConfig::Sim {
        ready_delay: Duration::ZERO,
    };
    cfg.reconnect_min = Duration::from_millis(50);
    cfg
}

pub(crate) fn spec_topic() -> String {
    format!("sources/maestro/consumers/{MAESTRO_CLUSTER}/sourceevents")
}

fn status_of(ev: &Event) -> ManifestBundleStatus {
    data_as(ev, "ManifestBundleStatus").expect("status data")
}

#[tokio::test]
async fn the_maestro_spec_vector_is_applied_and_answered_with_a_status_maestro_accepts() {
    let url = start_broker();
    let dir = tempfile::tempdir().unwrap();
    let mut hub = HubPeer::connect(
        &url,
        &format!("sources/maestro/consumers/{MAESTRO_CLUSTER}/agentevents"),
    )
    .await;
    let agent = start_agent(maestro_config(&url, dir.path())).await.unwrap();
    let mut counters = agent.counters();

    // After its SUBACK the agent asks for a spec resync (with nothing held yet).
    let resync = hub
        .next_event(".manifestbundles.spec.resync_request", |_| true)
        .await;
    assert_eq!(ext::cluster_name(&resync).unwrap(), MAESTRO_CLUSTER);
    wait_counters(&mut counters, "subscribed", |c| c.spec_resyncs_sent >= 1).await;

    hub.publish_event(&maestro_spec(), &spec_topic()).await;

    let status = hub
        .next_event(".manifestbundles.status.update_request", |e| {
            ext::resource_id(e) == Ok(MAESTRO_RESOURCE_ID)
        })
        .await;
    assert_eq!(
        status.ty(),
        "io.open-cluster-management.works.v1alpha1.manifestbundles.status.update_request"
    );
    assert_eq!(
        status.source().to_string(),
        format!("{MAESTRO_CLUSTER}-work-agent")
    );
    assert_eq!(ext::original_source(&status).unwrap(), "maestro");
    assert_eq!(ext::resource_version(&status).unwrap(), 1);
    assert_eq!(ext::cluster_name(&status).unwrap(), MAESTRO_CLUSTER);
    assert!(ext::sequence_id(&status).unwrap().parse::<u64>().is_ok());
    let data = status_of(&status);
    assert_eq!(
        ext::status_hash(&status).unwrap(),
        bundle_status_hash(&data)
    );
    assert!(
        is_condition_true(&data.conditions, "Applied"),
        "{:?}",
        data.conditions
    );
    let applied = data
        .conditions
        .iter()
        .find(|c| c.type_ == "Applied")
        .unwrap();
    assert_eq!(applied.observed_generation, 1);
    let manifest = &data.resource_status[0];
    assert_eq!(manifest.resource_meta.kind, "Deployment");
    assert_eq!(manifest.resource_meta.resource, "deployments");
    assert!(is_condition_true(&manifest.conditions, "Applied"));
    // JSONPaths feedback ".status" comes back as jsonRaw.
    let feedback = &manifest.status_feedback.values;
    assert_eq!(feedback[0].name, "status");
    assert!(feedback[0].field_value.json_raw.is_some(), "{feedback:?}");

    let sim = agent.sim().unwrap();
    let deployment = sim
        .get("Deployment", "default", "maestro-e2e-upgrade-test")
        .expect("applied");
    assert_eq!(deployment["spec"]["replicas"], 0);
    agent.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_delete_removes_the_objects_and_is_answered_with_the_deleted_condition() {
    let url = start_broker();
    let dir = tempfile::tempdir().unwrap();
    let mut hub = HubPeer::connect(
        &url,
        &format!("sources/maestro/consumers/{MAESTRO_CLUSTER}/agentevents"),
    )
    .await;
    let agent = start_agent(maestro_config(&url, dir.path())).await.unwrap();
    let mut counters = agent.counters();
    wait_counters(&mut counters, "subscribed", |c| c.spec_resyncs_sent >= 1).await;
    hub.publish_event(&maestro_spec(), &spec_topic()).await;
    wait_counters(&mut counters, "applied", |c| {
        c.bundles_held == 1 && c.statuses_published >= 1
    })
    .await;

    let mut delete = maestro_spec();
    delete
        .set_type("io.open-cluster-management.works.v1alpha1.manifestbundles.spec.delete_request");
    ext::set_deletion_timestamp(&mut delete, chrono::Utc::now());
    hub.publish_event(&delete, &spec_topic()).await;

    let status = hub
        .next_event(".manifestbundles.status.update_request", |e| {
            is_condition_true(&status_of(e).conditions, "Deleted")
        })
        .await;
    let deleted = status_of(&status);
    let cond = deleted
        .conditions
        .iter()
        .find(|c| c.type_ == "Deleted")
        .unwrap();
    assert_eq!(cond.reason, "ManifestsDeleted");
    assert_eq!(ext::original_source(&status).unwrap(), "maestro");
    let c = wait_counters(&mut counters, "forgotten", |c| {
        c.bundles_deleted == 1 && c.bundles_held == 0
    })
    .await;
    assert_eq!(c.objects_deleted, 1);
    assert!(
        agent
            .sim()
            .unwrap()
            .get("Deployment", "default", "maestro-e2e-upgrade-test")
            .is_none()
    );
    agent.shutdown().await.unwrap();
}

#[tokio::test]
async fn malformed_messages_are_counted_and_dropped_and_the_agent_keeps_working() {
    let url = start_broker();
    let dir = tempfile::tempdir().unwrap();
    let mut hub = HubPeer::connect(
        &url,
        &format!("sources/maestro/consumers/{MAESTRO_CLUSTER}/agentevents"),
    )
    .await;
    let agent = start_agent(maestro_config(&url, dir.path())).await.unwrap();
    let mut counters = agent.counters();
    wait_counters(&mut counters, "subscribed", |c| c.spec_resyncs_sent >= 1).await;

    // Not a CloudEvent at all.
    hub.publish_raw(MqttMessage {
        topic: spec_topic(),
        payload: b"{not json".to_vec(),
        content_type: None,
        user_properties: vec![],
    })
    .await;
    // A spec event whose data is not a bundle.
    let mut bad = maestro_spec();
    bad.set_data("application/json", serde_json::json!({"manifests": "nope"}));
    hub.publish_event(&bad, &spec_topic()).await;
    wait_counters(&mut counters, "two malformed", |c| c.dropped_malformed >= 2).await;

    hub.publish_event(&maestro_spec(), &spec_topic()).await;
    hub.next_event(".manifestbundles.status.update_request", |e| {
        ext::resource_id(e) == Ok(MAESTRO_RESOURCE_ID)
    })
    .await;
    agent.shutdown().await.unwrap();
}

#[tokio::test]
async fn stale_specs_are_dropped_and_a_status_resync_republishes_every_status() {
    let url = start_broker();
    let dir = tempfile::tempdir().unwrap();
    let mut hub = HubPeer::connect(
        &url,
        &format!("sources/maestro/consumers/{MAESTRO_CLUSTER}/agentevents"),
    )
    .await;
    let agent = start_agent(maestro_config(&url, dir.path())).await.unwrap();
    let mut counters = agent.counters();
    wait_counters(&mut counters, "subscribed", |c| c.spec_resyncs_sent >= 1).await;

    let mut v2 = maestro_spec();
    ext::set_resource_version(&mut v2, 2).unwrap();
    hub.publish_event(&v2, &spec_topic()).await;
    hub.next_event(".status.update_request", |e| {
        ext::resource_version(e) == Ok(2)
    })
    .await;
    hub.publish_event(&maestro_spec(), &spec_topic()).await; // version 1 < 2
    wait_counters(&mut counters, "stale dropped", |c| {
        c.specs_dropped_stale == 1
    })
    .await;

    let mut resync = Event::default();
    resync.set_type(
        "io.open-cluster-management.works.v1alpha1.manifestbundles.status.resync_request",
    );
    resync.set_source("maestro");
    resync.set_id("r1");
    ext::set_cluster_name(&mut resync, MAESTRO_CLUSTER);
    resync.set_data("application/json", serde_json::json!({"statusHashes": []}));
    hub.publish_event(&resync, &spec_topic()).await;
    let again = hub
        .next_event(".status.update_request", |e| {
            ext::resource_version(e) == Ok(2)
        })
        .await;
    assert_eq!(ext::resource_id(&again).unwrap(), MAESTRO_RESOURCE_ID);
    wait_counters(&mut counters, "resync answered", |c| {
        c.status_resyncs_received == 1
    })
    .await;
    agent.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_agent_announces_itself_with_birth_join_request_lease_and_cluster_status() {
    let url = start_broker();
    let dir = tempfile::tempdir().unwrap();
    let mut hub = HubPeer::connect(&url, "sources/ocm-edge/consumers/edge-1/agentevents").await;
    let mut cfg = AgentConfig::new("edge-1", &*url, dir.path());
    cfg.labels.insert("env".into(), "prod".into());
    cfg.claims.insert("region".into(), "eu".into());
    cfg.lease_duration_seconds = 5;
    let agent = start_agent(cfg).await.unwrap();

    let birth = hub
        .next_event("presences.status.update_request", |_| true)
        .await;
    let data = ocm_edge_schemas::wire::data_json(&birth).unwrap().unwrap();
    assert_eq!(data["state"], "online");
    assert_eq!(data["connectionSeq"], 1);
    let join = hub
        .next_event("managedclusters.spec.create_request", |_| true)
        .await;
    let cluster: ocm_edge_schemas::api::cluster::ManagedCluster =
        data_as(&join, "ManagedCluster").unwrap();
    assert_eq!(cluster.metadata.name, "edge-1");
    assert_eq!(cluster.metadata.labels["env"], "prod");
    assert_eq!(cluster.metadata.labels["ocm-edge.io/simulated"], "true");
    assert_eq!(cluster.spec.lease_duration_seconds, 5);
    assert!(
        cluster
            .status
            .cluster_claims
            .iter()
            .any(|c| c.name == "region" && c.value == "eu")
    );
    let status = hub
        .next_event("managedclusters.status.update_request", |_| true)
        .await;
    let cluster: ocm_edge_schemas::api::cluster::ManagedCluster =
        data_as(&status, "ManagedCluster").unwrap();
    assert!(is_condition_true(
        &cluster.status.conditions,
        "ManagedClusterConditionAvailable"
    ));
    let lease = hub.next_event("leases.spec.update_request", |_| true).await;
    assert_eq!(ext::cluster_name(&lease).unwrap(), "edge-1");
    agent.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_killed_agent_leaves_a_will_with_its_connection_sequence_number() {
    let url = start_broker();
    let dir = tempfile::tempdir().unwrap();
    let mut hub = HubPeer::connect(&url, "sources/ocm-edge/consumers/edge-2/agentevents").await;
    let mut cfg = AgentConfig::new("edge-2", &*url, dir.path());
    cfg.keepalive = Duration::from_secs(5);
    let agent = start_agent(cfg).await.unwrap();
    let birth = hub
        .next_event("presences.status.update_request", |_| true)
        .await;
    let seq = ocm_edge_schemas::wire::data_json(&birth).unwrap().unwrap()["connectionSeq"].clone();
    agent.kill().await;
    let will = hub
        .next_event("presences.status.update_request", |e| {
            ocm_edge_schemas::wire::data_json(e).unwrap().unwrap()["state"] == "offline"
        })
        .await;
    assert_eq!(
        ocm_edge_schemas::wire::data_json(&will).unwrap().unwrap()["connectionSeq"],
        seq
    );
}

#[tokio::test]
async fn a_graceful_shutdown_says_offline_with_the_same_sequence_number_as_the_birth() {
    let url = start_broker();
    let dir = tempfile::tempdir().unwrap();
    let mut hub = HubPeer::connect(&url, "sources/ocm-edge/consumers/edge-3/agentevents").await;
    let agent = start_agent(AgentConfig::new("edge-3", &*url, dir.path()))
        .await
        .unwrap();
    let birth = hub
        .next_event("presences.status.update_request", |_| true)
        .await;
    let seq = ocm_edge_schemas::wire::data_json(&birth).unwrap().unwrap()["connectionSeq"].clone();
    agent.shutdown().await.unwrap();
    let bye = hub
        .next_event("presences.status.update_request", |e| {
            ocm_edge_schemas::wire::data_json(e).unwrap().unwrap()["state"] == "offline"
        })
        .await;
    assert_eq!(
        ocm_edge_schemas::wire::data_json(&bye).unwrap().unwrap()["connectionSeq"],
        seq
    );
}

#[tokio::test]
async fn with_a_password_the_agent_logs_in_with_its_cluster_name_as_username() {
    let users = std::collections::HashMap::from([
        ("edge-4".to_owned(), "s3cret".to_owned()),
        ("hub".to_owned(), "hub".to_owned()),
    ]);
    let url = start_broker_with_auth(Some(users));
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = AgentConfig::new("edge-4", &*url, dir.path());
    cfg.broker_password = Some("s3cret".into());
    let agent = start_agent(cfg).await.unwrap();
    let mut counters = agent.counters();
    wait_counters(&mut counters, "connected with credentials", |c| c.connected).await;
    agent.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_join_request_sent_while_no_hub_listened_is_repeated_until_a_hub_answers() {
    let url = start_broker();
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = AgentConfig::new("edge-late", &*url, dir.path());
    // The default lease (600 s, renewed every 200 s): the join request has its own schedule.
    cfg.join_retry = Duration::from_millis(500);
    cfg.health_interval = Duration::from_millis(200);
    let agent = start_agent(cfg).await.unwrap();
    let mut counters = agent.counters();
    // The first join request goes out with nobody subscribed: the broker drops it.
    wait_counters(&mut counters, "first join request", |c| {
        c.connected && c.join_requests >= 1
    })
    .await;

    // A hub that starts listening afterwards still hears the cluster ask to join: a join
    // request queued after the hub subscribed arrives. (One queued before may still reach it,
    // as publishing only queues; that one proves nothing, so it is skipped.)
    let mut hub = HubPeer::connect(&url, "sources/ocm-edge/consumers/edge-late/agentevents").await;
    let queued_before = counters.borrow().join_requests;
    loop {
        let join = hub
            .next_event("managedclusters.spec.create_request", |_| true)
            .await;
        assert_eq!(ext::cluster_name(&join).unwrap(), "edge-late");
        if counters.borrow().join_requests > queued_before {
            break;
        }
    }
    assert!(counters.borrow().join_requests >= 2);
    agent.shutdown().await.unwrap();
}
