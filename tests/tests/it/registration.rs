//! Registration: an agent asks to join, an operator accepts or denies it.

use ocm_edge_agent::Registration;
use ocm_edge_schemas::admin::CreateWork;
use ocm_edge_schemas::admin::{AdminErrorKind, ClusterState};
use ocm_edge_tests::fleet::{Fleet, WAIT};
use ocm_edge_tests::forge::{applied_status, status_update};
use ocm_edge_tests::manifests::{deployment, namespace};
use ocm_edge_tests::probe::Probe;
use ocm_edge_tests::wait::wait_until;

#[tokio::test]
async fn a_cluster_that_asks_to_join_is_pending_until_an_operator_accepts_it() {
    let mut fleet = Fleet::start().await;
    fleet
        .agent("edge-1")
        .label("env", "prod")
        .claim("region", "eu-west")
        .start()
        .await;

    let pending = fleet
        .wait_cluster_state("edge-1", ClusterState::Pending)
        .await
        .unwrap();
    assert_eq!(pending.labels.get("env").map(String::as_str), Some("prod"));
    // A pending cluster gets no works.
    let refused = fleet
        .admin()
        .await
        .create_work(CreateWork {
            name: "web".into(),
            clusters: vec!["edge-1".into()],
            manifests: vec![namespace("web")],
            ..CreateWork::default()
        })
        .await
        .unwrap_err();
    assert_eq!(
        refused.hub_kind(),
        Some(AdminErrorKind::NotAccepted),
        "{refused}"
    );

    fleet.admin().await.accept_cluster("edge-1").await.unwrap();
    let accepted = fleet
        .wait_cluster_state("edge-1", ClusterState::Accepted)
        .await
        .unwrap();
    assert!(
        accepted
            .conditions
            .iter()
            .any(|c| c.type_ == "HubAcceptedManagedCluster" && c.is_true()),
        "HubAcceptedManagedCluster=True: {:?}",
        accepted.conditions
    );
    // The agent hears the hub's answer.
    wait_until("the agent to see itself accepted", WAIT, || {
        let r = fleet.counters("edge-1").registration;
        async move { r == Registration::Accepted }
    })
    .await
    .unwrap();
    fleet.shutdown().await;
}

#[tokio::test]
async fn an_accepted_cluster_runs_the_work_it_is_given() {
    let mut fleet = Fleet::start().await;
    fleet.start_agents(&["edge-1"]).await;
    fleet.accept("edge-1").await;
    fleet
        .create_work(
            "web",
            &["edge-1"],
            vec![namespace("web"), deployment("web", "web", 2, "nginx:1.27")],
        )
        .await;
    fleet
        .wait_work_condition("edge-1", "web", "Applied")
        .await
        .unwrap();
    let image = fleet
        .wait_sim("edge-1", "Deployment web/web exists", |sim| {
            sim.get("Deployment", "web", "web")
        })
        .await
        .unwrap();
    assert_eq!(
        ocm_edge_tests::manifests::deployment_image(&image),
        Some("nginx:1.27")
    );
    fleet.shutdown().await;
}

