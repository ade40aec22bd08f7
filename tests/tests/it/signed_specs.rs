//! Desired state signed end to end: an agent applies only what its hub signed, whoever else can
//! publish on its topics. A rogue client on the broker (the embedded broker, and Mosquitto with
//! anonymous access and no ACL) records what the hub sends a cluster and tries, in turn: a spec
//! of its own without a signature, the hub's spec with its payload changed, a spec signed by
//! another hub, a hub view carrying another hub's key, and the hub's own older spec replayed.
//! The agent refuses each (logged and counted), and its cluster keeps exactly what the hub sent.
//! The other way round, the hub takes an accepted cluster's statuses only when the key its agent
//! joined with (shown by `cluster get`, bound at `cluster accept`) signed them.

use chrono::Utc;
use ocm_edge_agent::registration::trust::{Checked, HubSigner, HubTrust, TrustError};
use ocm_edge_hub::pki::HubPki;
use ocm_edge_hub::pki::signing::EventSigner;
use ocm_edge_schemas::admin::CreateWork;
use ocm_edge_schemas::wire::MqttMessage;
use ocm_edge_schemas::wire::signature::{
    SIGNATURE_EXTENSION, SIGNER_CHAIN_EXTENSION, SIGNER_EXTENSION, property,
};
use ocm_edge_tests::fleet::{Fleet, FleetOptions, WAIT};
use ocm_edge_tests::forge::source_events_topic;
use ocm_edge_tests::manifests::config_map;
use ocm_edge_tests::mosquitto::{Mosquitto, require_mosquitto};
use ocm_edge_tests::probe::Probe;
use ocm_edge_tests::wait::wait_until;
use serde_json::json;

const CLUSTER: &str = "edge-1";
const HUB_VIEW: &str = "cluster.open-cluster-management.io.v1.managedclusters.spec.update_request";
const SPEC: &str = "io.open-cluster-management.works.v1alpha1.manifestbundles.spec.update_request";

fn is_spec(m: &MqttMessage) -> bool {
    m.user_property("ce-type")
        .is_some_and(|t| t.contains("manifestbundles.spec."))
}

fn version(m: &MqttMessage) -> Option<&str> {
    m.user_property("ce-resourceversion")
}

fn without_signature(mut m: MqttMessage) -> MqttMessage {
    let gone = [
        property(SIGNATURE_EXTENSION),
        property(SIGNER_EXTENSION),
        property(SIGNER_CHAIN_EXTENSION),
    ];
    m.user_properties.retain(|(k, _)| !gone.contains(k));
    m
}

/// `m` with every `from` in its payload replaced by `to`.
fn with_payload_changed(mut m: MqttMessage, from: &str, to: &str) -> MqttMessage {
    let text = String::from_utf8(m.payload).unwrap();
    assert!(text.contains(from), "{from:?} is not in {text}");
    m.payload = text.replace(from, to).into_bytes();
    m
}

/// A signer of another hub (its own CA).
fn other_hub() -> (tempfile::TempDir, EventSigner) {
    let dir = tempfile::tempdir().unwrap();
    let pki = HubPki::load_or_create(&dir.path().join("pki"), Utc::now()).unwrap();
    let signer = EventSigner::load_or_create(&pki, Utc::now()).unwrap();
    (dir, signer)
}

fn settings(value: &str) -> Vec<serde_json::Value> {
    vec![config_map("default", "settings", json!({ "mode": value }))]
}

async fn mode_on_cluster(fleet: &Fleet) -> Option<String> {
    fleet
        .sim(CLUSTER)
        .get("ConfigMap", "default", "settings")
        .and_then(|o| {
            o.pointer("/data/mode")
                .and_then(|v| v.as_str())
                .map(str::to_owned)
        })
}

