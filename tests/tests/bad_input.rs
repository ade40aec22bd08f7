//! Malformed MQTT payloads sent to the hub's and the agent's topics are counted and dropped:
//! nothing is stored, nothing crashes, and the next good message is handled as usual.

use std::time::Duration;

use cloudevents::AttributesReader;
use ocm_edge_agent::{AgentConfig, ApplierConfig, start_agent};
use ocm_edge_schemas::wire::{MqttMessage, decode, encode, extensions as ext, structured};
use ocm_edge_tests::broker::TestBroker;
use ocm_edge_tests::probe::Probe;
use ocm_edge_tests::wait::wait_until;

const WAIT: Duration = Duration::from_secs(30);
const SPEC_VECTOR: &[u8] = include_bytes!("../fixtures/cloudevents.spec.maestro.json");

fn props(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Messages that are not usable CloudEvents of the expected shape, all on `topic`.
fn malformed_messages(
    topic: &str,
    source: &str,
    cluster: &str,
) -> Vec<(&'static str, MqttMessage)> {
    let base = |ty: &str| {
        props(&[
            ("ce-specversion", "1.0"),
            ("ce-id", "bad-1"),
            ("ce-source", source),
            ("ce-type", ty),
            ("ce-clustername", cluster),
        ])
    };
    let msg = |payload: &[u8],
               content_type: Option<&str>,
               user_properties: Vec<(String, String)>| MqttMessage {
        topic: topic.into(),
        payload: payload.to_vec(),
        content_type: content_type.map(str::to_owned),
        user_properties,
    };
    let spec_type = "io.open-cluster-management.works.v1alpha1.manifestbundles.spec.create_request";
    let status_type =
        "io.open-cluster-management.works.v1alpha1.manifestbundles.status.update_request";
    let mut wrong_version = base(spec_type);
    wrong_version.extend(props(&[
        ("ce-resourceid", "55c61e54-a3f6-563d-9fec-b1fe297bdfdb"),
        ("ce-resourceversion", "not-a-number"),
    ]));
    let mut wrong_data = base(spec_type);
    wrong_data.extend(props(&[
        ("ce-resourceid", "55c61e54-a3f6-563d-9fec-b1fe297bdfdb"),
        ("ce-resourceversion", "1"),
        ("ce-originalsource", ""),
    ]));
    let mut wrong_status = base(status_type);
    wrong_status.extend(props(&[
        ("ce-resourceid", "55c61e54-a3f6-563d-9fec-b1fe297bdfdb"),
        ("ce-resourceversion", "1"),
        ("ce-originalsource", source),
        ("ce-sequenceid", "1"),
    ]));
    vec![
        (
            "garbage bytes, no properties",
            msg(&[0xff, 0x00, 0xfe, 0x13, 0x37], None, vec![]),
        ),
        (
            "JSON without ce-specversion",
            msg(
                br#"{"manifests":[]}"#,
                Some("application/json"),
                props(&[("ce-type", spec_type), ("ce-id", "x")]),
            ),
        ),
        (
            "payload that is not JSON",
            msg(b"{not json", Some("application/json"), base(spec_type)),
        ),
        (
            "resourceversion that is not a number",
            msg(
                br#"{"manifests":[]}"#,
                Some("application/json"),
                wrong_version,
            ),
        ),
        (
            "data of the wrong type",
            msg(
                br#"{"manifests":"not-a-list","deleteOption":42}"#,
                Some("application/json"),
                wrong_data,
            ),
        ),
        (
            "status data of the wrong type",
            msg(
                br#"{"conditions":"yes","resourceStatus":7}"#,
                Some("application/json"),
                wrong_status,
            ),
        ),
    ]
}

#[tokio::test]
async fn malformed_mqtt_payloads_to_an_agent_are_counted_and_dropped_and_it_keeps_working() {
    let broker = TestBroker::start_async().await;
    let spec = structured::parse(SPEC_VECTOR).unwrap();
    let cluster = ext::cluster_name(&spec).unwrap().to_owned();
    let source_events = format!("sources/maestro/consumers/{cluster}/sourceevents");

    let mut peer = Probe::connect(&broker.url()).await.unwrap();
    peer.subscribe("sources/maestro/consumers/+/agentevents")
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = AgentConfig::new(&cluster, broker.url(), dir.path());
    cfg.source_id = "maestro".into();
    cfg.applier = ApplierConfig::Sim {
        ready_delay: Duration::from_millis(200),
    };
    cfg.reconcile_interval = Duration::from_millis(500);
    let agent = start_agent(cfg).await.expect("agent starts");
    peer.recv_matching(WAIT, |m| {
        decode(m).is_ok_and(|e| e.ty().ends_with("spec.resync_request"))
    })
    .await
    .expect("the agent subscribes and asks for a resync");

    // A status event on sourceevents is well formed, just not for an agent: not part of this list.
    let bad: Vec<_> = malformed_messages(&source_events, "maestro", &cluster)
        .into_iter()
        .filter(|(what, _)| !what.starts_with("status"))
        .collect();
    for (what, m) in &bad {
        peer.publish(m)
            .await
            .unwrap_or_else(|e| panic!("publish {what}: {e}"));
    }
    let counters = agent.counters();
    let expected = bad.len() as u64;
    wait_until("the agent to count every malformed message", WAIT, || {
        let c = counters.borrow().clone();
        async move { c.dropped_malformed >= expected }
    })
    .await
    .unwrap_or_else(|e| panic!("{e}; counters: {:?}", counters.borrow()));

    let c = counters.borrow().clone();
    assert_eq!(
        c.dropped_malformed, expected,
        "each malformed message counted once: {c:?}"
    );
    assert_eq!(
        c.bundles_held, 0,
        "nothing stored from malformed messages: {c:?}"
    );
    assert_eq!(c.specs_applied, 0, "{c:?}");
    let sim = agent.sim().unwrap();
    assert!(
        sim.objects().is_empty(),
        "nothing applied to the cluster: {:?}",
        sim.objects()
    );
    assert!(!agent.is_finished(), "the agent is still running");

    // A good spec after all that is applied as usual.
    peer.publish(&encode(&spec, source_events).unwrap())
        .await
        .unwrap();
    wait_until("the good spec to be applied", WAIT, || {
        let sim = sim.clone();
        async move {
            sim.get("Deployment", "default", "maestro-e2e-upgrade-test")
                .is_some()
        }
    })
    .await
    .unwrap();
    agent.shutdown().await.unwrap();
}
