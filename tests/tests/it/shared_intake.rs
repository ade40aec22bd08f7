//! A hub taking agent events on several MQTT sessions (`intakes`, one `$share/` subscription):
//! on the embedded broker and on Mosquitto, a fleet joins, runs and updates its works, and every
//! status an agent publishes reaches the hub exactly once (a shared subscription hands each
//! message to one session; plain subscriptions on every session would hand it to all).

use ocm_edge_hub::core::counter;
use ocm_edge_schemas::admin::CreateWork;
use ocm_edge_tests::fleet::{Fleet, FleetOptions, WAIT};
use ocm_edge_tests::manifests::{feedback_integer, web_with_feedback};
use ocm_edge_tests::mosquitto::{Mosquitto, require_mosquitto};
use ocm_edge_tests::wait::wait_for;

const CLUSTERS: [&str; 6] = ["edge-1", "edge-2", "edge-3", "edge-4", "edge-5", "edge-6"];
const INTAKES: usize = 3;

fn options() -> FleetOptions {
    FleetOptions {
        hub_intakes: INTAKES,
        ..FleetOptions::default()
    }
}

fn web(replicas: i64, overwrite: bool) -> CreateWork {
    web_with_feedback(&CLUSTERS, replicas, overwrite)
}

/// Every status event the hub judged (accepted, unchanged, stale, unknown work).
async fn statuses_judged_by_the_hub(fleet: &Fleet) -> u64 {
    let stats = fleet.stats().await;
    [
        counter::STATUS_ACCEPTED,
        counter::UNCHANGED_STATUS,
        counter::STALE_STATUS,
        counter::UNKNOWN_WORK,
    ]
    .iter()
    .map(|name| stats.counters.get(*name).copied().unwrap_or(0))
    .sum()
}

async fn run_a_fleet_through_shared_intakes(fleet: &mut Fleet) {
    fleet.start_agents(&CLUSTERS).await;
    fleet.accept_all(&CLUSTERS).await;

    for (replicas, overwrite) in [(1, false), (3, true)] {
        fleet.write_work(web(replicas, overwrite)).await;
        for c in CLUSTERS {
            fleet
                .wait_work(c, "web", &format!("ReadyReplicas={replicas}"), |w| {
                    feedback_integer(&w.resource_status, 1, "ReadyReplicas") == Some(replicas)
                })
                .await
                .unwrap();
        }
    }

    // Each status the agents handed to the broker is judged once by the hub, whichever session
    // received it; the counts settle once the agents stop reporting.
    let (published, judged) = wait_for(
        "the hub to have judged every status the agents published, once",
        WAIT,
        || async {
            let published: u64 = CLUSTERS
                .iter()
                .map(|c| fleet.counters(c).statuses_published)
                .sum();
            let judged = statuses_judged_by_the_hub(fleet).await;
            (published == judged).then_some((published, judged))
        },
    )
    .await
    .unwrap_or_else(|e| {
        panic!("{e}: statuses judged by the hub and published by the agents differ")
    });
    assert!(
        published >= 2 * CLUSTERS.len() as u64,
        "each cluster reported both rounds: {published} published, {judged} judged"
    );

    // A restarted hub subscribes every intake again and resyncs the statuses through them.
    fleet.stop_hub().await;
    fleet.start_hub().await;
    fleet.write_work(web(2, true)).await;
    for c in CLUSTERS {
        fleet
            .wait_work(c, "web", "ReadyReplicas=2 after a hub restart", |w| {
                feedback_integer(&w.resource_status, 1, "ReadyReplicas") == Some(2)
            })
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn a_hub_with_three_intakes_on_the_embedded_broker_judges_each_status_once() {
    let mut fleet = Fleet::start_with(options()).await;
    run_a_fleet_through_shared_intakes(&mut fleet).await;
    fleet.shutdown().await;
}

#[tokio::test]
async fn a_hub_with_three_intakes_on_mosquitto_judges_each_status_once() {
    let Some(program) =
        require_mosquitto("a_hub_with_three_intakes_on_mosquitto_judges_each_status_once")
    else {
        return;
    };
    let broker = Mosquitto::start(&program).expect("mosquitto starts");
    let mut fleet = Fleet::on_broker(broker.url(), options());
    fleet.start_hub().await;
    run_a_fleet_through_shared_intakes(&mut fleet).await;
    fleet.shutdown().await;
}
