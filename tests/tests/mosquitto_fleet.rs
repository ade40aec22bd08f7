//! The whole loop through a real Mosquitto 2 instead of the embedded broker.

use ocm_edge_hub::admin::messages::AdminErrorKind;
use ocm_edge_hub::admin::messages::CreateWork;
use ocm_edge_tests::fleet::{Fleet, FleetOptions, WAIT};
use ocm_edge_tests::manifests::{
    deployment, feedback_integer, namespace, well_known_status_feedback,
};
use ocm_edge_tests::mosquitto::{Mosquitto, require_mosquitto};
use ocm_edge_tests::wait::wait_until;

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
