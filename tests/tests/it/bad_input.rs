//! Malformed MQTT payloads sent to the hub's and the agent's topics are counted and dropped:
//! nothing is stored, nothing crashes, and the next good message is handled as usual.

use std::time::Duration;

use cloudevents::AttributesReader;
use ocm_edge_agent::{AgentConfig, ApplierConfig, start_agent};
use ocm_edge_schemas::wire::{MqttMessage, chunks, decode, encode, extensions as ext, structured};
use ocm_edge_tests::broker::TestBroker;
use ocm_edge_tests::fleet::{Fleet, WAIT as FLEET_WAIT};
use ocm_edge_tests::forge::{agent_events_topic, applied_status, status_update};
use ocm_edge_tests::manifests::{deployment, namespace};
use ocm_edge_tests::probe::Probe;
use ocm_edge_tests::wait::wait_until;

const WAIT: Duration = FLEET_WAIT;
const SPEC_VECTOR: &[u8] = include_bytes!("../../fixtures/cloudevents.spec.maestro.json");

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

/// A sim agent served by source `maestro` on a fresh broker, and a raw peer in maestro's place
/// that hears the agent's events; returned once the agent has asked for its resync.
struct MaestroPeer {
    _broker: TestBroker,
    peer: Probe,
    _dir: tempfile::TempDir,
    agent: ocm_edge_agent::AgentHandle,
    cluster: String,
    source_events: String,
}

impl MaestroPeer {
    async fn start(spec: &cloudevents::Event, configure: impl FnOnce(&mut AgentConfig)) -> Self {
        let broker = TestBroker::start_async().await;
        let cluster = ext::cluster_name(spec).unwrap().to_owned();
        let source_events = format!("sources/maestro/consumers/{cluster}/sourceevents");
        let mut peer = Probe::connect(&broker.url()).await.unwrap();
        peer.subscribe("sources/maestro/consumers/+/agentevents")
            .await
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = AgentConfig::new(&cluster, broker.url(), dir.path());
        cfg.source_id = "maestro".into();
        cfg.accept_unsigned_from = Some("maestro".into());
        cfg.applier = ApplierConfig::Sim {
            ready_delay: Duration::from_millis(200),
        };
        configure(&mut cfg);
        let agent = start_agent(cfg).await.expect("agent starts");
        peer.recv_matching(WAIT, |m| {
            decode(m).is_ok_and(|e| e.ty().ends_with("spec.resync_request"))
        })
        .await
        .expect("the agent subscribes and asks for a resync");
        MaestroPeer {
            _broker: broker,
            peer,
            _dir: dir,
            agent,
            cluster,
            source_events,
        }
    }

    /// `spec` on this agent's topic as a chunked transfer (a head, then chunks of `chunk_bytes`).
    fn chunked(&self, spec: &cloudevents::Event, chunk_bytes: u32) -> Vec<MqttMessage> {
        let whole = encode(spec, self.source_events.clone()).unwrap();
        chunks::split(whole, chunk_bytes, &std::collections::BTreeSet::new())
    }
}

