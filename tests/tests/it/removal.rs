//! Removal: `ocm-edge cluster remove` from the hub, `ocm-edge-agent unjoin` from the edge.

use ocm_edge_agent::unjoin::{UnjoinError, unjoin};
use ocm_edge_schemas::admin::{AdminErrorKind, ClusterState, CreateWork};
use ocm_edge_tests::fleet::{Fleet, FleetOptions, WAIT};
use ocm_edge_tests::manifests::{deployment, namespace};
use ocm_edge_tests::wait::wait_until;

/// Waits until the hub no longer knows `cluster`.
async fn wait_forgotten(fleet: &Fleet, cluster: &str) {
    let admin = fleet.admin().await;
    wait_until(&format!("the hub to forget {cluster}"), WAIT, || async {
        matches!(
            admin.get_cluster(cluster).await,
            Err(e) if e.hub_kind() == Some(AdminErrorKind::NotFound)
        )
    })
    .await
    .unwrap();
}

/// Waits until the hub forgot `edge-1`, whose running agent removed what its work applied.
async fn forgotten_with_its_work_removed(fleet: &Fleet) {
    wait_forgotten(fleet, "edge-1").await;
    let sim = fleet.sim("edge-1");
    assert!(sim.get("Deployment", "web", "web").is_none());
    assert!(sim.get("Namespace", "", "web").is_none());
}

/// `edge-1` accepted, its work applied, then its agent stopped.
async fn edge_1_away_with_a_work(fleet: &mut Fleet) {
    fleet.start_accepted("edge-1", &[]).await;
    web_applied(fleet, "edge-1").await;
    fleet.stop_agent("edge-1").await;
}

/// A fleet on the hub's own broker, which checks every login.
async fn on_hub_broker() -> Fleet {
    Fleet::start_with(FleetOptions {
        hub_broker: true,
        ..FleetOptions::default()
    })
    .await
}

/// Why the hub refuses a work `name` on `cluster`.
async fn work_refused(fleet: &Fleet, name: &str, cluster: &str) -> String {
    let refused = fleet
        .admin()
        .await
        .create_work(CreateWork {
            name: name.into(),
            clusters: vec![cluster.into()],
            manifests: vec![namespace(name)],
            ..CreateWork::default()
        })
        .await
        .unwrap_err();
    format!("{:?}: {refused}", refused.hub_kind())
}

/// A work of a namespace and a Deployment on `cluster`, applied.
async fn web_applied(fleet: &Fleet, cluster: &str) {
    fleet
        .create_work(
            "web",
            &[cluster],
            vec![namespace("web"), deployment("web", "web", 1, "nginx:1.27")],
        )
        .await;
    fleet
        .wait_work_condition(cluster, "web", "Applied")
        .await
        .unwrap();
}

#[tokio::test]
async fn a_removed_clusters_agent_removes_its_works_then_the_hub_forgets_it_and_it_must_join_again()
{
    // The hub's own broker: logins are checked, so the removed cluster's key stops opening it.
    let mut fleet = on_hub_broker().await;
    fleet.start_accepted("edge-1", &[]).await;
    fleet.start_accepted("edge-2", &[]).await;
    web_applied(&fleet, "edge-1").await;
    web_applied(&fleet, "edge-2").await;

    let admin = fleet.admin().await;
    let removing = admin.remove_cluster("edge-1", false).await.unwrap();
    assert!(
        removing.removing.is_some() && !removing.removed,
        "{removing:?}"
    );
    // Its agent removed what the work applied before the hub forgot it.
    forgotten_with_its_work_removed(&fleet).await;
    // The other cluster keeps its work.
    assert!(
        fleet
            .sim("edge-2")
            .get("Deployment", "web", "web")
            .is_some()
    );
    assert!(admin.get_work("edge-2", "web").await.is_ok());
    assert!(admin.get_work("edge-1", "web").await.is_err());

    // Its agent, still running, hears that the hub does not know it and asks to join again:
    // Pending, with no work, until an operator accepts it.
    let back = fleet
        .wait_cluster_state("edge-1", ClusterState::Pending)
        .await
        .unwrap();
    assert_eq!(back.works, 0);
    let refused = work_refused(&fleet, "web", "edge-1").await;
    assert!(refused.starts_with("Some(NotAccepted)"), "{refused}");
    fleet.shutdown().await;
}

