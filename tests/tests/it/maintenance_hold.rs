//! Maintenance holds in a rollout, on a real broker with a real hub and in-process simulated
//! agents: a cluster that holds updates on site stores the ManifestWorkReplicaSet's work, reports
//! it Held, and keeps the progressive rollout waiting past its progressDeadline without failing
//! it (maxFailures 0); released, it applies the work and the rollout carries on to the others.
//! Windows set on the hub reach the agent and hold its new works the same way.

use std::time::Duration;

use chrono::Utc;
use ocm_edge_agent::maintenance::{self, Hold};
use ocm_edge_schemas::admin::ReplicaSetView;
use ocm_edge_schemas::api::work::{
    REASON_OUTSIDE_MAINTENANCE_WINDOW, REASON_UPDATES_ALLOWED, WORK_HELD,
};
use ocm_edge_tests::fleet::{Fleet, FleetOptions, WAIT, has_true_condition};
use ocm_edge_tests::wait::wait_for;
use serde_json::json;

const SET_LABEL: (&str, &str) = ("cluster.open-cluster-management.io/clusterset", "edge");
const CLUSTERS: [&str; 3] = ["edge-1", "edge-2", "edge-3"];
/// The rollout's progressDeadline: a cluster that neither holds nor succeeds within it fails
/// the rollout (maxFailures 0).
const DEADLINE: Duration = Duration::from_secs(2);

fn objects() -> Vec<serde_json::Value> {
    vec![
        json!({"apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSet",
               "metadata": {"name": "edge"}}),
        json!({"apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSetBinding",
               "metadata": {"name": "edge", "namespace": "default"}, "spec": {"clusterSet": "edge"}}),
        json!({"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
               "metadata": {"name": "every-edge", "namespace": "default"},
               "spec": {"clusterSets": ["edge"]}}),
        json!({"apiVersion": "work.open-cluster-management.io/v1alpha1", "kind": "ManifestWorkReplicaSet",
               "metadata": {"name": "web", "namespace": "default"},
               "spec": {"placementRefs": [{"name": "every-edge", "rolloutStrategy": {
                            "type": "Progressive",
                            "progressive": {"maxConcurrency": 1, "maxFailures": 0,
                                            "progressDeadline": format!("{}s", DEADLINE.as_secs())}}}],
                        "manifestWorkTemplate": {"workload": {"manifests": [
                            {"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": "web", "namespace": "default"},
                             "data": {"greeting": "hello"}}]}}}}),
    ]
}

fn row<'a>(
    view: &'a ReplicaSetView,
    cluster: &str,
) -> Option<&'a ocm_edge_schemas::admin::RolloutRow> {
    view.clusters.iter().find(|c| c.cluster == cluster)
}