#[tokio::test]
async fn a_denied_cluster_gets_no_works_and_its_events_are_ignored_and_counted() {
    let mut fleet = Fleet::start().await;
    fleet.start_agents(&["edge-1", "edge-2"]).await;
    fleet.accept("edge-1").await;
    fleet
        .wait_cluster_state("edge-2", ClusterState::Pending)
        .await
        .unwrap();
    let denied = fleet.admin().await.deny_cluster("edge-2").await.unwrap();
    assert_eq!(denied.state, ClusterState::Denied);
    wait_until("the agent to see itself denied", WAIT, || {
        let r = fleet.counters("edge-2").registration;
        async move { r == Registration::Denied }
    })
    .await
    .unwrap();

    // No work can target it, not even together with an accepted cluster (all or nothing).
    let err = fleet
        .admin()
        .await
        .create_work(CreateWork {
            name: "web".into(),
            clusters: vec!["edge-1".into(), "edge-2".into()],
            manifests: vec![namespace("web")],
            ..CreateWork::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.hub_kind(), Some(AdminErrorKind::NotAccepted), "{err}");
    assert!(matches!(
        fleet.admin().await.get_work("edge-1", "web").await,
        Err(e) if e.hub_kind() == Some(AdminErrorKind::NotFound)
    ));

    // Its events are ignored and counted: a status it sends for a work it made up is not stored.
    let before = ignored(&fleet).await;
    let rogue = Probe::connect(fleet.broker_url()).await.unwrap();
    rogue
        .publish(&status_update(
            "ocm-edge",
            "edge-2",
            &uuid::Uuid::new_v4().to_string(),
            1,
            applied_status(),
        ))
        .await
        .unwrap();
    wait_until(
        "the hub to count events from the denied cluster",
        WAIT,
        || async { ignored(&fleet).await > before },
    )
    .await
    .unwrap();
    let stats = fleet.stats().await;
    assert_eq!(
        stats.works, 0,
        "nothing stored for the denied cluster: {stats:?}"
    );
    assert_eq!(stats.clusters_denied, 1);
    assert_eq!(fleet.counters("edge-2").bundles_held, 0);
    assert!(fleet.sim("edge-2").objects().is_empty());
    fleet.shutdown().await;
}

/// The hub's counter of events from clusters that are not accepted.
const IGNORED: &str = "eventsIgnoredNotAccepted";

async fn ignored(fleet: &Fleet) -> u64 {
    fleet
        .stats()
        .await
        .counters
        .get(IGNORED)
        .copied()
        .unwrap_or(0)
}

#[tokio::test]
async fn an_agent_started_before_the_hub_joins_once_the_hub_comes_up() {
    let broker = ocm_edge_tests::broker::TestBroker::start_async().await;
    let mut fleet = Fleet::on_broker(broker.url(), ocm_edge_tests::fleet::FleetOptions::default());
    fleet.agent("early").start().await;
    // The agent is connected and has asked to join while no hub listened.
    wait_until("the agent to connect and ask to join", WAIT, || {
        let c = fleet.counters("early");
        async move { c.connected && c.join_requests >= 1 }
    })
    .await
    .unwrap();

    fleet.start_hub().await;
    fleet
        .wait_cluster_state("early", ClusterState::Pending)
        .await
        .unwrap();
    fleet.admin().await.accept_cluster("early").await.unwrap();
    wait_until("the agent to see itself accepted", WAIT, || {
        let r = fleet.counters("early").registration;
        async move { r == Registration::Accepted }
    })
    .await
    .unwrap();
    fleet.shutdown().await;
}

#[tokio::test]
async fn denying_an_accepted_cluster_makes_the_hub_ignore_its_statuses() {
    let mut fleet = Fleet::start().await;
    fleet.start_agents(&["edge-1"]).await;
    fleet.accept("edge-1").await;
    let written = fleet
        .create_work("web", &["edge-1"], vec![namespace("web")])
        .await;
    fleet
        .wait_work_condition("edge-1", "web", "Applied")
        .await
        .unwrap();
    fleet.stop_agent("edge-1").await;
    fleet.admin().await.deny_cluster("edge-1").await.unwrap();

    let ignored_before = ignored(&fleet).await;
    let malformed_before = malformed(&fleet).await;
    let rogue = Probe::connect(fleet.broker_url()).await.unwrap();
    let mut status = applied_status();
    status.conditions[0].reason = "FromADeniedCluster".into();
    rogue
        .publish(&status_update(
            "ocm-edge",
            "edge-1",
            &written[0].work.resource_id,
            1,
            status,
        ))
        .await
        .unwrap();
    // A marker after it on the same connection: once the hub has counted the marker, it has
    // handled the status too.
    rogue
        .publish(&ocm_edge_schemas::wire::MqttMessage {
            topic: "sources/ocm-edge/consumers/edge-1/agentevents".into(),
            payload: b"marker".to_vec(),
            content_type: None,
            user_properties: vec![],
        })
        .await
        .unwrap();
    wait_until("the hub to handle the marker", WAIT, || async {
        malformed(&fleet).await > malformed_before
    })
    .await
    .unwrap();
    assert!(
        ignored(&fleet).await > ignored_before,
        "the status is counted as ignored"
    );
    let view = fleet.admin().await.get_work("edge-1", "web").await.unwrap();
    assert!(
        !view
            .conditions
            .iter()
            .any(|c| c.reason == "FromADeniedCluster"),
        "a denied cluster's status is not stored: {:?}",
        view.conditions
    );
    fleet.shutdown().await;
}

async fn malformed(fleet: &Fleet) -> u64 {
    fleet
        .stats()
        .await
        .counters
        .get("messagesMalformed")
        .copied()
        .unwrap_or(0)
}
