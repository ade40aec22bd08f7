//! Maintenance holds in a rollout, on a real broker with a real hub and in-process simulated
//! agents: a cluster that holds updates on site stores the ManifestWorkReplicaSet's work, reports
//! it Held, and keeps the progressive rollout waiting past its progressDeadline without failing
//! it (maxFailures 0); released, it applies the work and the rollout carries on to the others.

use std::time::Duration;

use chrono::Utc;
use ocm_edge_agent::maintenance::{self, Hold};
use ocm_edge_schemas::admin::ReplicaSetView;
use ocm_edge_schemas::api::work::WORK_HELD;
use ocm_edge_tests::fleet::{Fleet, FleetOptions, WAIT, has_true_condition};
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
