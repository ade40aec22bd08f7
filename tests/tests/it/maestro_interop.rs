//! Interoperability with maestro (the OCM project's MQTT/CloudEvents work server) and OCM work
//! agents, on real maestro events (`tests/fixtures/`, the same as
//! `schemas/tests/fixtures/vectors/maestro/`).

use std::time::Duration;

use cloudevents::{AttributesReader, Event};
use ocm_edge_agent::{AgentConfig, ApplierConfig, start_agent};
use ocm_edge_schemas::api::work::ManifestBundleStatus;
use ocm_edge_schemas::wire::status_hash::{bundle_status_hash, status_hash_json};
use ocm_edge_schemas::wire::{MqttMessage, decode, encode, extensions as ext, structured};
use ocm_edge_tests::broker::TestBroker;
use ocm_edge_tests::fleet::{Fleet, FleetOptions, has_true_condition};
use ocm_edge_tests::forge::agent_events_topic;
use ocm_edge_tests::probe::Probe;
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(30);
const SPEC_VECTOR: &[u8] = include_bytes!("../../fixtures/cloudevents.spec.maestro.json");
const WORK_TYPE_PREFIX: &str = "io.open-cluster-management.works.v1alpha1.manifestbundles.";

fn event_of(m: &MqttMessage) -> Option<Event> {
    decode(m).ok()
}

fn is_type(m: &MqttMessage, suffix: &str) -> bool {
    event_of(m).is_some_and(|e| e.ty() == format!("{WORK_TYPE_PREFIX}{suffix}"))
}

#[tokio::test]
async fn an_agent_with_source_maestro_applies_maestros_spec_and_answers_with_a_status_maestro_accepts()
 {
    let broker = TestBroker::start_async().await;
    let spec = structured::parse(SPEC_VECTOR).expect("the maestro spec vector parses");
    let cluster = ext::cluster_name(&spec).unwrap().to_owned();
    let resource_id = ext::resource_id(&spec).unwrap().to_owned();

    // maestro: listens on every consumer's agentevents, publishes on the cluster's sourceevents.
    let mut maestro = Probe::connect(&broker.url()).await.unwrap();
    maestro
        .subscribe("sources/maestro/consumers/+/agentevents")
        .await
        .unwrap();

    let dir = tempfile::tempdir().unwrap();
    let mut cfg = AgentConfig::new(&cluster, broker.url(), dir.path());
    cfg.source_id = "maestro".into();
    cfg.accept_unsigned_from = Some("maestro".into());
    cfg.applier = ApplierConfig::Sim {
        ready_delay: Duration::from_millis(200),
    };
    cfg.reconcile_interval = Duration::from_millis(500);
    let agent = start_agent(cfg).await.expect("agent starts");

    // The agent asks for a spec resync once it is subscribed: from then on it hears maestro.
    let resync = maestro
        .recv_matching(WAIT, |m| is_type(m, "spec.resync_request"))
        .await
        .expect("the agent sends a spec resync request to maestro after subscribing");
    assert_eq!(
        resync.topic,
        format!("sources/maestro/consumers/{cluster}/agentevents")
    );

    let msg = encode(
        &spec,
        format!("sources/maestro/consumers/{cluster}/sourceevents"),
    )
    .unwrap();
    maestro.publish(&msg).await.unwrap();

    // The Deployment lands on the (simulated) cluster as maestro wrote it.
    let sim = agent.sim().expect("sim applier");
    ocm_edge_tests::wait::wait_until("the Deployment on the simulated cluster", WAIT, || {
        let sim = sim.clone();
        async move {
            sim.get("Deployment", "default", "maestro-e2e-upgrade-test")
                .is_some()
        }
    })
    .await
    .unwrap();
    let deployed = sim
        .get("Deployment", "default", "maestro-e2e-upgrade-test")
        .unwrap();
    assert_eq!(
        deployed.pointer("/spec/template/spec/containers/0/image"),
        Some(&json!("quay.io/nginx/nginx-unprivileged:latest"))
    );

    // The status event: everything maestro checks before it stores a status.
    let status_msg = maestro
        .recv_matching(WAIT, |m| {
            event_of(m).is_some_and(|e| {
                e.ty() == format!("{WORK_TYPE_PREFIX}status.update_request")
                    && ext::resource_id(&e).ok() == Some(resource_id.as_str())
                    && data_applied(&e)
            })
        })
        .await
        .expect("a status update with Applied=True for maestro's resource");
    assert_eq!(
        status_msg.topic,
        format!("sources/maestro/consumers/{cluster}/agentevents")
    );
    assert_eq!(status_msg.content_type.as_deref(), Some("application/json"));
    let status = decode(&status_msg).unwrap();
    assert_eq!(status.specversion().to_string(), "1.0");
    assert_eq!(
        ext::original_source(&status).unwrap(),
        "maestro",
        "maestro rejects any other originalsource"
    );
    assert_eq!(ext::cluster_name(&status).unwrap(), cluster);
    assert_eq!(ext::resource_version(&status).unwrap(), 1);
    let seq: u64 = ext::sequence_id(&status)
        .unwrap()
        .parse()
        .expect("sequenceid is a decimal snowflake id");
    assert!(seq > 0);
    // Every ce- extension name is [A-Za-z0-9] (Go receivers drop the message otherwise).
    for (k, _) in &status_msg.user_properties {
        if let Some(name) = k.strip_prefix("ce-") {
            assert!(
                name.bytes().all(|b| b.is_ascii_alphanumeric()),
                "bad extension name {k}"
            );
        }
    }

    let data: Value = ocm_edge_schemas::wire::data_json(&status).unwrap().unwrap();
    let bundle: ManifestBundleStatus =
        serde_json::from_value(data.clone()).expect("data is a ManifestBundleStatus");
    let claimed = ext::status_hash(&status).unwrap().to_owned();
    assert_eq!(
        claimed,
        bundle_status_hash(&bundle),
        "statushash is the hash of the status carried"
    );
    // The same hash from the raw JSON re-shaped as a ManifestWork status (no struct round trip).
    let work_status = json!({
        "conditions": data.get("conditions").cloned().unwrap_or(json!([])),
        "resourceStatus": {"manifests": data.get("resourceStatus").cloned().unwrap_or(json!([]))},
    });
    assert_eq!(claimed, status_hash_json(&work_status));

    let manifest = &bundle.resource_status[0];
    assert_eq!(manifest.resource_meta.kind, "Deployment");
    assert_eq!(manifest.resource_meta.group, "apps");
    assert_eq!(manifest.resource_meta.resource, "deployments");
    assert_eq!(manifest.resource_meta.name, "maestro-e2e-upgrade-test");
    assert_eq!(manifest.resource_meta.namespace, "default");
    // The spec asked for JSONPaths feedback named "status" on `.status`.
    assert!(
        manifest
            .status_feedback
            .values
            .iter()
            .any(|v| v.name == "status"),
        "JSONPaths feedback `status` is reported: {:?}",
        manifest.status_feedback
    );

    agent.shutdown().await.unwrap();
}

