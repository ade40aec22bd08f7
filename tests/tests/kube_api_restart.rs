//! The cluster's API server goes away and comes back while the agent keeps its redb state (on the
//! real control plane of `tests/kube/up.sh`, its kube-apiserver killed with SIGKILL and started
//! again with the same command line, `ocm_edge_tests::kube::ControlPlane`). The real `ocm-edge-agent --applier kube` binary with its
//! service-account kubeconfig: the hub shows the cluster's API server unavailable; an update made
//! meanwhile is held; the agent is killed and restarted with the API server still down and the hub
//! gone too, and when the API server returns it applies the update from its redb store alone; the
//! hub, back, sees the cluster available and the work applied.
//!
//! Alone in its file: killing the API server would break the other tests of a test binary (each
//! binary runs alone).

use std::time::Duration;

use ocm_edge_agent::applier::kube::KubeApplier;
use ocm_edge_schemas::api::meta::ConditionStatus;
use ocm_edge_schemas::api::work::ManifestWork;
use ocm_edge_tests::fleet::{Fleet, FleetOptions};
use ocm_edge_tests::kube::{ControlPlane, agent_kubeconfig, get};
use ocm_edge_tests::process::agent_binary;
use ocm_edge_tests::wait::wait_until;
use serde_json::json;

const WAIT: Duration = Duration::from_secs(60);
const CLUSTER: &str = "kube-restart";
const TEST: &str =
    "e2e_the_api_server_goes_away_and_comes_back_while_the_agent_keeps_its_redb_state";

/// The work `restart`: a Namespace and a ConfigMap with `mode: value`.
fn work(value: &str) -> ManifestWork {
    serde_json::from_value(json!({
        "apiVersion": "work.open-cluster-management.io/v1",
        "kind": "ManifestWork",
        "metadata": {"name": "restart", "namespace": CLUSTER},
        "spec": {"workload": {"manifests": [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "e2e-restart"}},
            {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": "settings", "namespace": "e2e-restart"},
             "data": {"mode": value}}
        ]}}
    }))
    .unwrap()
}

/// Whether the hub shows the cluster's `ManagedClusterConditionAvailable` with `status` (False:
/// for the reason the agent gives when its API server does not answer).
async fn available_at_hub(fleet: &Fleet, status: ConditionStatus) -> bool {
    let Ok(cluster) = fleet.admin().await.get_cluster(CLUSTER).await else {
        return false;
    };
    cluster.available.is_some_and(|c| {
        c.status == status
            && (status == ConditionStatus::True
                || c.reason == "ManagedClusterKubeAPIServerUnavailable")
    })
}

/// Whether the hub's status of the work `restart` reports on spec `version` with `Applied` at
/// `status`.
async fn applied_at_hub(fleet: &Fleet, version: i64, status: ConditionStatus) -> bool {
    fleet
        .admin()
        .await
        .get_work(CLUSTER, "restart")
        .await
        .is_ok_and(|w| {
            w.status_version == Some(version)
                && w.conditions
                    .iter()
                    .any(|c| c.type_ == "Applied" && c.status == status)
        })
}