/// Waits until the cluster's ConfigMap says `mode`.
async fn wait_mode(fleet: &Fleet, mode: &str) {
    fleet
        .wait_sim(CLUSTER, &format!("mode {mode}"), |sim| {
            sim.get("ConfigMap", "default", "settings")
                .filter(|o| o.pointer("/data/mode") == Some(&json!(mode)))
        })
        .await
        .unwrap();
}

/// Overwrites the work with `mode`.
async fn update_settings(fleet: &Fleet, mode: &str) {
    fleet
        .write_work(CreateWork {
            name: "settings".into(),
            clusters: vec![CLUSTER.into()],
            manifests: settings(mode),
            overwrite: true,
            ..CreateWork::default()
        })
        .await;
}

/// Waits until the agent has reconciled once more (a replay had its chance to show).
async fn wait_reconcile(fleet: &Fleet) {
    let reconciles = fleet.counters(CLUSTER).reconciles;
    wait_until("a reconcile", WAIT, || {
        let r = fleet.counters(CLUSTER).reconciles;
        async move { r > reconciles }
    })
    .await
    .unwrap();
}

/// The whole attack against a fleet whose hub runs and whose agent `edge-1` is accepted.
async fn forged_and_replayed_specs_are_refused(fleet: &Fleet) {
    let topic = source_events_topic(&fleet.options().source_id, CLUSTER);
    let mut rogue = Probe::connect(fleet.broker_url()).await.unwrap();
    rogue.subscribe(&topic).await.unwrap();

    fleet
        .create_work("settings", &[CLUSTER], settings("genuine-1"))
        .await;
    let v1 = rogue
        .recv_matching(WAIT, |m| is_spec(m) && version(m) == Some("1"))
        .await
        .expect("the rogue client sees the hub's spec");
    wait_mode(fleet, "genuine-1").await;
    update_settings(fleet, "genuine-2").await;
    let v2 = rogue
        .recv_matching(WAIT, |m| is_spec(m) && version(m) == Some("2"))
        .await
        .expect("the rogue client sees the hub's update");
    wait_mode(fleet, "genuine-2").await;

    let before = fleet.counters(CLUSTER);
    let (_other_dir, other) = other_hub();
    // 1. A newer version of its own, unsigned.
    let unsigned = without_signature(with_payload_changed(
        v2.clone(),
        "genuine-2",
        "evil-unsigned",
    ));
    let unsigned = MqttMessage {
        user_properties: unsigned
            .user_properties
            .into_iter()
            .map(|(k, v)| {
                if k == "ce-resourceversion" {
                    (k, "9".to_owned())
                } else {
                    (k, v)
                }
            })
            .collect(),
        ..unsigned
    };
    // 2. The hub's signature kept, the payload changed.
    let tampered = with_payload_changed(v2.clone(), "genuine-2", "evil-tampered");
    // 3. Signed by another hub's key.
    let mut foreign = without_signature(with_payload_changed(
        v2.clone(),
        "genuine-2",
        "evil-foreign",
    ));
    other.sign(&mut foreign, false);
    // 4. The same, with the other hub's certificate chain, as a hub view would carry it.
    let mut foreign_chain =
        without_signature(with_payload_changed(v2.clone(), "genuine-2", "evil-chain"));
    other.sign(&mut foreign_chain, true);
    for forged in [&unsigned, &tampered, &foreign, &foreign_chain] {
        rogue.publish(forged).await.unwrap();
    }
    wait_until("the agent to refuse the four forged specs", WAIT, || {
        let refused = fleet.counters(CLUSTER).refused_signature;
        async move { refused >= before.refused_signature + 4 }
    })
    .await
    .unwrap();
    // 5. The hub's own first spec, replayed: signed, but older than what the agent holds.
    rogue.publish(&v1).await.unwrap();
    wait_until("the agent to drop the replayed spec as stale", WAIT, || {
        let stale = fleet.counters(CLUSTER).specs_dropped_stale;
        async move { stale > before.specs_dropped_stale }
    })
    .await
    .unwrap();

    let after = fleet.counters(CLUSTER);
    assert_eq!(
        after.refused_signature,
        before.refused_signature + 4,
        "exactly the four forged specs are refused by signature"
    );
    assert_eq!(
        after.specs_applied, before.specs_applied,
        "nothing forged was applied"
    );
    // Past a reconcile, the cluster still has the hub's version.
    wait_reconcile(fleet).await;
    assert_eq!(mode_on_cluster(fleet).await.as_deref(), Some("genuine-2"));
    let work = fleet
        .admin()
        .await
        .get_work(CLUSTER, "settings")
        .await
        .unwrap();
    assert_eq!(work.version, 2, "the hub's work is untouched");
}

