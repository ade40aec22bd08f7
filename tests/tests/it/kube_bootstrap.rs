//! `ocm-edge cluster bootstrap` as a user runs it, on the real API server of the e2e suite: its
//! output goes through `kubectl apply` (for real), then the real agent binary runs with what the
//! API server holds, the Secret's settings and the Deployment's environment read back and a token
//! of the ServiceAccount the output made (the cluster's nodes are kwok fakes that run no
//! containers, so the agent runs as a process beside them, with the rights it would have in its
//! pod). The cluster joins, is accepted with `ocm-edge cluster accept`, and a work applies with
//! the output's RBAC.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use base64::Engine as _;
use ocm_edge_agent::applier::kube::KubeApplier;
use ocm_edge_schemas::admin::ClusterState;
use ocm_edge_schemas::api::meta::is_condition_true;
use ocm_edge_schemas::api::work::ManifestWork;
use ocm_edge_tests::fleet::{Fleet, FleetOptions};
use ocm_edge_tests::kube::{get, service_account_kubeconfig, service_account_token};
use ocm_edge_tests::process::{agent_binary, cli_binary};
use ocm_edge_tests::wait::{wait_for, wait_until};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);
const CLUSTER: &str = "kube-boot";

/// [`ocm_edge_tests::helm::run`] off the test's runtime (the hub the CLI talks to runs on it).
async fn run(program: &Path, args: &[&str], env: &[(&str, &Path)], stdin: &str) -> Output {
    let program = program.to_path_buf();
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    let env: Vec<(String, PathBuf)> = env
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.to_path_buf()))
        .collect();
    let stdin = stdin.to_owned();
    let run = tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let env: Vec<(&str, &std::ffi::OsStr)> = env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_os_str()))
            .collect();
        ocm_edge_tests::helm::run(&program, &args, &env, &stdin)
    });
    tokio::time::timeout(WAIT, run)
        .await
        .expect("it finishes")
        .unwrap()
}

