//! Recovery by resync: the hub or an agent goes away and comes back; what changed meanwhile arrives.

use ocm_edge_schemas::admin::AdminErrorKind;
use ocm_edge_tests::fleet::{Fleet, WAIT, has_false_condition, has_true_condition};
use ocm_edge_tests::manifests::{deployment, namespace};
use ocm_edge_tests::wait::wait_until;

async fn fleet_with_web_on(clusters: &[&str]) -> Fleet {
    let mut fleet = Fleet::start().await;
    fleet.start_agents(clusters).await;
    fleet.accept_all(clusters).await;
    fleet
        .create_work(
            "web",
            clusters,
            vec![namespace("web"), deployment("web", "web", 1, "nginx:1.27")],
        )
        .await;
    for c in clusters {
        fleet
            .wait_work_condition(c, "web", "Applied")
            .await
            .unwrap();
    }
    fleet
}

#[tokio::test]
async fn a_hub_restarted_mid_way_recovers_statuses_that_changed_while_it_was_down() {
    let mut fleet = fleet_with_web_on(&["c1", "c2"]).await;

    fleet.stop_hub().await;
    fleet.take_api_server_down("c1").await;
    fleet.start_hub().await;

    // The status c1 reported while the hub was away reaches the restarted hub.
    fleet
        .wait_work("c1", "web", "Applied=False after the hub restart", |w| {
            has_false_condition(&w.conditions, "Applied")
        })
        .await
        .unwrap();
    let c2 = fleet.admin().await.get_work("c2", "web").await.unwrap();
    assert!(
        has_true_condition(&c2.conditions, "Applied"),
        "c2 is untouched: {:?}",
        c2.conditions
    );

    // And the restarted hub keeps following: c1 recovers.
    fleet.sim("c1").set_api_healthy(true);
    fleet
        .wait_work_condition("c1", "web", "Applied")
        .await
        .unwrap();
    fleet.shutdown().await;
}

#[tokio::test]
async fn an_agent_restarted_while_the_hub_is_down_reconciles_from_its_cache_and_reports_when_the_hub_returns()
 {
    let mut fleet = fleet_with_web_on(&["c1"]).await;

    fleet.stop_hub().await;
    fleet.stop_agent("c1").await;
    fleet.restart_agent("c1").await;

    // With no hub, the restarted agent still holds the work and corrects drift from its cache.
    assert!(
        fleet.sim("c1").delete("Deployment", "web", "web"),
        "the Deployment was there"
    );
    fleet
        .wait_sim("c1", "the deleted Deployment to be re-created", |sim| {
            sim.get("Deployment", "web", "web")
        })
        .await
        .unwrap();
    let c = fleet.counters("c1");
    assert_eq!(c.bundles_held, 1, "{c:?}");
    assert_eq!(c.specs_applied, 0, "no spec came from a hub: {c:?}");

    // What changes while the hub is away is reported once it is back.
    fleet.take_api_server_down("c1").await;
    fleet.start_hub().await;
    fleet
        .wait_work(
            "c1",
            "web",
            "Applied=False reported after the hub returns",
            |w| has_false_condition(&w.conditions, "Applied"),
        )
        .await
        .unwrap();
    fleet.sim("c1").set_api_healthy(true);
    fleet
        .wait_work_condition("c1", "web", "Applied")
        .await
        .unwrap();
    fleet.shutdown().await;
}

#[tokio::test]
async fn a_work_deleted_while_its_agent_was_offline_is_removed_after_it_returns() {
    let mut fleet = fleet_with_web_on(&["c1"]).await;

    fleet.stop_agent("c1").await;
    let view = fleet.admin().await.delete_work("c1", "web").await.unwrap();
    assert!(view.deleting);
    // The hub keeps the work (deleting) until the agent confirms.
    let still = fleet.admin().await.get_work("c1", "web").await.unwrap();
    assert!(still.deleting);

    fleet.restart_agent("c1").await;
    let admin = fleet.admin().await;
    wait_until("the hub to forget the work once the agent confirms", WAIT, || async {
        matches!(admin.get_work("c1", "web").await, Err(e) if e.hub_kind() == Some(AdminErrorKind::NotFound))
    })
    .await
    .unwrap();
    fleet
        .wait_sim("c1", "the Deployment to be gone", |sim| {
            sim.get("Deployment", "web", "web").is_none().then_some(())
        })
        .await
        .unwrap();
    assert!(fleet.sim("c1").get("Namespace", "", "web").is_none());
    assert_eq!(fleet.counters("c1").bundles_held, 0);
    fleet.shutdown().await;
}

#[tokio::test]
async fn a_reconnecting_agent_resends_only_the_statuses_that_changed_since_the_hub_confirmed_them()
{
    // Each reconnect used to resend every status the hub had not confirmed, and the hub only
    // confirmed them when it (re)subscribed itself: on a flapping link, every work's status went
    // out again at every reconnect. The hub now answers an agent's spec resync with the status
    // hashes it holds, so from the second reconnect on nothing unchanged is sent.
    let mut fleet = Fleet::start().await;
    fleet.start_agents(&["c1"]).await;
    fleet.accept("c1").await;
    let works = ["w1", "w2", "w3"];
    for name in works {
        fleet
            .create_work(
                name,
                &["c1"],
                vec![namespace(name), deployment(name, "web", 1, "nginx:1.27")],
            )
            .await;
    }
    for name in works {
        fleet
            .wait_work("c1", name, "Available and no longer Progressing", |w| {
                has_true_condition(&w.conditions, "Available")
                    && has_false_condition(&w.conditions, "Progressing")
            })
            .await
            .unwrap();
    }
    let mut published = Vec::new();
    for _ in 0..2 {
        fleet.stop_agent("c1").await;
        fleet.restart_agent("c1").await;
        // The hub's answer to the agent's spec resync comes after whatever the agent resent.
        let counters = {
            let agent = &fleet;
            wait_until(
                "the hub's status resync reaches the agent",
                WAIT,
                || async { agent.counters("c1").status_resyncs_received >= 1 },
            )
            .await
            .unwrap();
            agent.counters("c1")
        };
        published.push(counters.statuses_published);
    }
    assert_eq!(
        published[1], 0,
        "statuses published after each reconnect: {published:?} (the second should send none)"
    );
    fleet.shutdown().await;
}
