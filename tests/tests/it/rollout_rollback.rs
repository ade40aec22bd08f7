//! Automatic rollback of a ManifestWorkReplicaSet (`failureStrategy: AbortAll`) on a real broker
//! with simulated agents: a revision whose manifests cannot be applied times out on the first
//! batch, the rollout is aborted, and the clusters it reached go back to the last revision that
//! succeeded everywhere; the rest never get it.

use std::time::Instant;

use ocm_edge_tests::fleet::{Fleet, FleetOptions, WAIT};
use ocm_edge_tests::wait::wait_for;
use serde_json::{Value, json};

const SET_LABEL: &str = "cluster.open-cluster-management.io/clusterset";
const CLUSTERS: [&str; 4] = ["rb-1", "rb-2", "rb-3", "rb-4"];

fn version(v: &str, broken: bool) -> Value {
    let mut manifests = vec![json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "app", "namespace": "default"}, "data": {"version": v}})];
    if broken {
        // Its namespace does not exist: the agent cannot apply it (Applied False, Degraded).
        manifests.push(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "app-extra", "namespace": "no-such-namespace"}}));
    }
    json!({"apiVersion": "work.open-cluster-management.io/v1alpha1",
           "kind": "ManifestWorkReplicaSet",
           "metadata": {"name": "app", "namespace": "default"},
           "spec": {"placementRefs": [{"name": "all", "rolloutStrategy": {
                        "type": "Progressive", "failureStrategy": "AbortAll",
                        "progressive": {"maxConcurrency": 2, "progressDeadline": "3s",
                                        "maxFailures": 0}}}],
                    "manifestWorkTemplate": {"workload": {"manifests": manifests}}}})
}

fn version_on(fleet: &Fleet, cluster: &str) -> Option<Value> {
    fleet
        .sim(cluster)
        .get("ConfigMap", "default", "app")
        .map(|cm| cm["data"]["version"].clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_revision_is_aborted_and_its_clusters_return_to_the_last_good_one() {
    let mut fleet = Fleet::start_with(
        FleetOptions {
            admin_timeout: WAIT,
            ..FleetOptions::default()
        }
        .hub_defaults(),
    )
    .await;
    for c in CLUSTERS {
        fleet.start_accepted(c, &[(SET_LABEL, "edge")]).await;
    }
    let admin = fleet.admin().await;
    for object in [
        json!({"apiVersion": "cluster.open-cluster-management.io/v1beta2",
               "kind": "ManagedClusterSet", "metadata": {"name": "edge"}}),
        json!({"apiVersion": "cluster.open-cluster-management.io/v1beta2",
               "kind": "ManagedClusterSetBinding",
               "metadata": {"name": "edge", "namespace": "default"}, "spec": {"clusterSet": "edge"}}),
        json!({"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
               "metadata": {"name": "all", "namespace": "default"},
               "spec": {"clusterSets": ["edge"]}}),
        version("v1", false),
    ] {
        admin.apply_object(object).await.unwrap();
    }
    let good = wait_for("v1 to roll out everywhere", WAIT, || async {
        let r = admin.get_replica_set(Some("default"), "app").await.unwrap();
        (!r.set.status.current_revision.is_empty()).then_some(r.set.status.current_revision)
    })
    .await
    .unwrap();
    for c in CLUSTERS {
        assert_eq!(version_on(&fleet, c), Some(json!("v1")));
    }

    let started = Instant::now();
    admin.apply_object(version("v2", true)).await.unwrap();
    let aborted = wait_for("the v2 rollout to be aborted", WAIT, || async {
        let r = admin.get_replica_set(Some("default"), "app").await.unwrap();
        r.set.status.aborted_time.is_some().then_some(r)
    })
    .await
    .unwrap();
    let aborted_after = started.elapsed();
    let reached: Vec<String> = aborted
        .clusters
        .iter()
        .filter(|c| c.message.contains("rolled back to revision 1"))
        .map(|c| c.cluster.clone())
        .collect();
    assert_eq!(reached.len(), 2, "the first batch: {:#?}", aborted.clusters);
    let progressing =
        ocm_edge_schemas::api::meta::find_condition(&aborted.set.status.conditions, "Progressing")
            .unwrap();
    assert_eq!(progressing.reason, "RolloutAborted", "{progressing:?}");
    assert_eq!(aborted.set.status.current_revision, good);

    for c in &reached {
        fleet
            .wait_sim(c, "back on v1", |sim| {
                sim.get("ConfigMap", "default", "app")
                    .filter(|cm| cm["data"]["version"] == json!("v1"))
            })
            .await
            .unwrap();
        let work = admin.get_work(c, "app").await.unwrap();
        assert_eq!(
            work.labels["work.open-cluster-management.io/controller-hash"], good,
            "{c}"
        );
    }
    let back_after = started.elapsed();
    for c in CLUSTERS {
        if !reached.contains(&c.to_owned()) {
            let work = admin.get_work(c, "app").await.unwrap();
            assert_eq!(work.manifests.len(), 1, "{c} never got v2");
            assert_eq!(version_on(&fleet, c), Some(json!("v1")));
        }
    }
    eprintln!(
        "v2 applied at 0 s; aborted after {:.1} s (progressDeadline 3s); {} clusters back on v1 \
         after {:.1} s; the other {} never got v2",
        aborted_after.as_secs_f64(),
        reached.len(),
        back_after.as_secs_f64(),
        CLUSTERS.len() - reached.len()
    );
    fleet.stop_agents().await;
    fleet.shutdown().await;
}
