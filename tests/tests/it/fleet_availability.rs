//! Availability on a real broker with in-process simulated agents: a killed agent's cluster is
//! tainted unreachable within 1.5 x keepalive + 1 s (its MQTT will), the taint goes when the
//! agent comes back, and a stale will does not mark a live cluster.

use std::time::Duration;

use ocm_edge_schemas::api::cluster::TAINT_UNREACHABLE;
use ocm_edge_tests::fleet::{Fleet, FleetOptions, WAIT, is_available, is_unreachable};
use ocm_edge_tests::probe::AgentPeer;
use ocm_edge_tests::proxy::LinkProxy;
use ocm_edge_tests::wait::wait_for;
use tokio::time::Instant;

/// A fleet with the hub on its own defaults (as these tests always ran it) and a patient admin
/// client: the agents' short keepalive and lease are the harness's.
async fn fleet() -> Fleet {
    Fleet::start_with(
        FleetOptions {
            admin_timeout: WAIT,
            ..FleetOptions::default()
        }
        .hub_defaults(),
    )
    .await
}

/// 1.5 x keepalive + 1 s (issue 4), plus slack for a loaded CI machine: this checks the
/// behaviour (the will, not the lease grace period, is what marks the cluster), it is not a
/// timing benchmark.
fn detection_bound() -> Duration {
    FleetOptions::default().keepalive.mul_f64(1.5) + Duration::from_secs(1) + Duration::from_secs(5)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_agent_is_tainted_unreachable_within_the_bound_and_untainted_when_it_returns() {
    let mut fleet = fleet().await;
    fleet.start_accepted("edge-1", &[("env", "edge")]).await;

    let killed_at = Instant::now();
    fleet.kill_agent("edge-1").await;
    let view = fleet
        .wait_cluster("edge-1", detection_bound(), "unreachable", is_unreachable)
        .await;
    let detected = killed_at.elapsed();
    let taint = view
        .taints
        .iter()
        .find(|t| t.key == TAINT_UNREACHABLE)
        .unwrap();
    assert!(taint.time_added.is_some(), "the hub stamps timeAdded");
    assert_eq!(
        view.available.as_ref().unwrap().reason,
        "ManagedClusterConnectionLost",
        "the will, not the lease grace period, marked it"
    );
    eprintln!("killed agent detected after {detected:?}");

    // The same agent (same data directory) comes back.
    fleet.restart_agent("edge-1").await;
    fleet
        .wait_cluster("edge-1", WAIT, "available again", is_available)
        .await;
    fleet.stop_agents().await;
    fleet.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_will_does_not_mark_a_live_cluster() {
    let mut fleet = fleet().await;
    fleet.start_accepted("edge-1", &[]).await;
    let seq = fleet.counters("edge-1").connection_seq;
    assert!(seq >= 1, "the agent numbers its connections");

    // The will of an older connection, arriving late (as a broker publishes a taken-over
    // session's will after the new session's birth).
    // Signed by the agent's key: the hub takes a bound cluster's events only so.
    let raw = AgentPeer::connect(fleet.broker_url(), "ocm-edge", "edge-1")
        .await
        .signing_with(&fleet.agent_dir("edge-1"));
    let will = raw.event(
        "edge.open-cluster-management.io.v1alpha1.presences.status.update_request",
        serde_json::json!({"state": "offline", "connectionSeq": seq - 1}),
    );
    raw.send(&will).await;
    let admin = fleet.admin().await;
    let counted = wait_for("the stale will to be counted", WAIT, || async {
        let stats = admin.stats().await.unwrap();
        (stats.counters.get("willsStale").copied().unwrap_or(0) >= 1).then_some(())
    })
    .await;
    assert!(counted.is_ok(), "the hub saw the stale will");
    let view = admin.get_cluster("edge-1").await.unwrap();
    assert!(is_available(&view), "{view:#?}");

    // The will of the current connection does mark it.
    let will = raw.event(
        "edge.open-cluster-management.io.v1alpha1.presences.status.update_request",
        serde_json::json!({"state": "offline", "connectionSeq": seq}),
    );
    raw.send(&will).await;
    fleet
        .wait_cluster("edge-1", WAIT, "unreachable", is_unreachable)
        .await;
    fleet.stop_agents().await;
    fleet.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_link_is_tainted_unreachable_within_the_bound_and_untainted_when_it_thaws() {
    let mut fleet = fleet().await;
    let link = LinkProxy::start(fleet.broker_url()).await;
    let url = link.url.clone();
    fleet
        .agent("edge-1")
        .configure(|cfg| cfg.broker_url = url)
        .start()
        .await;
    let admin = fleet.admin().await;
    let known = wait_for("the hub to know edge-1", WAIT, || async {
        admin.get_cluster("edge-1").await.ok()
    })
    .await;
    assert!(known.is_ok());
    admin.accept_cluster("edge-1").await.unwrap();
    fleet
        .wait_cluster("edge-1", WAIT, "available", is_available)
        .await;

    // No FIN, no RST: only the broker's keepalive (or the lease grace) can tell.
    let frozen_at = Instant::now();
    link.freeze(true);
    let view = fleet
        .wait_cluster("edge-1", detection_bound(), "unreachable", is_unreachable)
        .await;
    eprintln!(
        "frozen link detected after {:?} ({})",
        frozen_at.elapsed(),
        view.available.as_ref().unwrap().reason
    );

    link.freeze(false);
    fleet
        .wait_cluster("edge-1", WAIT, "available again", is_available)
        .await;
    fleet.stop_agents().await;
    fleet.shutdown().await;
}
