//! The whole loop through a real Mosquitto 2 instead of the embedded broker.

use ocm_edge_schemas::admin::AdminErrorKind;
use ocm_edge_schemas::admin::CreateWork;
use ocm_edge_tests::fleet::{Fleet, FleetOptions, WAIT};
use ocm_edge_tests::manifests::{
    deployment, feedback_integer, namespace, web_with_feedback, well_known_status_feedback,
};
use ocm_edge_tests::mosquitto::{Mosquitto, require_mosquitto};
use ocm_edge_tests::wait::{wait_for, wait_until};

#[tokio::test]
async fn mosquitto_carries_a_hub_and_two_agents_from_join_to_delete() {
    let Some(program) =
        require_mosquitto("mosquitto_carries_a_hub_and_two_agents_from_join_to_delete")
    else {
        return;
    };
    let broker = Mosquitto::start(&program).expect("mosquitto starts");
    let mut fleet = Fleet::on_broker(broker.url(), FleetOptions::default());
    fleet.start_hub().await;
    fleet.start_agents(&["edge-1", "edge-2"]).await;
    fleet.accept_all(&["edge-1", "edge-2"]).await;

    fleet
        .write_work(CreateWork {
            name: "web".into(),
            clusters: vec!["edge-1".into(), "edge-2".into()],
            manifests: vec![namespace("web"), deployment("web", "web", 2, "nginx:1.27")],
            manifest_configs: vec![well_known_status_feedback(
                "apps",
                "deployments",
                "web",
                "web",
            )],
            ..CreateWork::default()
        })
        .await;
    for c in ["edge-1", "edge-2"] {
        fleet
            .wait_work(c, "web", "ReadyReplicas=2", |w| {
                feedback_integer(&w.resource_status, 1, "ReadyReplicas") == Some(2)
            })
            .await
            .unwrap_or_else(|e| panic!("{e}; mosquitto log:\n{}", broker.log()));
        assert!(fleet.sim(c).get("Deployment", "web", "web").is_some());
    }

    // The hub restarts through Mosquitto too and still serves the fleet.
    fleet.stop_hub().await;
    fleet.start_hub().await;
    fleet
        .admin()
        .await
        .delete_work("edge-1", "web")
        .await
        .unwrap();
    let admin = fleet.admin().await;
    wait_until("the hub to forget edge-1's work", WAIT, || async {
        matches!(admin.get_work("edge-1", "web").await, Err(e) if e.hub_kind() == Some(AdminErrorKind::NotFound))
    })
    .await
    .unwrap();
    assert!(
        fleet
            .sim("edge-1")
            .get("Deployment", "web", "web")
            .is_none()
    );
    assert!(
        fleet
            .sim("edge-2")
            .get("Deployment", "web", "web")
            .is_some(),
        "edge-2 keeps its work"
    );
    fleet.shutdown().await;
}

#[tokio::test]
async fn a_broker_killed_mid_update_and_restarted_brings_every_cluster_to_the_accepted_version() {
    // Mosquitto runs without persistence: a kill loses every session and every spec it had not
    // delivered yet. Agents and hub reconnect in whatever order their backoff gives; the hub's
    // store is the truth, and every cluster must reach the version it holds.
    let Some(program) = require_mosquitto(
        "a_broker_killed_mid_update_and_restarted_brings_every_cluster_to_the_accepted_version",
    ) else {
        return;
    };
    let clusters = ["edge-1", "edge-2", "edge-3", "edge-4", "edge-5", "edge-6"];
    let mut broker = Mosquitto::start(&program).expect("mosquitto starts");
    let mut fleet = Fleet::on_broker(broker.url(), FleetOptions::default());
    fleet.start_hub().await;
    fleet.start_agents(&clusters).await;
    fleet.accept_all(&clusters).await;
    let web = |replicas, overwrite| web_with_feedback(&clusters, replicas, overwrite);
    fleet.write_work(web(1, false)).await;
    for (round, delay_ms) in [0u64, 2, 5, 10, 20].into_iter().enumerate() {
        let admin = fleet.new_admin().await;
        let update = web(2 + round as i64, true);
        let request = tokio::spawn(async move { admin.create_work(update).await });
        // The fault's timing, not a wait for an event: kill the broker this long after the send.
        tokio::time::sleep(std::time::Duration::from_millis(delay_ms)).await;
        broker.kill9_and_restart().expect("mosquitto comes back");
        let _ = request.await.unwrap();
        let admin = fleet.admin().await;
        let stored = wait_for(
            "the hub to answer after the broker restart",
            WAIT,
            || async {
                admin
                    .get_work("edge-1", "web")
                    .await
                    .ok()
                    .map(|w| w.version)
            },
        )
        .await
        .unwrap();
        for c in clusters {
            fleet
                .wait_work(
                    c,
                    "web",
                    &format!("status of version {stored}, round {round}"),
                    |w| w.version == stored && w.status_version == Some(stored),
                )
                .await
                .unwrap_or_else(|e| panic!("{e}; mosquitto log:\n{}", broker.log()));
        }
    }
    fleet.shutdown().await;
}