#[tokio::test]
async fn a_cluster_whose_agent_is_gone_is_removed_with_force_and_a_second_removal_says_it_is_unknown()
 {
    let mut fleet = Fleet::start().await;
    edge_1_away_with_a_work(&mut fleet).await;

    let admin = fleet.admin().await;
    let removing = admin.remove_cluster("edge-1", false).await.unwrap();
    assert!(removing.removing.is_some(), "waits for the agent");
    assert_eq!(removing.works, 1);
    // Placements and works leave a cluster being removed alone.
    let refused = work_refused(&fleet, "db", "edge-1").await;
    assert!(refused.contains("being removed"), "{refused}");

    let removed = admin.remove_cluster("edge-1", true).await.unwrap();
    assert!(removed.removed, "{removed:?}");
    let again = admin.remove_cluster("edge-1", false).await.unwrap_err();
    assert_eq!(again.hub_kind(), Some(AdminErrorKind::NotFound));
    assert!(
        again.to_string().contains("not known to the hub"),
        "{again}"
    );
    assert!(admin.list_works(None).await.unwrap().is_empty());
    fleet.shutdown().await;
}

#[tokio::test]
async fn a_removal_the_hub_was_stopped_in_is_finished_after_it_restarts() {
    let mut fleet = Fleet::start().await;
    edge_1_away_with_a_work(&mut fleet).await;
    fleet
        .admin()
        .await
        .remove_cluster("edge-1", false)
        .await
        .unwrap();
    fleet.stop_hub().await;
    fleet.start_hub().await;
    fleet.restart_agent("edge-1").await;
    forgotten_with_its_work_removed(&fleet).await;
    fleet.shutdown().await;
}

#[tokio::test]
async fn an_unjoin_removes_what_the_works_applied_tells_the_hub_and_wipes_the_agent() {
    let mut fleet = Fleet::start().await;
    edge_1_away_with_a_work(&mut fleet).await;
    let cfg = fleet.agent_config("edge-1");

    // The hub is down (its broker is not): the unjoin is sent until a hub takes it.
    fleet.stop_hub().await;
    let unjoining = tokio::spawn({
        let cfg = cfg.clone();
        async move { unjoin(&cfg, false, WAIT).await }
    });
    fleet.start_hub().await;
    let done = unjoining.await.unwrap().unwrap();
    assert_eq!((done.works, done.deleted, done.kept), (1, 2, 0), "{done:?}");
    assert!(!cfg.data_dir.join("agent-key.p8").exists(), "key wiped");
    assert!(!cfg.data_dir.join("agent.redb").exists(), "store wiped");
    wait_forgotten(&fleet, "edge-1").await;
    fleet.shutdown().await;
}

#[tokio::test]
async fn an_unjoin_that_cannot_reach_the_broker_keeps_the_store_and_key_and_a_second_run_finishes()
{
    // The hub's own broker: a stopped hub takes the broker with it.
    let mut fleet = on_hub_broker().await;
    edge_1_away_with_a_work(&mut fleet).await;
    let mut cfg = fleet.agent_config("edge-1");
    cfg.connect_timeout = std::time::Duration::from_secs(2);
    fleet.stop_hub().await;

    let err = unjoin(&cfg, true, std::time::Duration::from_secs(3))
        .await
        .unwrap_err();
    assert!(matches!(err, UnjoinError::HubNotTold { .. }), "{err}");
    let message = err.to_string();
    assert!(
        message.contains("ocm-edge cluster remove edge-1 --force"),
        "{message}"
    );
    assert!(
        cfg.data_dir.join("agent-key.p8").exists(),
        "the key is kept"
    );

    fleet.start_hub().await;
    let done = unjoin(&cfg, true, WAIT).await.unwrap();
    assert_eq!((done.deleted, done.kept), (0, 2), "{done:?}");
    wait_forgotten(&fleet, "edge-1").await;
    fleet.shutdown().await;
}
