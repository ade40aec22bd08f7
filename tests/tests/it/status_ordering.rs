//! The hub keeps the newest status of the current spec: statuses for another resourceversion, with
//! an older sequenceid, or unchanged are dropped and counted (docs/reference/protocol.md section 6).

use ocm_edge_schemas::wire::sequence::SequenceIdGenerator;
use ocm_edge_tests::fleet::{Fleet, WAIT};
use ocm_edge_tests::forge::{applied_status, status_update_with_sequence};
use ocm_edge_tests::manifests::namespace;
use ocm_edge_tests::probe::Probe;
use ocm_edge_tests::wait::wait_until;

fn with_reason(reason: &str) -> ocm_edge_schemas::api::work::ManifestBundleStatus {
    let mut s = applied_status();
    s.conditions[0].reason = reason.into();
    s
}

async fn counter(fleet: &Fleet, name: &str) -> u64 {
    fleet.stats().await.counters.get(name).copied().unwrap_or(0)
}

#[tokio::test]
async fn the_hub_drops_stale_and_unchanged_statuses_and_keeps_the_newest() {
    let mut fleet = Fleet::start().await;
    fleet.agent("c1").start().await;
    fleet.accept("c1").await;
    // The agent leaves; this test speaks for it on the wire.
    fleet.stop_agent("c1").await;
    let written = fleet
        .create_work("web", &["c1"], vec![namespace("web")])
        .await;
    let rid = written[0].work.resource_id.clone();

    let mut seq = SequenceIdGenerator::new();
    let now = chrono::Utc::now().timestamp_millis();
    let older = seq.next_string(now);
    let newer = seq.next_string(now + 1000);
    let agent = Probe::connect(fleet.broker_url()).await.unwrap();
    // Signed with the agent's key, bound to c1 when it was accepted.
    let key = ocm_edge_agent::registration::key::AgentKey::load_or_create(&fleet.agent_dir("c1"))
        .unwrap();
    let signed = |mut m: ocm_edge_schemas::wire::MqttMessage| {
        key.sign(&mut m);
        m
    };

    let accepted0 = counter(&fleet, "statusesAccepted").await;
    agent
        .publish(&signed(status_update_with_sequence(
            "ocm-edge",
            "c1",
            &rid,
            1,
            &newer,
            with_reason("Newest"),
        )))
        .await
        .unwrap();
    fleet
        .wait_work("c1", "web", "the newest status stored", |w| {
            w.conditions.iter().any(|c| c.reason == "Newest")
        })
        .await
        .unwrap();
    assert_eq!(counter(&fleet, "statusesAccepted").await, accepted0 + 1);

    let stale0 = counter(&fleet, "statusesStale").await;
    let unchanged0 = counter(&fleet, "statusesUnchanged").await;
    // Older sequence id; a resourceversion the hub does not hold; the same status again.
    agent
        .publish(&signed(status_update_with_sequence(
            "ocm-edge",
            "c1",
            &rid,
            1,
            &older,
            with_reason("Older"),
        )))
        .await
        .unwrap();
    let future = seq.next_string(now + 2000);
    agent
        .publish(&signed(status_update_with_sequence(
            "ocm-edge",
            "c1",
            &rid,
            2,
            &future,
            with_reason("FutureSpec"),
        )))
        .await
        .unwrap();
    let again = seq.next_string(now + 3000);
    agent
        .publish(&signed(status_update_with_sequence(
            "ocm-edge",
            "c1",
            &rid,
            1,
            &again,
            with_reason("Newest"),
        )))
        .await
        .unwrap();
    let waited = wait_until("the hub to count the dropped statuses", WAIT, || async {
        counter(&fleet, "statusesStale").await >= stale0 + 2
            && counter(&fleet, "statusesUnchanged").await > unchanged0
    })
    .await;
    if let Err(e) = waited {
        panic!("{e}; hub counters: {:?}", fleet.stats().await.counters);
    }

    let view = fleet.admin().await.get_work("c1", "web").await.unwrap();
    assert!(
        view.conditions.iter().any(|c| c.reason == "Newest"),
        "the newest status stays: {:?}",
        view.conditions
    );
    assert_eq!(
        counter(&fleet, "statusesAccepted").await,
        accepted0 + 1,
        "nothing else accepted"
    );
    fleet.shutdown().await;
}
