//! Link faults with real network namespaces: the agent runs in its own process inside an edge
//! namespace, joined to the hub's broker by a veth link that the test cuts silently (blackhole
//! qdiscs: packets vanish, no FIN, no RST). Needs root; skipped with the reason otherwise.

use std::path::Path;

use ocm_edge_hub::admin::messages::ClusterView;
use ocm_edge_tests::broker::TestBroker;
use ocm_edge_tests::fleet::{Fleet, FleetOptions, WAIT, has_true_condition};
use ocm_edge_tests::manifests::{feedback_integer, web_with_feedback};
use ocm_edge_tests::netns::require_edge_link;
use ocm_edge_tests::process::Spawned;
use ocm_edge_tests::wait::wait_for;

const UNREACHABLE: &str = "cluster.open-cluster-management.io/unreachable";

fn unreachable(c: &ClusterView) -> bool {
    c.taints.iter().any(|t| t.key == UNREACHABLE)
}

#[tokio::test]
async fn a_silent_cut_taints_the_cluster_and_updates_made_meanwhile_arrive_when_the_link_returns() {
    let test =
        "a_silent_cut_taints_the_cluster_and_updates_made_meanwhile_arrive_when_the_link_returns";
    let Some(link) = require_edge_link(test) else {
        return;
    };
    let host = link.host_ip();
    let broker = tokio::task::spawn_blocking(move || TestBroker::start_on(host))
        .await
        .unwrap()
        .expect("broker on the veth address");
    let mut fleet = Fleet::on_broker(broker.url(), FleetOptions::default());
    fleet.start_hub().await;
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().display().to_string();
    let (ip, args) = link.exec_args(
        Path::new(env!("CARGO_BIN_EXE_test-agent")),
        &[
            "--cluster",
            "edge-1",
            "--broker",
            &broker.url(),
            "--data-dir",
            &data_dir,
        ],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let agent = Spawned::start("test-agent edge-1 (edge namespace)", &ip, &args).await;
    fleet.accept("edge-1").await;
    fleet
        .write_work(web_with_feedback(&["edge-1"], 1, false))
        .await;
    fleet
        .wait_work("edge-1", "web", "ReadyReplicas=1", |w| {
            feedback_integer(&w.resource_status, 1, "ReadyReplicas") == Some(1)
        })
        .await
        .unwrap();

    link.cut().unwrap();
    let admin = fleet.admin().await;
    wait_for(
        "the hub to taint the cut cluster unreachable",
        WAIT,
        || async { admin.get_cluster("edge-1").await.ok().filter(unreachable) },
    )
    .await
    .unwrap();
    // Updated while the link is down: stored, sent to nobody.
    let written = fleet
        .write_work(web_with_feedback(&["edge-1"], 3, true))
        .await;
    assert_eq!(written[0].work.version, 2);

    link.restore().unwrap();
    wait_for("the cluster reachable again", WAIT, || async {
        admin
            .get_cluster("edge-1")
            .await
            .ok()
            .filter(|c| !unreachable(c))
    })
    .await
    .unwrap();
    let w = fleet
        .wait_work("edge-1", "web", "version 2 with ReadyReplicas=3", |w| {
            w.status_version == Some(2)
                && feedback_integer(&w.resource_status, 1, "ReadyReplicas") == Some(3)
        })
        .await
        .unwrap();
    assert!(has_true_condition(&w.conditions, "Applied"));
    agent.stop().await;
    fleet.shutdown().await;
}