#[tokio::test]
async fn on_the_embedded_broker_an_agent_applies_only_what_its_hub_signed() {
    let mut fleet = Fleet::start().await;
    fleet.start_agents(&[CLUSTER]).await;
    fleet.accept(CLUSTER).await;
    forged_and_replayed_specs_are_refused(&fleet).await;
    fleet.shutdown().await;
}

#[tokio::test]
async fn through_mosquitto_without_acl_an_agent_applies_only_what_its_hub_signed() {
    let Some(program) = require_mosquitto(
        "through_mosquitto_without_acl_an_agent_applies_only_what_its_hub_signed",
    ) else {
        return;
    };
    // Anonymous access, no ACL: anyone may publish on any cluster's topics.
    let broker = Mosquitto::start(&program).expect("mosquitto starts");
    let mut fleet = Fleet::on_broker(broker.url(), FleetOptions::default());
    fleet.start_hub().await;
    fleet.start_agents(&[CLUSTER]).await;
    fleet.accept(CLUSTER).await;
    forged_and_replayed_specs_are_refused(&fleet).await;
    fleet.shutdown().await;
}

#[tokio::test]
async fn an_agent_pinned_to_another_hubs_ca_takes_nothing_from_this_hub() {
    let mut fleet = Fleet::start().await;
    let (other_dir, _) = other_hub();
    let other_pin = HubPki::load_or_create(&other_dir.path().join("pki"), Utc::now())
        .unwrap()
        .pin();
    fleet
        .agent(CLUSTER)
        .configure(|cfg| cfg.hub_ca_pin = Some(other_pin))
        .start()
        .await;
    fleet.accept(CLUSTER).await;
    fleet
        .create_work("settings", &[CLUSTER], settings("genuine-1"))
        .await;
    // The hub's view (accepted) and the spec both come signed under a CA the agent does not pin.
    wait_until("the agent to refuse the hub's events", WAIT, || {
        let refused = fleet.counters(CLUSTER).refused_signature;
        async move { refused >= 2 }
    })
    .await
    .unwrap();
    let c = fleet.counters(CLUSTER);
    assert_eq!(c.specs_applied, 0);
    assert_ne!(c.registration, ocm_edge_agent::Registration::Accepted);
    assert_eq!(mode_on_cluster(&fleet).await, None);
    fleet.shutdown().await;
}

