//! The `ocm-edge` binary for cluster sets, placements and rollouts: `apply -f` with OCM's YAML,
//! `clusterset list`, `placement get` (decisions and the EXPLANATION table), `rollout status`,
//! `delete`, against a real hub and simulated agents.

use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use ocm_edge_tests::fleet::{Fleet, FleetOptions, WAIT};
use ocm_edge_tests::wait::wait_for;
use tokio::time::timeout;

/// A fleet with the hub on its own defaults (as these tests always ran it) and a patient admin
/// client: the agents' short keepalive and lease are the harness's.
async fn fleet() -> Fleet {
    Fleet::start_with(
        FleetOptions {
            admin_timeout: WAIT,
            ..FleetOptions::default()
        }
        .hub_defaults(),
    )
    .await
}

const BIN: &str = env!("CARGO_BIN_EXE_ocm-edge");

async fn ocm_edge(fleet: &Fleet, args: &[&str]) -> Output {
    let child = tokio::process::Command::new(BIN)
        .args(args)
        .args(["--broker", fleet.broker_url()])
        .arg("--credentials")
        .arg(fleet.admin_credentials())
        .env_remove("OCM_EDGE_BROKER")
        .env_remove("OCM_EDGE_SOURCE_ID")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    timeout(Duration::from_secs(60), child)
        .await
        .expect("ocm-edge finishes")
        .expect("ocm-edge runs")
}

#[track_caller]
fn ok(out: &Output) -> String {
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "expected success, got {:?}\nstdout:\n{text}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_of_a_placement_and_replica_set_yaml_rolls_out_and_the_cli_explains_it() {
    let mut fleet = fleet().await;
    let set = ("cluster.open-cluster-management.io/clusterset", "edge");
    fleet
        .start_accepted("edge-1", &[set, ("env", "edge")])
        .await;
    fleet
        .start_accepted("edge-2", &[set, ("env", "edge")])
        .await;
    fleet.start_accepted("edge-3", &[set, ("env", "lab")]).await;
    let admin = fleet.admin().await;
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cli/fleet/rollout.yaml");

    let out = ok(&ocm_edge(&fleet, &["apply", "-f", file.to_str().unwrap()]).await);
    for line in [
        "managedclusterset edge created",
        "managedclustersetbinding default/edge created",
        "placement default/web created",
        "manifestworkreplicaset default/web created",
    ] {
        assert!(out.contains(line), "{out}");
    }
    let again = ok(&ocm_edge(&fleet, &["apply", "-f", file.to_str().unwrap()]).await);
    assert!(again.contains("placement default/web unchanged"), "{again}");

    let sets = ok(&ocm_edge(&fleet, &["clusterset", "list"]).await);
    assert!(sets.contains("edge-1,edge-2,edge-3"), "{sets}");

    // Both edge clusters end up with the work, one after the other (maxConcurrency 1).
    let rolled = wait_for("the rollout to reach both clusters", WAIT, || async {
        let r = admin.get_replica_set(Some("default"), "web").await.unwrap();
        (r.set.status.summary.total == 2).then_some(r)
    })
    .await;
    assert!(rolled.is_ok(), "the rollout reached both clusters");

    let placement = ok(&ocm_edge(&fleet, &["placement", "get", "web"]).await);
    assert!(placement.contains("Explanation"), "{placement}");
    for needle in [
        "CLUSTER",
        "WHY",
        "edge-1",
        "edge-2",
        "edge-3",
        "PlacementSatisfied",
    ] {
        assert!(placement.contains(needle), "{needle}: {placement}");
    }
    let status = ok(&ocm_edge(&fleet, &["rollout", "status", "web", "-n", "default"]).await);
    for needle in [
        "ManifestWorkReplicaSet: default/web",
        "edge-1",
        "edge-2",
        "REACHABLE",
    ] {
        assert!(status.contains(needle), "{needle}: {status}");
    }
    assert!(
        !status.contains("edge-3"),
        "edge-3 is not selected: {status}"
    );
    let json = ok(&ocm_edge(&fleet, &["placement", "get", "web", "-o", "json"]).await);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["decisions"].as_array().unwrap().len(), 2);

    let deleted = ok(&ocm_edge(&fleet, &["delete", "manifestworkreplicaset", "web"]).await);
    assert!(deleted.contains("deleted"), "{deleted}");
    let gone = wait_for("the set and its works to go", WAIT, || async {
        let works = admin.list_works(None).await.unwrap();
        let sets = admin.list_replica_sets(None).await.unwrap();
        (works.is_empty() && sets.is_empty()).then_some(())
    })
    .await;
    assert!(gone.is_ok(), "the set and its works are gone");

    fleet.stop_agents().await;
    fleet.shutdown().await;
}