#[track_caller]
fn succeeded(what: &str, out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The object `kind`/`name` in the agent's namespace, as the API server holds it.
async fn object(
    admin: &KubeApplier,
    api_version: &str,
    kind: &str,
    namespace: &str,
    name: &str,
) -> Value {
    get(
        admin,
        &json!({"apiVersion": api_version, "kind": kind,
            "metadata": {"name": name, "namespace": namespace}}),
    )
    .await
    .unwrap_or_else(|| panic!("{kind} {namespace}/{name} is on the API server"))
}

/// The agent's environment as its pod would have it: the Secret's keys and the Deployment's
/// variables, but for where it finds its API server and its data (a process, not a pod).
fn agent_env(secret: &Value, deployment: &Value) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = secret["data"]
        .as_object()
        .expect("the Secret has data")
        .iter()
        .map(|(k, v)| {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(v.as_str().unwrap())
                .unwrap();
            (k.clone(), String::from_utf8(bytes).unwrap())
        })
        .collect();
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    for var in container["env"].as_array().expect("the Deployment's env") {
        let name = var["name"].as_str().unwrap();
        if !["OCM_EDGE_IN_CLUSTER", "OCM_EDGE_DATA_DIR"].contains(&name) {
            env.push((
                name.to_owned(),
                var["value"].as_str().unwrap_or_default().to_owned(),
            ));
        }
    }
    env
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_cluster_bootstraps_output_applied_with_kubectl_installs_an_agent_that_joins_and_applies_a_work()
 {
    let test = "e2e_cluster_bootstraps_output_applied_with_kubectl_installs_an_agent_that_joins_and_applies_a_work";
    let Some(admin_kubeconfig) = ocm_edge_tests::kube::kubeconfig(test) else {
        return;
    };
    let Some(kubectl) = ocm_edge_tests::helm::kubectl(test) else {
        return;
    };
    let admin = KubeApplier::connect(Some(&admin_kubeconfig)).await.unwrap();
    let fleet = Fleet::start_with(FleetOptions {
        hub_broker: true,
        ..FleetOptions::default()
    })
    .await;
    let hub_dir: PathBuf = fleet.hub_dir();
    let on_hub = [("OCM_EDGE_DATA_DIR", hub_dir.as_path())];

    // On the hub's machine: the install, for a broker on this machine (the hub's on loopback).
    let out = run(
        &cli_binary(),
        &[
            "cluster",
            "bootstrap",
            CLUSTER,
            "--agent-broker",
            fleet.broker_url(),
            "--allow-loopback",
            "--ttl",
            "1h",
        ],
        &on_hub,
        "",
    )
    .await;
    let install = succeeded("ocm-edge cluster bootstrap", &out);
    // On the edge cluster: the whole install.
    let kubeconfig = admin_kubeconfig.to_str().unwrap();
    let out = run(
        &kubectl,
        &["--kubeconfig", kubeconfig, "apply", "-f", "-"],
        &[],
        &install,
    )
    .await;
    let applied = succeeded("kubectl apply -f - of the bootstrap output", &out);
    eprintln!("{applied}");

    // What the API server now holds is what the agent runs with.
    let objects = ocm_edge_tests::helm::objects(&install);
    let account = objects
        .iter()
        .find(|o| o["kind"] == "ServiceAccount")
        .expect("the output makes the agent's ServiceAccount");
    let (namespace, name) = (
        account["metadata"]["namespace"].as_str().unwrap(),
        account["metadata"]["name"].as_str().unwrap(),
    );
    let secret = object(&admin, "v1", "Secret", namespace, name).await;
    let deployment = object(&admin, "apps/v1", "Deployment", namespace, name).await;
    let dir = tempfile::tempdir().unwrap();
    let token = service_account_token(&admin, namespace, name).await;
    let agent_kubeconfig = service_account_kubeconfig(&admin_kubeconfig, &token, dir.path());
    let mut agent = tokio::process::Command::new(agent_binary())
        .env_clear()
        .envs(agent_env(&secret, &deployment))
        .arg("--kubeconfig")
        .arg(&agent_kubeconfig)
        .arg("--data-dir")
        .arg(dir.path().join("agent"))
        .kill_on_drop(true)
        .spawn()
        .unwrap();

    // The hub's side of the double opt-in, with the real CLI on the hub's machine.
    fleet
        .wait_cluster_state(CLUSTER, ClusterState::Pending)
        .await
        .expect("the bootstrapped agent asks to join");
    let out = run(
        &cli_binary(),
        &["cluster", "accept", CLUSTER, "--broker", fleet.broker_url()],
        &on_hub,
        "",
    )
    .await;
    succeeded("ocm-edge cluster accept", &out);
    fleet
        .wait_cluster_state(CLUSTER, ClusterState::Accepted)
        .await
        .expect("accepted");

    // A work reaches the real API server through the agent, with the output's RBAC.
    let hub = fleet.admin().await;
    let work: ManifestWork = serde_json::from_value(json!({
        "apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
        "metadata": {"name": "boot", "namespace": CLUSTER},
        "spec": {"workload": {"manifests": [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "e2e-boot"}},
            {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": "site", "namespace": "e2e-boot"}, "data": {"site": CLUSTER}},
            {"apiVersion": "apps/v1", "kind": "Deployment",
             "metadata": {"name": "web", "namespace": "e2e-boot"},
             "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
               "template": {"metadata": {"labels": {"app": "web"}},
                 "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}}}]}}}))
    .unwrap();
    hub.apply_manifest_work(work).await.unwrap();
    wait_until("the work's objects on the API server", WAIT, || async {
        get(
            &admin,
            &json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "namespace": "e2e-boot"}}),
        )
        .await
        .is_some()
    })
    .await
    .unwrap();
    let config_map = object(&admin, "v1", "ConfigMap", "e2e-boot", "site").await;
    assert_eq!(config_map["data"]["site"], CLUSTER);
    wait_until("the work Applied at the hub", WAIT, || async {
        hub.get_work(CLUSTER, "boot")
            .await
            .is_ok_and(|w| is_condition_true(&w.conditions, "Applied"))
    })
    .await
    .unwrap();

    // The agent's own pod passed the namespace's `restricted` Pod Security admission: its
    // ReplicaSet created it (kwok runs no container; the pod waits for its volume).
    let pods = wait_for("the agent's pod admitted", WAIT, || {
        let kubectl = kubectl.clone();
        async move {
            let out = run(
                &kubectl,
                &[
                    "--kubeconfig",
                    kubeconfig,
                    "-n",
                    namespace,
                    "get",
                    "pods",
                    "-o",
                    "name",
                    "-l",
                    &format!("app.kubernetes.io/instance={name}"),
                ],
                &[],
                "",
            )
            .await;
            let names = String::from_utf8_lossy(&out.stdout).into_owned();
            (out.status.success() && names.starts_with("pod/")).then_some(names)
        }
    })
    .await
    .unwrap();
    eprintln!("admitted: {pods}");
    assert!(
        agent.try_wait().unwrap().is_none(),
        "the agent is still running"
    );
    agent.kill().await.unwrap();
    fleet.shutdown().await;
}