/// Waits until `agent` has applied [`large_spec`]'s ConfigMap.
async fn wait_blob_applied(agent: &ocm_edge_agent::AgentHandle, what: &str) {
    let sim = agent.sim().unwrap();
    wait_until(what, WAIT, || {
        let sim = sim.clone();
        async move { sim.get("ConfigMap", "default", "blob").is_some() }
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn malformed_mqtt_payloads_to_an_agent_are_counted_and_dropped_and_it_keeps_working() {
    let spec = structured::parse(SPEC_VECTOR).unwrap();
    let MaestroPeer {
        _broker,
        peer,
        _dir,
        agent,
        cluster,
        source_events,
    } = MaestroPeer::start(&spec, |cfg| {
        cfg.reconcile_interval = Duration::from_millis(500);
    })
    .await;

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

#[tokio::test]
async fn malformed_mqtt_payloads_to_the_hub_are_counted_and_dropped_and_nothing_is_stored() {
    let mut fleet = Fleet::start().await;
    fleet.agent("edge-1").start().await;
    fleet.accept("edge-1").await;
    fleet
        .create_work(
            "web",
            &["edge-1"],
            vec![namespace("web"), deployment("web", "web", 1, "nginx:1.27")],
        )
        .await;
    let before_view = fleet
        .wait_work_condition("edge-1", "web", "Applied")
        .await
        .unwrap();
    // The real agent goes away so that only the messages below reach the hub about this work.
    fleet.stop_agent("edge-1").await;
    let before = fleet.stats().await;
    let clusters_before = fleet.admin().await.list_clusters().await.unwrap();

    let topic = agent_events_topic("ocm-edge", "edge-1");
    let rid = before_view.resource_id.clone();
    let mut bad: Vec<(&str, MqttMessage)> =
        malformed_messages(&topic, "edge-1-work-agent", "edge-1")
            .into_iter()
            .filter(|(what, _)| !what.starts_with("data of the wrong type"))
            .collect();
    // Statuses for the real work that are broken in their attributes or data.
    for (what, m) in &mut bad {
        for (k, v) in &mut m.user_properties {
            if k == "ce-resourceid" {
                *v = rid.clone();
            }
            if k == "ce-originalsource" && what.starts_with("status") {
                *v = "ocm-edge".into();
            }
        }
    }
    let bad_join = MqttMessage {
        topic: agent_events_topic("ocm-edge", "intruder"),
        payload: br#"{"metadata":"not-an-object","spec":5}"#.to_vec(),
        content_type: Some("application/json".into()),
        user_properties: props(&[
            ("ce-specversion", "1.0"),
            ("ce-id", "bad-join"),
            ("ce-source", "intruder"),
            (
                "ce-type",
                "cluster.open-cluster-management.io.v1.managedclusters.spec.create_request",
            ),
            ("ce-clustername", "intruder"),
            ("ce-originalsource", ""),
        ]),
    };
    bad.push(("join request whose data is not a ManagedCluster", bad_join));

    let peer = Probe::connect(fleet.broker_url()).await.unwrap();
    for (what, m) in &bad {
        peer.publish(m)
            .await
            .unwrap_or_else(|e| panic!("publish {what}: {e}"));
    }
    let expected = before.counters.get(MALFORMED).copied().unwrap_or(0) + bad.len() as u64;
    let admin = fleet.admin().await;
    wait_until("the hub to count every malformed message", WAIT, || async {
        admin
            .stats()
            .await
            .is_ok_and(|s| s.counters.get(MALFORMED).copied().unwrap_or(0) >= expected)
    })
    .await
    .unwrap_or_else(|e| {
        panic!(
            "{e}; sent: {:?}",
            bad.iter().map(|(w, _)| *w).collect::<Vec<_>>()
        )
    });

    let after = fleet.stats().await;
    assert_eq!(
        after.counters.get(MALFORMED).copied().unwrap_or(0),
        expected,
        "each malformed message counted once: {after:?}"
    );
    assert_eq!(after.works, before.works, "no work stored or dropped");
    assert_eq!(
        after.counters.get("statusesAccepted"),
        before.counters.get("statusesAccepted"),
        "no status accepted from malformed messages"
    );
    assert_eq!(
        fleet.admin().await.list_clusters().await.unwrap(),
        clusters_before,
        "no cluster stored"
    );
    let view = fleet.admin().await.get_work("edge-1", "web").await.unwrap();
    assert_eq!(
        view.conditions, before_view.conditions,
        "the work's status is untouched"
    );

    // The hub still works: a good status for the work, signed with the cluster's agent key
    // (bound at acceptance), is accepted.
    let mut good = applied_status();
    good.conditions[0].reason = "AfterTheStorm".into();
    let mut good = status_update("ocm-edge", "edge-1", &rid, 1, good);
    ocm_edge_agent::registration::key::AgentKey::load_or_create(&fleet.agent_dir("edge-1"))
        .unwrap()
        .sign(&mut good);
    peer.publish(&good).await.unwrap();
    fleet
        .wait_work("edge-1", "web", "the good status stored", |w| {
            w.conditions.iter().any(|c| c.reason == "AfterTheStorm")
        })
        .await
        .unwrap();
    fleet.shutdown().await;
}

/// The hub's counter of unreadable messages.
const MALFORMED: &str = "messagesMalformed";

/// The maestro spec vector with a ConfigMap of `kib` KiB added, so that it needs chunks.
fn large_spec(kib: usize) -> cloudevents::Event {
    use cloudevents::EventBuilder;
    let mut spec = structured::parse(SPEC_VECTOR).unwrap();
    let mut data = ocm_edge_schemas::wire::data_json(&spec).unwrap().unwrap();
    let blob: String = (0..kib * 16)
        .map(|i| format!("{i:08}-{:054x}\n", i * 31))
        .collect();
    data["manifests"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "blob", "namespace": "default"},
            "data": {"blob": blob}
        }));
    spec = cloudevents::EventBuilderV10::from(spec)
        .data("application/json", data)
        .build()
        .unwrap();
    spec
}

#[tokio::test]
async fn forged_chunked_transfers_are_refused_by_the_agent_and_a_good_one_is_applied() {
    use ocm_edge_schemas::wire::chunks::{CHUNK_PROPERTY, HEAD_PROPERTY};

    let spec = large_spec(8);
    let maestro = MaestroPeer::start(&spec, |cfg| cfg.chunk_bytes = Some(1024)).await;
    let good = maestro.chunked(&spec, 1024);
    // The broker and the data dir stay in `maestro` (partly moved) until the test ends.
    let MaestroPeer { peer, agent, .. } = maestro;
    assert!(good.len() > 8, "8 KiB in 1 KiB chunks: {}", good.len());
    let set = |m: &MqttMessage, name: &str, value: String| {
        let mut m = m.clone();
        m.user_properties.retain(|(k, _)| k != name);
        m.user_properties.push((name.to_owned(), value));
        m
    };
    // 1. A head announcing more than any spec may be: refused before anything is stored.
    let d = "e".repeat(64);
    let huge = set(
        &good[0],
        HEAD_PROPERTY,
        format!("{d} 1000 {}", 3 * 1024 * 1024),
    );
    // 2. A good head, then a chunk twice the size the agent asked for.
    let fat_digest = "f".repeat(64);
    let fat_head = set(&good[0], HEAD_PROPERTY, format!("{fat_digest} 2 3000"));
    let fat_chunk = MqttMessage {
        payload: vec![b'x'; 2048],
        ..set(&good[1], CHUNK_PROPERTY, format!("{fat_digest} 0 2"))
    };
    // 3. A chunk whose transfer the agent never heard of.
    let orphan = set(&good[1], CHUNK_PROPERTY, format!("{} 0 2", "0".repeat(64)));
    // 4. Every chunk of the real transfer, one of them altered: the digest does not match.
    let mut corrupt = good.clone();
    corrupt[3].payload[10] ^= 0x20;
    for m in [huge, fat_head, fat_chunk, orphan].iter().chain(&corrupt) {
        peer.publish(m).await.unwrap();
    }
    let counters = agent.counters();
    wait_until("the agent to refuse three transfers", WAIT, || {
        let c = counters.borrow().clone();
        async move { c.transfers_refused >= 3 && c.chunks_dropped >= 1 }
    })
    .await
    .unwrap_or_else(|e| panic!("{e}; counters: {:?}", counters.borrow()));
    let c = counters.borrow().clone();
    assert_eq!(c.transfers_refused, 3, "{c:?}");
    assert_eq!(c.transfers_completed, 0, "{c:?}");
    assert_eq!(c.bundles_held, 0, "nothing stored: {c:?}");
    let sim = agent.sim().unwrap();
    assert!(sim.objects().is_empty(), "{:?}", sim.objects());

    // The real transfer, whole, is applied.
    for m in &good {
        peer.publish(m).await.unwrap();
    }
    wait_blob_applied(&agent, "the chunked spec to be applied").await;
    let c = counters.borrow().clone();
    assert_eq!(c.transfers_completed, 1, "{c:?}");
    assert_eq!(c.specs_applied, 1, "{c:?}");
    agent.shutdown().await.unwrap();
}

#[tokio::test]
async fn an_agent_whose_chunked_transfer_stalls_asks_for_the_missing_chunks_only() {
    use ocm_edge_schemas::wire::chunks::HELD_CHUNKS_EXTENSION;

    let spec = large_spec(8);
    let maestro = MaestroPeer::start(&spec, |cfg| {
        cfg.chunk_bytes = Some(1024);
        cfg.transfer_stall = Duration::from_secs(1);
        cfg.health_interval = Duration::from_millis(200);
    })
    .await;
    let pieces = maestro.chunked(&spec, 1024);
    // The broker and the data dir stay in `maestro` (partly moved) until the test ends.
    let MaestroPeer {
        mut peer, agent, ..
    } = maestro;
    // The head and three chunks arrive; the rest never does (a broker dropped them).
    for m in &pieces[..4] {
        peer.publish(m).await.unwrap();
    }
    let digest = chunks::digest(&encode(&spec, "t").unwrap().payload);
    let asked = peer
        .recv_matching(WAIT, |m| {
            decode(m).is_ok_and(|e| {
                e.ty().ends_with("spec.resync_request")
                    && e.extension(HELD_CHUNKS_EXTENSION).is_some()
            })
        })
        .await
        .expect("the agent asks for the rest of the stalled transfer");
    let held = decode(&asked).unwrap();
    assert_eq!(
        held.extension(HELD_CHUNKS_EXTENSION)
            .map(ToString::to_string),
        Some(format!("{digest}:0-2")),
        "it lists exactly the chunks it holds"
    );
    // The rest (a head again, as a resend starts with one, and the missing chunks) completes it.
    peer.publish(&pieces[0]).await.unwrap();
    for m in &pieces[4..] {
        peer.publish(m).await.unwrap();
    }
    wait_blob_applied(&agent, "the stalled spec to be applied").await;
    assert_eq!(agent.counters().borrow().transfers_completed, 1);
    agent.shutdown().await.unwrap();
}