fn data_applied(e: &Event) -> bool {
    ocm_edge_schemas::wire::data_json(e)
        .ok()
        .flatten()
        .and_then(|d| d.get("conditions").cloned())
        .and_then(|c| c.as_array().cloned())
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Applied" && c["status"] == "True")
        })
}

const AGENT_STATUS_VECTOR: &[u8] = include_bytes!("../../fixtures/cloudevents.agent.json");

#[tokio::test]
async fn the_hub_accepts_a_status_event_shaped_like_an_ocm_work_agents() {
    let vector = structured::parse(AGENT_STATUS_VECTOR).expect("the agent status vector parses");
    let cluster = ext::cluster_name(&vector).unwrap().to_owned();
    // A hub with maestro's source id, so the vector's originalsource and topics fit as they are.
    let fleet = Fleet::start_with(FleetOptions {
        source_id: "maestro".into(),
        ..FleetOptions::default()
    })
    .await;
    // The cluster joins without an agent key (OCM's work agent has none and signs nothing), so
    // the hub takes its events unsigned once it is accepted.
    let joiner = ocm_edge_agent::events::AgentIdentity {
        cluster: cluster.clone(),
        agent_id: format!("{cluster}-work-agent"),
    };
    let join = joiner
        .join_request(
            &ocm_edge_schemas::api::cluster::ManagedCluster::new(cluster.clone()),
            chrono::Utc::now(),
        )
        .unwrap();
    let ocm_agent = Probe::connect(fleet.broker_url()).await.unwrap();
    ocm_agent
        .publish(&encode(&join, agent_events_topic("maestro", &cluster)).unwrap())
        .await
        .unwrap();
    ocm_edge_tests::wait::wait_until("the hub to hear the join request", WAIT, || async {
        fleet.admin().await.get_cluster(&cluster).await.is_ok()
    })
    .await
    .unwrap();
    fleet.accept(&cluster).await;

    let spec = structured::parse(SPEC_VECTOR).unwrap();
    let manifests = ocm_edge_schemas::wire::data_json(&spec).unwrap().unwrap()["manifests"]
        .as_array()
        .unwrap()
        .clone();
    let written = fleet
        .create_work("upgrade-test", &[&cluster], manifests)
        .await;
    let work = &written[0].work;
    assert_eq!(work.version, 1);

    // The vector as an OCM work agent would send it for this work: only the resourceid differs.
    let mut status = vector.clone();
    ext::set_resource_id(&mut status, work.resource_id.clone());
    let before = fleet
        .stats()
        .await
        .counters
        .get("statusesAccepted")
        .copied()
        .unwrap_or(0);
    ocm_agent
        .publish(&encode(&status, agent_events_topic("maestro", &cluster)).unwrap())
        .await
        .unwrap();

    let view = fleet
        .wait_work(
            &cluster,
            "upgrade-test",
            "the OCM agent's status stored",
            |w| has_true_condition(&w.conditions, "Applied"),
        )
        .await
        .unwrap();
    let applied = view
        .conditions
        .iter()
        .find(|c| c.type_ == "Applied")
        .unwrap();
    assert_eq!(applied.reason, "AppliedManifestWorkComplete");
    assert_eq!(applied.observed_generation, 1);
    assert_eq!(view.resource_status.len(), 1);
    let meta = &view.resource_status[0].resource_meta;
    assert_eq!(
        (
            meta.kind.as_str(),
            meta.name.as_str(),
            meta.namespace.as_str()
        ),
        ("Deployment", "maestro-e2e-upgrade-test", "default")
    );
    let after = fleet
        .stats()
        .await
        .counters
        .get("statusesAccepted")
        .copied()
        .unwrap_or(0);
    assert_eq!(after, before + 1, "counted as an accepted status");
    fleet.shutdown().await;
}
