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

/// Waits until `cluster` has been `Held` in the rollout for twice its progressDeadline, then
/// checks that no cluster timed out or failed and that nothing else started.
async fn wait_held_past_the_deadline(fleet: &Fleet, cluster: &str) -> ReplicaSetView {
    let view = wait_rollout(
        fleet,
        &format!("{cluster} held past its progressDeadline"),
        |v| {
            row(v, cluster).is_some_and(|r| {
                r.status == "Held"
                    && r.since.is_some_and(|s| {
                        Utc::now() > s + chrono::TimeDelta::from_std(DEADLINE * 2).unwrap()
                    })
            })
        },
    )
    .await;
    assert_eq!(
        row(&view, cluster).unwrap().recheck_at,
        None,
        "a held cluster has no deadline"
    );
    assert!(
        view.clusters
            .iter()
            .all(|r| r.status != "TimeOut" && r.status != "Failed"),
        "{view:#?}"
    );
    let admin = fleet.admin().await;
    for other in CLUSTERS.iter().filter(|c| **c != cluster) {
        assert_eq!(
            row(&view, other).map(|r| r.status.as_str()),
            Some("ToApply"),
            "{view:#?}"
        );
        assert!(
            admin.get_work(other, "web").await.is_err(),
            "the rollout waits for {cluster}"
        );
    }
    view
}

/// Waits until `cluster`'s work `web` says the version that waited is applied.
async fn wait_held_false(fleet: &Fleet, cluster: &str) {
    fleet
        .wait_work(cluster, "web", "Held False", |w| {
            w.conditions
                .iter()
                .any(|c| c.type_ == WORK_HELD && c.reason == REASON_UPDATES_ALLOWED)
        })
        .await
        .expect("Held turns False");
}

/// The `Held` condition of `cluster`'s work `web`, once it is there.
async fn held_condition(fleet: &Fleet, cluster: &str) -> ocm_edge_schemas::api::meta::Condition {
    let work = fleet
        .wait_work_condition(cluster, "web", WORK_HELD)
        .await
        .unwrap_or_else(|e| panic!("{cluster} reports the work Held: {e}"));
    work.conditions
        .into_iter()
        .find(|c| c.type_ == WORK_HELD)
        .unwrap()
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
    let held = held_condition(&fleet, "edge-1").await;
    assert!(held.message.contains("line 3 running"), "{}", held.message);
    assert!(
        fleet
            .sim("edge-1")
            .get("ConfigMap", "default", "web")
            .is_none(),
        "nothing applied while held"
    );

    // Well past the deadline, edge-1 is still Held, not TimeOut, and nothing else has started.
    let view = wait_held_past_the_deadline(&fleet, "edge-1").await;
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
    wait_held_false(&fleet, "edge-1").await;
    fleet.stop_agents().await;
    fleet.shutdown().await;
}

/// A cluster whose maintenance window (set on the hub) opens a little after the rollout starts:
/// it stores the work and holds the progressive rollout past its progressDeadline without
/// failing it, saying when its window opens; when the window opens (the real clock: the
/// first whole minute at least 60 s away), it applies the work and the rollout carries on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_outside_its_window_holds_a_rollout_and_catches_up_when_the_window_opens() {
    use chrono::{DurationRound as _, Timelike as _};
    let started = Utc::now();
    let mut fleet = Fleet::start_with(FleetOptions {
        admin_timeout: WAIT,
        ..FleetOptions::default()
    })
    .await;
    for name in CLUSTERS {
        fleet.start_accepted(name, &[SET_LABEL]).await;
    }
    let admin = fleet.admin().await;
    let minute = chrono::TimeDelta::minutes(1);
    let opens = (Utc::now() + chrono::TimeDelta::seconds(60))
        .duration_trunc(minute)
        .unwrap()
        + minute;
    let window = format!("{} {} * * *;10m;UTC", opens.minute(), opens.hour());
    admin
        .set_maintenance_windows("edge-1", vec![window.clone()])
        .await
        .unwrap();
    wait_for("edge-1's agent to hold updates", WAIT, || async {
        fleet.counters("edge-1").updates_held.then_some(())
    })
    .await
    .expect("the agent takes the hub's window");
    for object in objects() {
        admin.apply_object(object).await.unwrap();
    }

    let held = held_condition(&fleet, "edge-1").await;
    assert_eq!(held.reason, REASON_OUTSIDE_MAINTENANCE_WINDOW);
    let held_since = held.last_transition_time.map(|t| t.as_datetime());
    let opens_text = opens.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    assert!(
        held.message
            .contains(&format!("the next opens at {opens_text}")),
        "{}",
        held.message
    );
    wait_held_past_the_deadline(&fleet, "edge-1").await;
    let held_at = Utc::now();
    assert!(
        held_at < opens,
        "the test saw the hold only after the window opened ({held_at} >= {opens}): the machine \
         was too slow for this test's 60 s margin"
    );
    assert!(
        fleet
            .sim("edge-1")
            .get("ConfigMap", "default", "web")
            .is_none()
    );

    // The window opens: edge-1 applies what it stored, and the rollout goes on to the others.
    let until_open = (opens - Utc::now()).to_std().unwrap_or_default();
    wait_for(
        "edge-1 to apply the work in its window",
        until_open + WAIT,
        || async { fleet.sim("edge-1").get("ConfigMap", "default", "web") },
    )
    .await
    .expect("edge-1 catches up in its window");
    let applied_at = Utc::now();
    assert!(
        applied_at >= opens,
        "applied at {applied_at}, before the window at {opens}"
    );
    wait_rollout(&fleet, "every cluster succeeded", |v| {
        v.clusters.len() == 3 && v.clusters.iter().all(|r| r.status == "Succeeded")
    })
    .await;
    let done_at = Utc::now();
    wait_held_false(&fleet, "edge-1").await;
    let secs = |t: chrono::DateTime<Utc>| (t - started).num_milliseconds() as f64 / 1000.0;
    eprintln!(
        "window {window:?}: opens at {:.1} s; edge-1 held the rollout from {:.1} s (still \
         Held, not failed, at {:.1} s, deadline {} s); applied at {:.1} s ({:.1} s after the \
         window opened); all 3 clusters Succeeded at {:.1} s",
        secs(opens),
        secs(held_since.unwrap_or(held_at)),
        secs(held_at),
        DEADLINE.as_secs(),
        secs(applied_at),
        (applied_at - opens).num_milliseconds() as f64 / 1000.0,
        secs(done_at),
    );
    fleet.stop_agents().await;
    fleet.shutdown().await;
}
