//! The admin's hand on a real cluster in the end-to-end tests (`e2e_`): apply a manifest with
//! server-side apply (as `e2e-admin`, forced) and read an object back, through the agent's own
//! [`KubeApplier`] with the admin kubeconfig; the agent's RBAC-limited kubeconfig (its Helm
//! chart's ServiceAccount and RBAC) and binary; and
//! the control plane's kube-apiserver, to kill and start again ([`ApiServer`]).
//!
//! The real cluster itself: `tests/kube/e2e.sh` and `.ci/run` start one from the Go modules
//! (tests/kube/README.md) and name its admin kubeconfig in [`KUBECONFIG_ENV`]; any cluster you
//! may write to works too (k3s, KinD). [`kubeconfig`] finds it or says why a test is skipped.

use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine as _;
use chrono::Utc;
use ocm_edge_agent::applier::Applier;
use ocm_edge_agent::applier::kube::KubeApplier;
use ocm_edge_agent::work::plan::{ApplyAction, ApplyStrategy, DeletePropagation};
use ocm_edge_agent::work::resource::ResourceRef;
use ocm_edge_schemas::api::work::Manifest;
use serde_json::{Value, json};

/// Environment variable naming the admin kubeconfig of the real cluster.
pub const KUBECONFIG_ENV: &str = "OCM_EDGE_E2E_KUBECONFIG";

/// The real cluster's admin kubeconfig. `None` (the test is skipped, with a line saying so) when
/// [`KUBECONFIG_ENV`] is not set, unless `CI` is set: then it panics, since CI starts a cluster.
pub fn kubeconfig(test: &str) -> Option<PathBuf> {
    match std::env::var_os(KUBECONFIG_ENV) {
        Some(path) => Some(PathBuf::from(path)),
        None if std::env::var_os("CI").is_some() => panic!(
            "{test}: CI is set but {KUBECONFIG_ENV} is not; .ci/run starts a real control plane \
             (tests/kube/up.sh) and sets it, or run tests/kube/e2e.sh"
        ),
        None => {
            eprintln!(
                "SKIPPED {test}: no real cluster; run tests/kube/e2e.sh (builds and starts one) or \
                 set {KUBECONFIG_ENV} to an admin kubeconfig; set CI=1 to make this a failure"
            );
            None
        }
    }
}

/// Applies `manifest` as the admin; returns the object the API server holds.
///
/// # Panics
/// When the manifest names no resource or the API server refuses it.
pub async fn apply(admin: &KubeApplier, manifest: Value) -> Value {
    let m = Manifest(manifest.clone());
    let action = ApplyAction {
        ordinal: 0,
        resource: ResourceRef::from_manifest(&m, 0).unwrap(),
        manifest,
        strategy: ApplyStrategy::ServerSideApply {
            force: true,
            field_manager: "e2e-admin".into(),
            ignore_fields: vec![],
        },
        executor: None,
    };
    admin.apply(&action, Utc::now()).await.unwrap()
}

/// The object `manifest` names (apiVersion, kind, namespace, name), if it exists.
///
/// # Panics
/// When the manifest names no resource or the API server cannot be asked.
pub async fn get(admin: &KubeApplier, manifest: &Value) -> Option<Value> {
    let r = ResourceRef::from_manifest(&Manifest(manifest.clone()), 0).unwrap();
    admin.get(&r, Utc::now()).await.unwrap()
}

/// The agent's ServiceAccount and RBAC exactly as its Helm chart renders them for the e2e tests
/// (`tests/kube/agent-e2e.yaml`, [`crate::helm::AGENT_E2E`]: the work rights narrowed to the
/// kinds the tests' works contain), applied as the admin, and a kubeconfig in `dir` with a token
/// of that ServiceAccount (as the agent runs on a real cluster, not as the admin).
///
/// # Panics
/// When the manifests cannot be read or applied, or the token controller never fills the token.
pub async fn agent_kubeconfig(admin: &KubeApplier, admin_kubeconfig: &Path, dir: &Path) -> PathBuf {
    let path = crate::helm::repo_root().join("tests/kube/agent-e2e.yaml");
    let text = std::fs::read_to_string(&path).expect("tests/kube/agent-e2e.yaml");
    let mut account = None;
    for value in crate::helm::objects(&text) {
        let kind = value["kind"].as_str().unwrap_or_default();
        if kind == "ServiceAccount" {
            account = Some((
                value["metadata"]["namespace"].as_str().unwrap().to_owned(),
                value["metadata"]["name"].as_str().unwrap().to_owned(),
            ));
        }
        if [
            "Namespace",
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "Role",
            "RoleBinding",
        ]
        .contains(&kind)
        {
            apply(admin, value).await;
        }
    }
    let (namespace, name) = account.expect("the chart renders the agent's ServiceAccount");
    let token = service_account_token(admin, &namespace, &name).await;
    service_account_kubeconfig(admin_kubeconfig, &token, dir)
}