/// What the agent's check says of each message, without a broker.
#[test]
fn the_agent_learns_the_hub_key_from_a_signed_hub_view_and_keeps_to_its_ca() {
    let now = Utc::now();
    let dir = tempfile::tempdir().unwrap();
    let pki = HubPki::load_or_create(&dir.path().join("pki"), now).unwrap();
    let hub = EventSigner::load_or_create(&pki, now).unwrap();
    let (_other_dir, other) = other_hub();
    // A hub view when it carries the chain (the only event the key is learned from).
    let message = |signer: &EventSigner, chain: bool| {
        let ty = if chain { HUB_VIEW } else { SPEC };
        let mut m = MqttMessage {
            topic: "sources/ocm-edge/consumers/edge-1/sourceevents".into(),
            payload: b"{}".to_vec(),
            content_type: Some("application/json".into()),
            user_properties: vec![("ce-type".into(), ty.into())],
        };
        signer.sign(&mut m, chain);
        m
    };

    // Unpinned, nothing learned: a spec is from an unknown key; the first hub view is learned.
    let mut trust = HubTrust::new(None, None);
    assert!(trust.needs_signer());
    assert_eq!(
        trust.check(&message(&hub, false), now),
        Err(TrustError::UnknownSigner(hub.key_id().to_owned()))
    );
    let Ok(Checked::Learned(learned)) = trust.check(&message(&hub, true), now) else {
        panic!("the hub view is not learned")
    };
    assert_eq!(learned.ca_pin(), pki.pin());
    trust.learn(learned.clone());
    assert_eq!(
        trust.check(&message(&hub, false), now),
        Ok(Checked::Trusted)
    );
    assert_eq!(trust.check(&message(&hub, true), now), Ok(Checked::Trusted));
    // A chain on a spec teaches nothing: a fresh agent still does not know the key.
    let mut spec_with_chain = message(&hub, false);
    spec_with_chain.user_properties.clear();
    spec_with_chain
        .user_properties
        .push(("ce-type".into(), SPEC.into()));
    hub.sign(&mut spec_with_chain, true);
    assert_eq!(
        HubTrust::new(None, None).check(&spec_with_chain, now),
        Err(TrustError::UnknownSigner(hub.key_id().to_owned()))
    );
    // From then on another hub's view is refused (its CA is not the one trusted first).
    assert!(matches!(
        trust.check(&message(&other, true), now),
        Err(TrustError::OtherCa { .. })
    ));

    // Kept across a restart; dropped when the agent is pinned to another CA.
    let kept: HubSigner = learned;
    let restarted = HubTrust::new(None, Some(kept.clone()));
    assert_eq!(
        restarted.check(&message(&hub, false), now),
        Ok(Checked::Trusted)
    );
    let other_pin = other_dir_pin(&other);
    let moved = HubTrust::new(Some(other_pin), Some(kept));
    assert!(moved.needs_signer());
    assert!(matches!(
        moved.check(&message(&hub, true), now),
        Err(TrustError::OtherCa { .. })
    ));
    assert!(matches!(
        moved.check(&message(&other, true), now),
        Ok(Checked::Learned(_))
    ));

    // Malformed signatures are refused, not a panic.
    let mut garbage = message(&hub, false);
    for (k, v) in &mut garbage.user_properties {
        if *k == property(SIGNATURE_EXTENSION) {
            *v = "not base64!".into();
        }
    }
    assert!(matches!(
        restarted.check(&garbage, now),
        Err(TrustError::Malformed(_))
    ));
    // The explicit unsigned mode takes anything.
    assert_eq!(
        HubTrust::unsigned().check(&without_signature(message(&hub, false)), now),
        Ok(Checked::Unchecked)
    );
}

/// The pin of the CA in `signer`'s chain, read back through a hub view it signs.
fn other_dir_pin(signer: &EventSigner) -> ocm_edge_mqtt::CaPin {
    let mut m = MqttMessage::default();
    m.user_properties.push(("ce-type".into(), HUB_VIEW.into()));
    signer.sign(&mut m, true);
    let Ok(Checked::Learned(s)) = HubTrust::new(None, None).check(&m, Utc::now()) else {
        panic!("a signer's own hub view is learned")
    };
    s.ca_pin()
}

async fn refused_by_hub(fleet: &Fleet) -> u64 {
    fleet
        .stats()
        .await
        .counters
        .get("agentEventsRefusedSignature")
        .copied()
        .unwrap_or(0)
}