/// Waits until the rollout of `web` satisfies `done`.
async fn wait_rollout(
    fleet: &Fleet,
    what: &str,
    done: impl Fn(&ReplicaSetView) -> bool,
) -> ReplicaSetView {
    fleet
        .wait_replica_set("default", "web", what, done)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_cluster_holds_a_rollout_without_failing_it_and_catches_up_when_released() {
    let mut fleet = Fleet::start_with(FleetOptions {
        admin_timeout: WAIT,
        ..FleetOptions::default()
    })
    .await;
    // Someone at edge-1 holds updates before the rollout starts.
    let held_dir = fleet.agent_dir("edge-1");
    maintenance::hold::put(
        &held_dir,
        &Hold {
            since: Utc::now(),
            note: "line 3 running".into(),
        },
    )
    .unwrap();
    for name in CLUSTERS {
        fleet.start_accepted(name, &[SET_LABEL]).await;
    }
    let admin = fleet.admin().await;
    for object in objects() {
        admin.apply_object(object).await.unwrap();
    }

    // edge-1 goes first (name order), stores the work and says it holds it.
    let work = fleet
        .wait_work_condition("edge-1", "web", WORK_HELD)
        .await
        .expect("edge-1 reports the work Held");
    let held = work
        .conditions
        .iter()
        .find(|c| c.type_ == WORK_HELD)
        .unwrap();
    assert!(held.message.contains("line 3 running"), "{}", held.message);
    assert!(
        fleet
            .sim("edge-1")
            .get("ConfigMap", "default", "web")
            .is_none(),
        "nothing applied while held"
    );

    // Well past the deadline, edge-1 is still Held, not TimeOut, and nothing else has started.
    let view = wait_rollout(&fleet, "edge-1 held past its progressDeadline", |v| {
        row(v, "edge-1").is_some_and(|r| {
            r.status == "Held"
                && r.since.is_some_and(|s| {
                    Utc::now() > s + chrono::TimeDelta::from_std(DEADLINE * 2).unwrap()
                })
        })
    })
    .await;
    let edge1 = row(&view, "edge-1").unwrap();
    assert_eq!(edge1.recheck_at, None, "a held cluster has no deadline");
    for other in ["edge-2", "edge-3"] {
        assert_eq!(
            row(&view, other).map(|r| r.status.as_str()),
            Some("ToApply"),
            "{view:#?}"
        );
        assert!(
            admin.get_work(other, "web").await.is_err(),
            "the rollout waits for edge-1"
        );
    }
    assert!(
        view.clusters
            .iter()
            .all(|r| r.status != "TimeOut" && r.status != "Failed"),
        "{view:#?}"
    );
    // `ocm-edge rollout status` says so.
    let text = ocm_edge_cli::commands::rollout::rollout_status(&view, Utc::now());
    assert!(
        text.contains("Held") && text.contains("1 held by the cluster"),
        "{text}"
    );

    // Released: edge-1 applies the work and the rollout carries on to every cluster.
    assert!(maintenance::hold::release(&held_dir).unwrap());
    fleet
        .wait_sim("edge-1", "the work applied after the release", |sim| {
            sim.get("ConfigMap", "default", "web")
        })
        .await
        .expect("edge-1 catches up");
    let view = wait_rollout(&fleet, "every cluster succeeded", |v| {
        v.clusters.len() == 3 && v.clusters.iter().all(|r| r.status == "Succeeded")
    })
    .await;
    assert!(!has_true_condition(
        &admin.get_work("edge-1", "web").await.unwrap().conditions,
        WORK_HELD
    ));
    assert_eq!(view.clusters.len(), 3);
    fleet.stop_agents().await;
    fleet.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn windows_set_on_the_hub_hold_a_new_work_until_cleared_and_a_bad_one_is_refused() {
    let mut fleet = Fleet::start_with(FleetOptions {
        admin_timeout: WAIT,
        ..FleetOptions::default()
    })
    .await;
    fleet.start_accepted("edge-1", &[]).await;
    let admin = fleet.admin().await;

    // A window that cannot be read is refused, naming it and the field; nothing changes.
    let err = admin
        .set_maintenance_windows("edge-1", vec!["0 22 * * *;2h;Mars/Olympus".into()])
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("Mars/Olympus") && err.contains("time zone"),
        "{err}"
    );
    let view = admin.get_cluster("edge-1").await.unwrap();
    assert!(view.maintenance_windows.is_empty());

    // One minute each 29 February: closed for this test, whatever day it runs (but that one).
    let view = admin
        .set_maintenance_windows("edge-1", vec!["0 0 29 2 *;1m".into()])
        .await
        .unwrap();
    assert_eq!(view.maintenance_windows, ["0 0 29 2 *;1m"]);
    wait_for("edge-1's agent to hold updates", WAIT, || async {
        fleet.counters("edge-1").updates_held.then_some(())
    })
    .await
    .expect("the agent takes the hub's windows");

    let configmap = json!({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "web", "namespace": "default"}});
    fleet.create_work("web", &["edge-1"], vec![configmap]).await;
    let work = fleet
        .wait_work_condition("edge-1", "web", WORK_HELD)
        .await
        .expect("the work is Held");
    let held = work
        .conditions
        .iter()
        .find(|c| c.type_ == WORK_HELD)
        .unwrap();
    assert_eq!(held.reason, REASON_OUTSIDE_MAINTENANCE_WINDOW);
    assert!(
        held.message.contains("hub: 0 0 29 2 *;1m"),
        "{}",
        held.message
    );
    assert!(
        fleet
            .sim("edge-1")
            .get("ConfigMap", "default", "web")
            .is_none()
    );

    // Cleared on the hub: the agent applies what waited.
    admin
        .set_maintenance_windows("edge-1", vec![])
        .await
        .unwrap();
    fleet
        .wait_sim(
            "edge-1",
            "the work applied once the hub's window is cleared",
            |sim| sim.get("ConfigMap", "default", "web"),
        )
        .await
        .expect("applied");
    fleet
        .wait_work("edge-1", "web", "Held False", |w| {
            w.conditions
                .iter()
                .any(|c| c.type_ == WORK_HELD && c.reason == REASON_UPDATES_ALLOWED)
        })
        .await
        .expect("Held turns False");
    fleet.stop_agents().await;
    fleet.shutdown().await;
}