/// A token of ServiceAccount `namespace/name`: a token Secret of it, which the token controller
/// fills (a token that lives as long as the Secret, as a long-running agent's would).
///
/// # Panics
/// When the Secret cannot be applied or the token controller never fills it.
pub async fn service_account_token(admin: &KubeApplier, namespace: &str, name: &str) -> String {
    let secret = json!({
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
        "metadata": {"name": format!("{name}-token"), "namespace": namespace,
            "annotations": {"kubernetes.io/service-account.name": name}}
    });
    apply(admin, secret.clone()).await;
    crate::wait::wait_for(
        "the service account's token",
        Duration::from_secs(30),
        || async {
            get(admin, &secret).await.and_then(|s| {
                s["data"]["token"].as_str().map(|t| {
                    String::from_utf8(base64::engine::general_purpose::STANDARD.decode(t).unwrap())
                        .unwrap()
                })
            })
        },
    )
    .await
    .expect("the token controller fills the service account's token")
}

/// A kubeconfig in `dir` for the cluster of `admin_kubeconfig` with `token` as its user.
///
/// # Panics
/// When the admin kubeconfig cannot be read or the file cannot be written.
pub fn service_account_kubeconfig(admin_kubeconfig: &Path, token: &str, dir: &Path) -> PathBuf {
    let admin_config: Value = serde_yaml_ng::from_str(
        &std::fs::read_to_string(admin_kubeconfig).expect("the admin kubeconfig"),
    )
    .expect("the admin kubeconfig parses");
    let cluster = &admin_config["clusters"][0]["cluster"];
    let path = dir.join("agent.kubeconfig");
    let config = json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "e2e", "cluster": cluster}],
        "users": [{"name": "ocm-edge-agent", "user": {"token": token}}],
        "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": "ocm-edge-agent"}}],
        "current-context": "e2e"
    });
    std::fs::write(&path, serde_yaml_ng::to_string(&config).unwrap())
        .expect("write the kubeconfig");
    path
}

/// The control plane started by `tests/kube/up.sh` whose admin kubeconfig a test was given, found
/// through the `pids` file beside it: its kube-apiserver can be killed with SIGKILL and started
/// again with the same command line (same port, certificates and etcd: the cluster's objects
/// survive, as when a k3s server restarts). Components that exited meanwhile
/// (kube-controller-manager exits when the API server goes away at the wrong moment) are started
/// again too, as the kubelet restarts static pods. New processes go into `pids`, so
/// `tests/kube/down.sh` stops them.
///
/// Only one test binary runs at a time, but every test of the same binary shares the control
/// plane: a test that kills its API server must be alone in its file. Dropping a `ControlPlane`
/// starts again whatever is not running, so a failing test does not leave the control plane
/// broken for the tests after it.
#[derive(Debug)]
pub struct ControlPlane {
    work: PathBuf,
    admin_kubeconfig: PathBuf,
    /// Each component: name, pid, command line.
    components: Vec<(String, u32, Vec<String>)>,
}

/// The API server's name in `pids`.
const API_SERVER: &str = "kube-apiserver";

impl ControlPlane {
    /// The control plane whose admin kubeconfig is `admin_kubeconfig`; `None` when it was not
    /// started by `tests/kube/up.sh` (no `pids` file beside it, e.g. a k3s cluster) or its API
    /// server is not running.
    pub fn of(admin_kubeconfig: &Path) -> Option<ControlPlane> {
        let work = admin_kubeconfig.parent()?.to_path_buf();
        let pids = std::fs::read_to_string(work.join("pids")).ok()?;
        let components: Vec<_> = pids
            .lines()
            .filter_map(|l| {
                let (pid, name) = l.split_once(' ')?;
                let pid: u32 = pid.parse().ok()?;
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
                let command: Vec<String> = cmdline
                    .split(|b| *b == 0)
                    .filter(|a| !a.is_empty())
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect();
                (!command.is_empty()).then(|| (name.to_owned(), pid, command))
            })
            .collect();
        components
            .iter()
            .any(|(name, _, _)| name == API_SERVER)
            .then(|| ControlPlane {
                work,
                admin_kubeconfig: admin_kubeconfig.to_path_buf(),
                components,
            })
    }