#[tokio::test]
async fn the_hub_takes_an_accepted_clusters_statuses_only_when_its_agent_signed_them() {
    use ocm_edge_tests::forge::{applied_status, status_update};
    let mut fleet = Fleet::start().await;
    fleet.start_agents(&[CLUSTER]).await;
    // What `cluster get` shows before accepting is the key the agent holds (and logs).
    let agent_key =
        ocm_edge_agent::registration::key::AgentKey::load_or_create(&fleet.agent_dir(CLUSTER))
            .unwrap()
            .id()
            .to_owned();
    let view = fleet
        .wait_cluster_state(CLUSTER, ocm_edge_schemas::admin::ClusterState::Pending)
        .await
        .expect("the join request reaches the hub");
    assert_eq!(view.agent_key.as_deref(), Some(agent_key.as_str()));
    let admin = fleet.admin().await;
    fleet.accept(CLUSTER).await;
    fleet
        .create_work("settings", &[CLUSTER], settings("genuine-1"))
        .await;
    let work = fleet
        .wait_work_condition(CLUSTER, "settings", "Applied")
        .await
        .unwrap();

    // A rogue client forges the agent's status: unsigned, then signed by a key of its own.
    let before = refused_by_hub(&fleet).await;
    let mut forged_status = applied_status();
    forged_status.conditions[0].reason = "Forged".into();
    let unsigned = status_update(
        "ocm-edge",
        CLUSTER,
        &work.resource_id,
        work.version,
        forged_status,
    );
    let rogue_dir = tempfile::tempdir().unwrap();
    let rogue_key =
        ocm_edge_agent::registration::key::AgentKey::load_or_create(rogue_dir.path()).unwrap();
    let mut other_key = unsigned.clone();
    rogue_key.sign(&mut other_key);
    let rogue = Probe::connect(fleet.broker_url()).await.unwrap();
    for m in [&unsigned, &other_key] {
        rogue.publish(m).await.unwrap();
    }
    wait_until("the hub to refuse both forged statuses", WAIT, || async {
        refused_by_hub(&fleet).await >= before + 2
    })
    .await
    .unwrap();
    let view = admin.get_work(CLUSTER, "settings").await.unwrap();
    assert!(
        view.conditions.iter().all(|c| c.reason != "Forged"),
        "a forged status was stored: {:?}",
        view.conditions
    );
    // The agent's own (signed) statuses still go through: an update is reported applied.
    let accepted = |s: &ocm_edge_schemas::admin::HubStats| {
        s.counters.get("statusesAccepted").copied().unwrap_or(0)
    };
    let accepted_before = accepted(&fleet.stats().await);
    update_settings(&fleet, "genuine-2").await;
    wait_until(
        "the hub to take the agent's signed statuses",
        WAIT,
        || async { accepted(&fleet.stats().await) > accepted_before },
    )
    .await
    .unwrap();
    assert_eq!(refused_by_hub(&fleet).await, before + 2);
    fleet.shutdown().await;
}