#[tokio::test]
async fn e2e_the_api_server_goes_away_and_comes_back_while_the_agent_keeps_its_redb_state() {
    let Some(admin_kubeconfig) = ocm_edge_tests::kube::kubeconfig(TEST) else {
        return;
    };
    let Some(mut control_plane) = ControlPlane::of(&admin_kubeconfig) else {
        assert!(
            std::env::var_os("CI").is_none(),
            "{TEST}: CI is set but the control plane was not started by tests/kube/up.sh \
             (no pids file beside {})",
            admin_kubeconfig.display()
        );
        eprintln!(
            "SKIPPED {TEST}: the cluster was not started by tests/kube/up.sh, so its API server \
             cannot be killed and started again from here"
        );
        return;
    };
    let admin = KubeApplier::connect(Some(&admin_kubeconfig)).await.unwrap();
    // An earlier run on the same cluster deleted its namespace; it may still be terminating.
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "e2e-restart"}});
    wait_until("an earlier run's namespace gone", WAIT, || async {
        get(&admin, &namespace).await.is_none()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = agent_kubeconfig(&admin, &admin_kubeconfig, dir.path()).await;

    let mut fleet = Fleet::start_with(FleetOptions {
        hub_broker: true,
        ..FleetOptions::default()
    })
    .await;
    let data_dir = dir.path().join("agent");
    let broker_url = fleet.broker_url().to_owned();
    let broker_ca_file = fleet.options().broker_ca_file.clone().unwrap();
    let token = fleet.join_token().unwrap().to_owned();
    let agent_command = || {
        let mut c = tokio::process::Command::new(agent_binary());
        c.args(["--cluster-name", CLUSTER, "--broker", &broker_url])
            .arg("--broker-ca-file")
            .arg(&broker_ca_file)
            .args(["--token", &token, "--applier", "kube"])
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .arg("--data-dir")
            .arg(&data_dir)
            .env_remove("OCM_EDGE_BROKER")
            .kill_on_drop(true);
        c
    };
    let mut agent = agent_command().spawn().unwrap();
    fleet.accept(CLUSTER).await;
    fleet
        .admin()
        .await
        .apply_manifest_work(work("before"))
        .await
        .expect("the hub takes the work");
    let config_map = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": "e2e-restart"}});
    let mode_on_cluster = |value: &'static str| {
        let admin = admin.clone();
        let config_map = config_map.clone();
        move || {
            let admin = admin.clone();
            let config_map = config_map.clone();
            async move {
                get(&admin, &config_map)
                    .await
                    .is_some_and(|c| c["data"]["mode"] == value)
            }
        }
    };
    wait_until(
        "the ConfigMap on the cluster",
        WAIT,
        mode_on_cluster("before"),
    )
    .await
    .unwrap();

    // The API server dies: the hub hears from the agent that it is unavailable.
    control_plane.kill_api_server().await;
    wait_until(
        "the hub shows the cluster's API server unavailable",
        WAIT,
        || available_at_hub(&fleet, ConditionStatus::False),
    )
    .await
    .unwrap();

    // An update made while it is down reaches the agent, which cannot apply it: the hub sees the
    // new version not applied.
    let written = fleet
        .admin()
        .await
        .apply_manifest_work(work("during"))
        .await
        .unwrap();
    let version = written.work.version;
    wait_until("the update's status at the hub: not applied", WAIT, || {
        applied_at_hub(&fleet, version, ConditionStatus::False)
    })
    .await
    .unwrap();

    // The hub (and its broker) go too, and the agent is killed and started again with the API
    // server still down: all it has is its redb store.
    fleet.stop_hub().await;
    agent.kill().await.unwrap();
    let mut agent = agent_command().spawn().unwrap();
    control_plane.restart_api_server().await;
    wait_until(
        "the update applied from the agent's store, with no hub",
        WAIT,
        mode_on_cluster("during"),
    )
    .await
    .unwrap();
    assert!(
        agent.try_wait().unwrap().is_none(),
        "the agent keeps running through it all"
    );

    // The hub back: the cluster available and the update applied.
    fleet.start_hub().await;
    wait_until("the hub shows the cluster available again", WAIT, || {
        available_at_hub(&fleet, ConditionStatus::True)
    })
    .await
    .unwrap();
    wait_until("the update Applied at the hub", WAIT, || {
        applied_at_hub(&fleet, version, ConditionStatus::True)
    })
    .await
    .unwrap();

    fleet
        .admin()
        .await
        .delete_work(CLUSTER, "restart")
        .await
        .unwrap();
    wait_until("the work's ConfigMap gone", WAIT, || async {
        get(&admin, &config_map).await.is_none()
    })
    .await
    .unwrap();
    agent.kill().await.unwrap();
}