    /// Kills the API server with SIGKILL (no graceful shutdown) and waits until it is gone.
    ///
    /// # Panics
    /// When it cannot be killed or does not die within 30 s.
    pub async fn kill_api_server(&mut self) {
        let pid = self
            .components
            .iter()
            .find(|(name, _, _)| name == API_SERVER)
            .map(|(_, pid, _)| *pid)
            .expect("the API server is a component");
        let status = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -KILL {pid} failed");
        crate::wait::wait_until(
            "the killed kube-apiserver gone",
            Duration::from_secs(30),
            || {
                let gone = !running(pid);
                async move { gone }
            },
        )
        .await
        .expect("kube-apiserver dies");
    }

    /// Starts the API server again with the command line it had (appending to its log) and waits
    /// until it answers `/livez` to the admin; then starts again any other component that exited,
    /// and waits until the whole control plane works again: a pod is scheduled onto the kwok node
    /// and becomes Ready (the scheduler's and kwok's watches back off while the API server is
    /// gone; without this the next test's Deployment took over a minute to become ready).
    ///
    /// # Panics
    /// When a component cannot be started, the API server does not come up within 120 s or the
    /// probe pod is not Ready within 180 s.
    pub async fn restart_api_server(&mut self) {
        self.start_exited(|name| name == API_SERVER);
        let admin = KubeApplier::connect(Some(&self.admin_kubeconfig))
            .await
            .expect("the admin kubeconfig");
        crate::wait::wait_until(
            "the restarted kube-apiserver ready",
            Duration::from_secs(120),
            || {
                let admin = admin.clone();
                async move { admin.health().await }
            },
        )
        .await
        .expect("kube-apiserver comes back");
        self.start_exited(|_| true);
        let probe = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("e2e-control-plane-probe-{}", std::process::id()),
                "namespace": "default"},
            "spec": {"containers": [{"name": "probe", "image": "probe"}]}});
        apply(&admin, probe.clone()).await;
        crate::wait::wait_until(
            "a probe pod Ready after the API server's restart",
            Duration::from_secs(180),
            || async {
                get(&admin, &probe).await.is_some_and(|p| {
                    p["status"]["conditions"].as_array().is_some_and(|c| {
                        c.iter()
                            .any(|c| c["type"] == "Ready" && c["status"] == "True")
                    })
                })
            },
        )
        .await
        .expect("the control plane schedules and runs pods again");
        let resource = ResourceRef::from_manifest(&Manifest(probe), 0).expect("the probe pod");
        admin
            .delete(&resource, DeletePropagation::Background)
            .await
            .expect("delete the probe pod");
    }

    /// Starts again, with its command line, each component `which` picks that is not running.
    fn start_exited(&mut self, which: impl Fn(&str) -> bool) {
        let mut restarted = false;
        for (name, pid, command) in &mut self.components {
            if !which(name) || running(*pid) {
                continue;
            }
            let log = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(self.work.join(format!("logs/{name}.log")))
                .expect("the component's log");
            // Not waited for: the component outlives this test process, as up.sh's do, and
            // tests/kube/down.sh stops it by its pid.
            #[expect(clippy::zombie_processes, reason = "stopped by tests/kube/down.sh")]
            let child = std::process::Command::new(&command[0])
                .args(&command[1..])
                .stdin(std::process::Stdio::null())
                .stdout(log.try_clone().expect("the log, again"))
                .stderr(log)
                .spawn()
                .unwrap_or_else(|e| panic!("start {name} again: {e}"));
            eprintln!(
                "control plane: {name} (was pid {pid}) started again as pid {}",
                child.id()
            );
            *pid = child.id();
            restarted = true;
        }
        if restarted {
            let pids: String = self
                .components
                .iter()
                .map(|(name, pid, _)| format!("{pid} {name}\n"))
                .collect();
            std::fs::write(self.work.join("pids"), pids).expect("update the control plane's pids");
        }
    }
}

/// Whether process `pid` runs (a zombie, exited but not yet reaped by init, does not).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit(')')
            .next()
            .is_some_and(|rest| !rest.trim_start().starts_with('Z'))
    })
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        // A test that failed between kill and restart: the tests after it need the control plane.
        self.start_exited(|_| true);
    }
}