#[tokio::test]
async fn old_specs_and_deletes_replayed_around_a_deleted_and_recreated_work_change_nothing() {
    use ocm_edge_schemas::admin::AdminErrorKind;
    let mut fleet = Fleet::start().await;
    fleet.start_agents(&[CLUSTER]).await;
    fleet.accept(CLUSTER).await;
    let topic = source_events_topic(&fleet.options().source_id, CLUSTER);
    let mut rogue = Probe::connect(fleet.broker_url()).await.unwrap();
    rogue.subscribe(&topic).await.unwrap();
    let is_delete = |m: &MqttMessage| m.user_property("ce-deletiontimestamp").is_some();

    // The work is created, then deleted; the rogue client records both.
    fleet
        .create_work("settings", &[CLUSTER], settings("first"))
        .await;
    let spec = rogue
        .recv_matching(WAIT, |m| is_spec(m) && !is_delete(m))
        .await
        .expect("the hub's spec");
    fleet
        .wait_sim(CLUSTER, "the first ConfigMap", |sim| {
            sim.get("ConfigMap", "default", "settings")
        })
        .await
        .unwrap();
    let admin = fleet.admin().await;
    admin.delete_work(CLUSTER, "settings").await.unwrap();
    let delete = rogue
        .recv_matching(WAIT, |m| is_spec(m) && is_delete(m))
        .await
        .expect("the hub's delete");
    wait_until("the hub to forget the work", WAIT, || async {
        matches!(admin.get_work(CLUSTER, "settings").await,
            Err(e) if e.hub_kind() == Some(AdminErrorKind::NotFound))
    })
    .await
    .unwrap();

    // Its old spec, replayed after the delete: refused, nothing comes back.
    let stale = fleet.counters(CLUSTER).specs_dropped_stale;
    rogue.publish(&spec).await.unwrap();
    wait_until("the replayed spec to be dropped", WAIT, || {
        let n = fleet.counters(CLUSTER).specs_dropped_stale;
        async move { n > stale }
    })
    .await
    .unwrap();
    assert_eq!(
        mode_on_cluster(&fleet).await,
        None,
        "the deleted work came back"
    );

    // Created again (its version starts at 1 again): the old delete, replayed, is refused.
    fleet
        .create_work("settings", &[CLUSTER], settings("second"))
        .await;
    wait_mode(&fleet, "second").await;
    let stale = fleet.counters(CLUSTER).specs_dropped_stale;
    rogue.publish(&delete).await.unwrap();
    wait_until("the replayed delete to be dropped", WAIT, || {
        let n = fleet.counters(CLUSTER).specs_dropped_stale;
        async move { n > stale }
    })
    .await
    .unwrap();
    wait_reconcile(&fleet).await;
    assert_eq!(mode_on_cluster(&fleet).await.as_deref(), Some("second"));
    assert_eq!(fleet.counters(CLUSTER).bundles_held, 1);
    fleet.shutdown().await;
}

#[tokio::test]
async fn a_forged_chunked_transfer_is_refused_at_its_head_and_stores_nothing() {
    use ocm_edge_schemas::wire::chunks::split;
    let mut fleet = Fleet::start().await;
    fleet.start_agents(&[CLUSTER]).await;
    fleet.accept(CLUSTER).await;
    let topic = source_events_topic(&fleet.options().source_id, CLUSTER);
    let mut rogue = Probe::connect(fleet.broker_url()).await.unwrap();
    rogue.subscribe(&topic).await.unwrap();
    // A genuine spec, recorded, then made into a large forged one and sent in chunks.
    fleet
        .create_work("settings", &[CLUSTER], settings("genuine-1"))
        .await;
    let genuine = rogue
        .recv_matching(WAIT, is_spec)
        .await
        .expect("the hub's spec");
    fleet
        .wait_sim(CLUSTER, "the ConfigMap", |sim| {
            sim.get("ConfigMap", "default", "settings")
        })
        .await
        .unwrap();
    let big = "x".repeat(64 * 1024);
    let forged = with_payload_changed(genuine, "genuine-1", &big);
    let pieces = split(forged, 16 * 1024, &Default::default());
    assert!(pieces.len() > 2, "sent as a head and chunks");
    let before = fleet.counters(CLUSTER);
    for piece in &pieces {
        rogue.publish(piece).await.unwrap();
    }
    let chunks = (pieces.len() - 1) as u64;
    wait_until(
        "the agent to refuse the head and drop its chunks",
        WAIT,
        || {
            let c = fleet.counters(CLUSTER);
            async move {
                c.refused_signature > before.refused_signature
                    && c.chunks_dropped >= before.chunks_dropped + chunks
            }
        },
    )
    .await
    .unwrap();
    let after = fleet.counters(CLUSTER);
    assert_eq!(
        after.chunks_received, before.chunks_received,
        "no chunk stored"
    );
    assert_eq!(after.transfers_completed, before.transfers_completed);
    assert_eq!(after.transfers_refused, before.transfers_refused);
    assert_eq!(mode_on_cluster(&fleet).await.as_deref(), Some("genuine-1"));
    fleet.shutdown().await;
}
