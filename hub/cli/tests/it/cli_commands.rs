//! The `ocm-edge` binary against a real hub on a real embedded broker (free port), with real
//! agents on simulated clusters where a cluster is needed. Every wait is bounded; nothing sleeps.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use ocm_edge_agent::{AgentConfig, AgentHandle, ApplierConfig, Registration, start_agent};
use ocm_edge_cli::client::AdminClient;
use ocm_edge_hub::{BrokerConfig, HubConfig, start_hub};
use ocm_edge_schemas::admin::{AdminErrorKind, WorkView};
use ocm_edge_schemas::api::meta::is_condition_true;
use ocm_edge_tests::fleet::{Fleet, FleetOptions};
use serde_json::Value;
use tokio::io::AsyncBufReadExt;
use tokio::time::{Instant, timeout};

use crate::join::wait_registration;

const BIN: &str = env!("CARGO_BIN_EXE_ocm-edge");
/// Bound on anything the fleet has to do (join, apply, report).
const WAIT: Duration = Duration::from_secs(30);

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/cli")
        .join(name)
}

/// A hub as `ocm-edge hub` runs it (its embedded broker with TLS and logins, the hub's defaults),
/// from the one harness ([`Fleet`] with `hub_broker`), and the CLI run against it.
pub(crate) struct TestHub {
    fleet: Fleet,
    url: String,
}

impl TestHub {
    pub(crate) async fn start() -> TestHub {
        let fleet = Fleet::start_with(
            FleetOptions {
                hub_broker: true,
                ..FleetOptions::default()
            }
            .hub_defaults(),
        )
        .await;
        TestHub {
            url: fleet.broker_url().to_owned(),
            fleet,
        }
    }

    /// The hub's data directory.
    pub(crate) fn hub_dir(&self) -> PathBuf {
        self.fleet.hub_dir()
    }

    /// A scratch directory beside the hub's (credential files, a CLI's working directory).
    pub(crate) fn scratch(&self) -> PathBuf {
        self.fleet.dir().to_owned()
    }

    /// Runs `ocm-edge ARGS --broker URL` to completion, with `OCM_EDGE_DATA_DIR` set to the
    /// hub's data directory: the CLI finds the hub's CA there, as next to `ocm-edge hub`.
    pub(crate) async fn cli(&self, args: &[&str]) -> Output {
        ocm_edge_with(&self.url, Some(&self.hub_dir()), args).await
    }

    async fn admin(&self) -> AdminClient {
        self.fleet.new_admin().await
    }

    /// A join token from `ocm-edge token create` on the hub's data directory.
    async fn join_token(&self) -> String {
        let out = self.cli(&["token", "create", "--ttl", "1h"]).await;
        assert_success(&out);
        stdout(&out)
            .lines()
            .find(|l| l.starts_with("oet1."))
            .unwrap_or_else(|| panic!("no token printed: {}", stdout(&out)))
            .to_owned()
    }

    /// Starts a simulated agent for `name`, waits for its join request, accepts it with the CLI,
    /// and waits until the agent hears it was accepted.
    async fn accepted_cluster(&self, name: &str) -> AgentHandle {
        let mut cfg = AgentConfig::new(name, &self.url, self.scratch().join(name));
        // The agent trusts the hub by its CA's pin and joins with a token from the CLI, as
        // `ocm-edge hub` tells agents to.
        cfg.tls.ca_pin = self.fleet.hub().ca_pin();
        cfg.join_token = Some(self.join_token().await);
        cfg.applier = ApplierConfig::Sim {
            ready_delay: Duration::from_millis(200),
        };
        cfg.reconcile_interval = Duration::from_secs(1);
        let agent = start_agent(cfg).await.expect("the agent starts");
        wait_registration(
            &agent,
            Registration::Pending,
            WAIT,
            "the hub records the join request",
        )
        .await;
        let out = self.cli(&["cluster", "accept", name]).await;
        assert_success(&out);
        assert!(stdout(&out).contains("accepted"), "{}", stdout(&out));
        wait_registration(
            &agent,
            Registration::Accepted,
            WAIT,
            "the agent hears it was accepted",
        )
        .await;
        agent
    }

    /// Polls the hub until `done` holds for the work.
    async fn wait_work(
        &self,
        cluster: &str,
        name: &str,
        done: impl Fn(&WorkView) -> bool,
    ) -> WorkView {
        let admin = self.admin().await;
        let deadline = Instant::now() + WAIT;
        let mut poll = tokio::time::interval(Duration::from_millis(100));
        loop {
            poll.tick().await;
            let work = admin.get_work(cluster, name).await.unwrap();
            if done(&work) {
                return work;
            }
            assert!(
                Instant::now() < deadline,
                "work {cluster}/{name} did not get there in {WAIT:?}: {work:#?}"
            );
        }
    }

    /// The harness's fleet the hub runs in.
    pub(crate) fn fleet(&self) -> &Fleet {
        &self.fleet
    }

    pub(crate) async fn stop(self) {
        self.fleet.shutdown().await;
    }
}

async fn ocm_edge(url: &str, args: &[&str]) -> Output {
    ocm_edge_with(url, None, args).await
}

/// `ocm-edge ARGS` with `OCM_EDGE_DATA_DIR` set to `data_dir`, for the commands that run on the
/// hub's machine and reach no broker.
pub(crate) async fn cli_in(data_dir: &Path, args: &[&str]) -> Output {
    ocm_edge_with("mqtts://127.0.0.1:1", Some(data_dir), args).await
}

/// `ocm-edge ARGS --broker URL` with `OCM_EDGE_DATA_DIR` set to `data_dir`, or unset.
async fn ocm_edge_with(url: &str, data_dir: Option<&Path>, args: &[&str]) -> Output {
    let mut command = tokio::process::Command::new(BIN);
    match data_dir {
        Some(dir) => command.env("OCM_EDGE_DATA_DIR", dir),
        None => command.env_remove("OCM_EDGE_DATA_DIR"),
    };
    let child = command
        .args(args)
        .args(["--broker", url])
        .env_remove("OCM_EDGE_BROKER_CA_FILE")
        .env_remove("OCM_EDGE_BROKER_CA_PIN")
        .env_remove("OCM_EDGE_CREDENTIALS")
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

pub(crate) fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[track_caller]
pub(crate) fn assert_success(out: &Output) {
    assert!(
        out.status.success(),
        "expected success, got {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        stdout(out),
        stderr(out)
    );
}

#[track_caller]
pub(crate) fn assert_failure_mentioning(out: &Output, needles: &[&str]) {
    assert!(
        !out.status.success(),
        "expected a failure, got success\nstdout:\n{}",
        stdout(out)
    );
    let err = stderr(out);
    assert!(err.starts_with("error: "), "{err}");
    for needle in needles {
        assert!(err.contains(needle), "stderr lacks {needle:?}:\n{err}");
    }
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", stdout(out)))
}

fn works_json(out: &Output) -> Vec<Value> {
    json(out).as_array().cloned().expect("a JSON list")
}

#[tokio::test]
async fn cluster_list_on_a_new_hub_says_there_are_none_and_json_is_an_empty_list() {
    let hub = TestHub::start().await;
    let out = hub.cli(&["cluster", "list"]).await;
    assert_success(&out);
    assert!(stdout(&out).contains("No clusters yet"), "{}", stdout(&out));

    let out = hub.cli(&["cluster", "list", "-o", "json"]).await;
    assert_success(&out);
    assert_eq!(json(&out), Value::Array(vec![]));

    let out = hub.cli(&["work", "list", "-o", "yaml"]).await;
    assert_success(&out);
    let parsed: Value = serde_yaml_ng::from_slice(&out.stdout).unwrap();
    assert_eq!(parsed, Value::Array(vec![]));
    hub.stop().await;
}

/// Runs `ocm-edge ARGS` against `hub` as a CLI away from the hub's data directory would: the
/// hub's CA given as a file, the credential only when given.
pub(crate) async fn cli_as(hub: &TestHub, credentials: Option<&Path>, args: &[&str]) -> Output {
    let elsewhere = hub.scratch().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let ca = hub.scratch().join("hub/pki/ca.pem");
    let mut full = args.to_vec();
    full.extend(["--broker-ca-file", ca.to_str().unwrap()]);
    if let Some(c) = credentials {
        full.extend(["--credentials", c.to_str().unwrap()]);
    }
    ocm_edge_with(&hub.url, Some(&elsewhere), &full).await
}

/// `ocm-edge user create NAME --role ROLE ARGS` on the hub data directory `hub_dir`, writing the
/// credential to `out_file`.
pub(crate) async fn run_user_create(
    hub_dir: &Path,
    out_file: &Path,
    name: &str,
    role: &str,
    args: &[&str],
) -> Output {
    tokio::process::Command::new(BIN)
        .args(["user", "create", name, "--role", role])
        .args(args)
        .arg("--data-dir")
        .arg(hub_dir)
        .arg("--out")
        .arg(out_file)
        .output()
        .await
        .unwrap()
}

/// `ocm-edge user create NAME --role ROLE` on the hub's data directory; returns the file.
async fn user_create(hub: &TestHub, name: &str, role: &str) -> PathBuf {
    let out_file = hub.scratch().join(format!("{name}.pem"));
    let out = run_user_create(&hub.hub_dir(), &out_file, name, role, &[]).await;
    assert_success(&out);
    assert!(
        stdout(&out).contains(&format!("user {name} (role {role}")),
        "{}",
        stdout(&out)
    );
    out_file
}

#[tokio::test]
async fn the_admin_api_refuses_unsigned_requests_and_lets_each_role_do_only_its_part() {
    let hub = TestHub::start().await;
    let agent = hub.accepted_cluster("edge-1").await;
    let web = fixture("web");
    let create = [
        "work",
        "create",
        "web",
        "-f",
        web.to_str().unwrap(),
        "--clusters",
        "edge-1",
    ];

    // Without a credential: the hub's broker does not even let the CLI in, and the message
    // says how to get one.
    let out = cli_as(&hub, None, &["cluster", "list"]).await;
    assert_failure_mentioning(
        &out,
        &[
            "refused a client without credentials",
            "--credentials",
            "ocm-edge user create",
        ],
    );
    let out = cli_as(&hub, None, &create).await;
    assert_failure_mentioning(&out, &["refused a client without credentials"]);

    // A viewer reads but cannot write.
    let viewer = user_create(&hub, "vera", "viewer").await;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&viewer).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "a credential is private");
    }
    let out = cli_as(&hub, Some(&viewer), &["cluster", "list", "-o", "json"]).await;
    assert_success(&out);
    let out = cli_as(&hub, Some(&viewer), &create).await;
    assert_failure_mentioning(
        &out,
        &[
            "forbidden: user \"vera\" (role viewer) may not createWork",
            "operator",
        ],
    );

    // An operator writes works but does not decide who joins.
    let operator = user_create(&hub, "otto", "operator").await;
    let out = cli_as(&hub, Some(&operator), &create).await;
    assert_success(&out);
    let out = cli_as(&hub, Some(&operator), &["cluster", "deny", "edge-1"]).await;
    assert_failure_mentioning(
        &out,
        &["forbidden: user \"otto\" (role operator) may not denyCluster"],
    );
    // Nor which cluster sets a cluster is in (its labels).
    let set = "cluster.open-cluster-management.io/clusterset=eu";
    let out = cli_as(&hub, Some(&operator), &["cluster", "label", "edge-1", set]).await;
    assert_failure_mentioning(
        &out,
        &["forbidden: user \"otto\" (role operator) may not labelCluster"],
    );

    // A credential of another hub (same CA name, another key) does not even get in to the
    // broker (the hub's log says why; the client is told only that it was refused).
    let other = TestHub::start().await;
    let stranger = user_create(&other, "mallory", "admin").await;
    let out = cli_as(&hub, Some(&stranger), &["cluster", "deny", "edge-1"]).await;
    assert_failure_mentioning(
        &out,
        &["refused the credentials for user \"ocm-edge-operator\""],
    );
    other.stop().await;

    // What the refused requests asked for did not happen: one work (the operator's), and the
    // cluster is still accepted.
    let out = hub.cli(&["work", "list", "-o", "json"]).await;
    assert_success(&out);
    assert_eq!(works_json(&out).len(), 1, "{}", stdout(&out));
    let out = hub.cli(&["cluster", "get", "edge-1", "-o", "json"]).await;
    assert_success(&out);
    assert_eq!(json(&out)["state"], "Accepted", "{}", stdout(&out));
    assert!(
        json(&out)["labels"].get("tier").is_none(),
        "{}",
        stdout(&out)
    );

    // The admin labels the cluster; a label Kubernetes would refuse changes nothing.
    let out = hub
        .cli(&["cluster", "label", "edge-1", "tier=canary", set])
        .await;
    assert_success(&out);
    assert!(stdout(&out).contains("tier=canary"), "{}", stdout(&out));
    let out = hub
        .cli(&["cluster", "label", "edge-1", "tier-", "zone=a b"])
        .await;
    assert_failure_mentioning(&out, &["\"zone\"=\"a b\"", "nothing was changed"]);
    let out = hub.cli(&["cluster", "label", "edge-1", "tier"]).await;
    assert_failure_mentioning(&out, &["\"tier\" is not a label change", "key-"]);
    let out = hub.cli(&["cluster", "get", "edge-1", "-o", "json"]).await;
    assert_eq!(json(&out)["labels"]["tier"], "canary", "{}", stdout(&out));
    let out = hub.cli(&["cluster", "label", "edge-1", "tier-"]).await;
    assert_success(&out);
    assert!(!stdout(&out).contains("tier="), "{}", stdout(&out));
    assert!(stdout(&out).contains(set), "{}", stdout(&out));

    // Taints the same way, with kubectl's syntax; the availability taints are the hub's own.
    let out = cli_as(
        &hub,
        Some(&operator),
        &["cluster", "taint", "edge-1", "maintenance:NoSelect"],
    )
    .await;
    assert_failure_mentioning(&out, &["may not taintCluster"]);
    let out = hub
        .cli(&[
            "cluster",
            "taint",
            "edge-1",
            "maintenance=firmware:NoSelect",
        ])
        .await;
    assert_success(&out);
    assert!(stdout(&out).contains("maintenance"), "{}", stdout(&out));
    let out = hub
        .cli(&["cluster", "taint", "edge-1", "maintenance:NoSchedule"])
        .await;
    assert_failure_mentioning(
        &out,
        &["unknown taint effect \"NoSchedule\"", "NoSelectIfNew"],
    );
    let unreachable = "cluster.open-cluster-management.io/unreachable-";
    let out = hub.cli(&["cluster", "taint", "edge-1", unreachable]).await;
    assert_failure_mentioning(&out, &["is the hub's own", "nothing was changed"]);
    let out = hub.cli(&["cluster", "get", "edge-1", "-o", "json"]).await;
    let taint = &json(&out)["taints"][0];
    assert_eq!(taint["key"], "maintenance", "{}", stdout(&out));
    assert_eq!(taint["value"], "firmware", "{}", stdout(&out));
    assert!(taint["timeAdded"].is_string(), "{}", stdout(&out));
    let out = hub
        .cli(&["cluster", "taint", "edge-1", "maintenance-"])
        .await;
    assert_success(&out);
    let out = hub.cli(&["cluster", "get", "edge-1", "-o", "json"]).await;
    assert!(
        json(&out)
            .get("taints")
            .is_none_or(|t| t.as_array().unwrap().is_empty()),
        "{}",
        stdout(&out)
    );
    let admin = hub.admin().await;
    let stats = admin.stats().await.unwrap();
    assert!(
        stats
            .counters
            .get("adminRequestsRefused")
            .copied()
            .unwrap_or(0)
            >= 2,
        "{:?}",
        stats.counters
    );
    // The same through `ocm-edge stats`, which a viewer may run.
    let out = cli_as(&hub, Some(&viewer), &["stats"]).await;
    assert_success(&out);
    let text = stdout(&out);
    assert!(text.contains("Clusters: 1 accepted"), "{text}");
    assert!(text.contains("Works:    1"), "{text}");
    let refused = stats.counters["adminRequestsRefused"];
    assert!(
        text.lines()
            .any(|l| l.contains("adminRequestsRefused") && l.contains(&refused.to_string())),
        "{text}"
    );
    let out = cli_as(&hub, Some(&viewer), &["stats", "-o", "json"]).await;
    assert_success(&out);
    assert_eq!(json(&out)["clustersAccepted"], 1, "{}", stdout(&out));
    assert_eq!(json(&out)["counters"]["adminRequestsRefused"], refused);
    agent.shutdown().await.unwrap();
    hub.stop().await;
}

/// `ocm-edge user ARGS --data-dir HUB_DATA` on the hub's machine.
pub(crate) async fn user_cmd(hub: &TestHub, args: &[&str]) -> Output {
    tokio::process::Command::new(BIN)
        .arg("user")
        .args(args)
        .arg("--data-dir")
        .arg(hub.hub_dir())
        .output()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_revoked_credential_is_refused_at_its_next_command_and_user_list_shows_it() {
    let hub = TestHub::start().await;
    let otto = user_create(&hub, "otto", "operator").await;
    let vera = user_create(&hub, "vera", "viewer").await;
    for who in [&otto, &vera] {
        assert_success(&cli_as(&hub, Some(who), &["cluster", "list"]).await);
    }
    let out = user_cmd(&hub, &["list"]).await;
    assert_success(&out);
    let listed = stdout(&out);
    for line in ["admin", "otto", "vera"] {
        let row = listed
            .lines()
            .find(|l| l.contains(&format!(" {line} ")))
            .unwrap_or_else(|| panic!("no row for {line}: {listed}"));
        assert!(row.contains("valid"), "{row}");
    }

    let out = user_cmd(&hub, &["revoke", "otto"]).await;
    assert_success(&out);
    assert!(
        stdout(&out).contains("revoked 1 credential(s) of user otto"),
        "{}",
        stdout(&out)
    );
    // The running hub refuses it at the next command, without a restart; vera and the admin
    // go on.
    let out = cli_as(&hub, Some(&otto), &["cluster", "list"]).await;
    assert_failure_mentioning(&out, &["refused the credentials"]);
    assert_success(&cli_as(&hub, Some(&vera), &["cluster", "list"]).await);
    assert_success(&hub.cli(&["cluster", "list"]).await);
    let out = user_cmd(&hub, &["list"]).await;
    let row = stdout(&out)
        .lines()
        .find(|l| l.contains(" otto "))
        .map(str::to_owned)
        .unwrap();
    assert!(row.contains("revoked"), "{row}");

    // Again: nothing to do. An unknown user or a serial that is no number: a usage error.
    let out = user_cmd(&hub, &["revoke", "otto"]).await;
    assert_success(&out);
    assert!(stdout(&out).contains("already revoked"), "{}", stdout(&out));
    let out = user_cmd(&hub, &["revoke", "nobody"]).await;
    assert_failure_mentioning(&out, &["no credential of user \"nobody\"", "user list"]);
    let out = user_cmd(&hub, &["revoke", "--serial", "not-hex"]).await;
    assert_failure_mentioning(&out, &["no serial number"]);

    // A new credential for otto works; revoking vera's by its serial refuses her.
    std::fs::remove_file(&otto).unwrap();
    let otto = user_create(&hub, "otto", "operator").await;
    assert_success(&cli_as(&hub, Some(&otto), &["cluster", "list"]).await);
    let vera_serial = stdout(&user_cmd(&hub, &["list"]).await)
        .lines()
        .find(|l| l.contains(" vera "))
        .and_then(|l| {
            l.split_whitespace()
                .find(|f| f.len() == 32 && f.bytes().all(|b| b.is_ascii_hexdigit()))
                .map(str::to_owned)
        })
        .expect("vera's serial is listed");
    assert_success(&user_cmd(&hub, &["revoke", "--serial", &vera_serial.to_uppercase()]).await);
    let out = cli_as(&hub, Some(&vera), &["cluster", "list"]).await;
    assert_failure_mentioning(&out, &["refused the credentials"]);
    hub.stop().await;
}

#[tokio::test]
async fn user_create_needs_the_hub_ca_a_known_role_a_scope_it_can_have_and_a_new_file() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: Vec<String>| async move {
        tokio::process::Command::new(BIN)
            .args(args)
            .env_remove("OCM_EDGE_DATA_DIR")
            .output()
            .await
            .unwrap()
    };
    let data = dir.path().join("no-hub").display().to_string();
    let out_file = dir.path().join("u.pem").display().to_string();
    let args = |role: &str, data: &str| -> Vec<String> {
        [
            "user",
            "create",
            "u",
            "--role",
            role,
            "--data-dir",
            data,
            "--out",
            &out_file,
        ]
        .map(str::to_owned)
        .to_vec()
    };
    let out = run(args("admin", &data)).await;
    assert_failure_mentioning(&out, &["no hub CA in", "on the hub's machine"]);
    assert!(!Path::new(&out_file).exists());
    let out = run(args("root", &data)).await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("use viewer, operator or admin"),
        "{}",
        stderr(&out)
    );
    // A scope is checked before the CA is looked for: an admin cannot be limited, and sets are
    // reached through namespaces.
    let mut scoped_admin = args("admin", &data);
    scoped_admin.extend(["--namespace".to_owned(), "team-a".to_owned()]);
    let out = run(scoped_admin).await;
    assert_failure_mentioning(&out, &["the admin role cannot be scoped"]);
    let mut sets_only = args("operator", &data);
    sets_only.extend(["--clusterset".to_owned(), "eu".to_owned()]);
    let out = run(sets_only).await;
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--namespace"), "{}", stderr(&out));
    assert!(!Path::new(&out_file).exists());

    let hub = TestHub::start().await;
    let hub_data = hub.hub_dir().display().to_string();
    let out = run(args("viewer", &hub_data)).await;
    assert_success(&out);
    let first = std::fs::read(&out_file).unwrap();
    let out = run(args("admin", &hub_data)).await;
    assert_failure_mentioning(&out, &["u.pem exists", "--out"]);
    assert_eq!(
        std::fs::read(&out_file).unwrap(),
        first,
        "nothing is overwritten"
    );
    hub.stop().await;
}

#[tokio::test]
async fn work_create_for_an_unknown_cluster_fails_naming_it_and_stores_nothing() {
    let hub = TestHub::start().await;
    let agent = hub.accepted_cluster("edge-1").await;
    let dir = fixture("web");
    let out = hub
        .cli(&[
            "work",
            "create",
            "web",
            "-f",
            dir.to_str().unwrap(),
            "--clusters",
            "edge-1,ghost",
        ])
        .await;
    assert_failure_mentioning(&out, &["ghost"]);

    // Not even the known cluster got the work.
    let out = hub.cli(&["work", "list", "-o", "json"]).await;
    assert_success(&out);
    assert!(works_json(&out).is_empty(), "{}", stdout(&out));
    agent.shutdown().await.unwrap();
    hub.stop().await;
}

#[tokio::test]
async fn invalid_yaml_is_reported_with_the_file_and_line_before_anything_is_sent() {
    // A port nobody listens on: the error must come from reading the file, not from connecting.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let file = fixture("invalid.yaml");
    let out = ocm_edge(
        &format!("mqtt://127.0.0.1:{port}"),
        &[
            "work",
            "create",
            "broken",
            "-f",
            file.to_str().unwrap(),
            "--clusters",
            "edge-1",
        ],
    )
    .await;
    assert_failure_mentioning(&out, &["invalid.yaml", "line 6"]);
    assert!(!stderr(&out).contains("connect"), "{}", stderr(&out));

    // The same for `apply`.
    let out = ocm_edge(
        &format!("mqtt://127.0.0.1:{port}"),
        &["apply", "-f", file.to_str().unwrap()],
    )
    .await;
    assert_failure_mentioning(&out, &["invalid.yaml", "line 6"]);
}

#[tokio::test]
async fn oversize_manifests_are_refused_and_nothing_is_stored_while_450_kib_goes_through() {
    let hub = TestHub::start().await;
    let agent = hub.accepted_cluster("edge-1").await;
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.yaml");
    let payload = "x".repeat(600 * 1024);
    std::fs::write(
        &big,
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\n  namespace: default\ndata:\n  blob: {payload}\n"
        ),
    )
    .unwrap();
    let out = hub
        .cli(&[
            "work",
            "create",
            "big",
            "-f",
            big.to_str().unwrap(),
            "--clusters",
            "edge-1",
        ])
        .await;
    assert_failure_mentioning(&out, &["big.yaml", "500 KiB"]);

    let out = hub
        .cli(&["work", "list", "--cluster", "edge-1", "-o", "json"])
        .await;
    assert_success(&out);
    assert!(works_json(&out).is_empty());

    // Just under the limit goes all the way to the agent and back.
    let payload = "y".repeat(450 * 1024);
    std::fs::write(
        &big,
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\n  namespace: default\ndata:\n  blob: {payload}\n"
        ),
    )
    .unwrap();
    let out = hub
        .cli(&[
            "work",
            "create",
            "big",
            "-f",
            big.to_str().unwrap(),
            "--clusters",
            "edge-1",
        ])
        .await;
    assert_success(&out);
    hub.wait_work("edge-1", "big", |w| {
        is_condition_true(&w.conditions, "Applied")
    })
    .await;
    agent.shutdown().await.unwrap();
    hub.stop().await;
}

#[tokio::test]
async fn deleting_or_getting_what_does_not_exist_fails_clearly() {
    let hub = TestHub::start().await;
    let agent = hub.accepted_cluster("edge-1").await;
    let out = hub
        .cli(&["work", "delete", "no-such-work", "--cluster", "edge-1"])
        .await;
    assert_failure_mentioning(&out, &["no-such-work"]);

    let out = hub
        .cli(&["work", "get", "no-such-work", "--cluster", "edge-1"])
        .await;
    assert_failure_mentioning(&out, &["no-such-work"]);

    let out = hub.cli(&["cluster", "accept", "nobody"]).await;
    assert_failure_mentioning(&out, &["nobody"]);
    let out = hub.cli(&["cluster", "get", "nobody", "-o", "json"]).await;
    assert_failure_mentioning(&out, &["nobody"]);
    agent.shutdown().await.unwrap();
    hub.stop().await;
}

#[tokio::test]
async fn apply_of_an_ocm_manifestwork_creates_it_and_its_status_and_feedback_come_back() {
    let hub = TestHub::start().await;
    let agent = hub.accepted_cluster("edge-1").await;
    let file = fixture("manifestwork.yaml");
    let out = hub.cli(&["apply", "-f", file.to_str().unwrap()]).await;
    assert_success(&out);
    assert!(
        stdout(&out).contains("manifestwork edge-1/hello-world created (version 1)"),
        "{}",
        stdout(&out)
    );

    hub.wait_work("edge-1", "hello-world", |w| {
        is_condition_true(&w.conditions, "Available")
            && w.resource_status.iter().any(|m| {
                m.status_feedback
                    .values
                    .iter()
                    .any(|v| v.name == "ReadyReplicas" && v.field_value.integer == Some(2))
            })
    })
    .await;

    let out = hub
        .cli(&[
            "work",
            "get",
            "hello-world",
            "--cluster",
            "edge-1",
            "-o",
            "json",
        ])
        .await;
    assert_success(&out);
    let work = json(&out);
    assert_eq!(work["name"], "hello-world");
    assert_eq!(work["cluster"], "edge-1");
    assert_eq!(work["version"], 1);
    assert_eq!(work["labels"]["app"], "hello");

    let out = hub
        .cli(&["work", "get", "hello-world", "--cluster", "edge-1"])
        .await;
    assert_success(&out);
    let table = stdout(&out);
    for needle in [
        "Applied",
        "Available",
        "Deployment",
        "hello/hello",
        "ReadyReplicas=2",
    ] {
        assert!(table.contains(needle), "table lacks {needle:?}:\n{table}");
    }

    // Applying the same file again changes nothing.
    let out = hub.cli(&["apply", "-f", file.to_str().unwrap()]).await;
    assert_success(&out);
    assert!(
        stdout(&out).contains("unchanged (version 1)"),
        "{}",
        stdout(&out)
    );
    agent.shutdown().await.unwrap();
    hub.stop().await;
}

#[tokio::test]
async fn apply_refuses_a_work_for_a_cluster_that_is_not_accepted_and_changes_nothing() {
    let hub = TestHub::start().await;
    let file = fixture("manifestwork.yaml");
    let out = hub.cli(&["apply", "-f", file.to_str().unwrap()]).await;
    assert_failure_mentioning(&out, &["edge-1", "manifestwork.yaml"]);
    let out = hub.cli(&["work", "list", "-o", "json"]).await;
    assert!(works_json(&out).is_empty());
    hub.stop().await;
}

#[tokio::test]
async fn work_create_list_get_and_delete_round_trip_through_the_cli() {
    let hub = TestHub::start().await;
    let agents = [
        hub.accepted_cluster("edge-1").await,
        hub.accepted_cluster("edge-2").await,
    ];
    let dir = fixture("web");
    let out = hub
        .cli(&[
            "work",
            "create",
            "web",
            "-f",
            dir.to_str().unwrap(),
            "--clusters",
            "edge-1,edge-2",
            "--feedback",
        ])
        .await;
    assert_success(&out);
    assert!(
        stdout(&out).contains("work web created on edge-1 (version 1)"),
        "{}",
        stdout(&out)
    );
    assert!(
        stdout(&out).contains("work web created on edge-2 (version 1)"),
        "{}",
        stdout(&out)
    );

    // The directory's files went in name order; README.txt was skipped.
    let out = hub
        .cli(&["work", "get", "web", "--cluster", "edge-2", "-o", "json"])
        .await;
    let kinds: Vec<String> = json(&out)["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["kind"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds, ["Namespace", "ConfigMap", "Deployment"]);

    // Creating it again without --overwrite is refused; with it, nothing changed.
    let out = hub
        .cli(&[
            "work",
            "create",
            "web",
            "-f",
            dir.to_str().unwrap(),
            "--clusters",
            "edge-1",
        ])
        .await;
    assert_failure_mentioning(&out, &["web"]);
    let out = hub
        .cli(&[
            "work",
            "create",
            "web",
            "-f",
            dir.to_str().unwrap(),
            "--clusters",
            "edge-1",
            "--overwrite",
            "--feedback",
        ])
        .await;
    assert_success(&out);
    assert!(stdout(&out).contains("unchanged"), "{}", stdout(&out));

    for cluster in ["edge-1", "edge-2"] {
        hub.wait_work(cluster, "web", |w| {
            is_condition_true(&w.conditions, "Available")
                && w.resource_status.iter().any(|m| {
                    m.status_feedback
                        .values
                        .iter()
                        .any(|v| v.name == "ReadyReplicas" && v.field_value.integer == Some(1))
                })
        })
        .await;
    }
    let out = hub.cli(&["work", "list"]).await;
    assert_success(&out);
    let table = stdout(&out);
    assert!(table.contains("web: ReadyReplicas=1"), "{table}");
    assert!(
        table.contains("edge-1") && table.contains("edge-2"),
        "{table}"
    );

    let out = hub
        .cli(&[
            "work",
            "delete",
            "web",
            "--cluster",
            "edge-1",
            "--wait",
            "--timeout",
            "10s",
        ])
        .await;
    assert_success(&out);
    assert!(
        stdout(&out).contains("deleted from edge-1"),
        "{}",
        stdout(&out)
    );
    let admin = hub.admin().await;
    let gone = admin.get_work("edge-1", "web").await.unwrap_err();
    assert_eq!(gone.hub_kind(), Some(AdminErrorKind::NotFound));
    admin
        .get_work("edge-2", "web")
        .await
        .expect("edge-2 keeps its work");
    for agent in agents {
        agent.shutdown().await.unwrap();
    }
    hub.stop().await;
}

#[tokio::test]
async fn a_wrong_source_id_gets_a_clear_no_hub_answered_error() {
    let hub = TestHub::start().await;
    let out = hub
        .cli(&[
            "cluster",
            "list",
            "--source-id",
            "elsewhere",
            "--timeout",
            "1s",
        ])
        .await;
    assert_failure_mentioning(&out, &["no hub answered", "\"elsewhere\"", &hub.url]);
    hub.stop().await;
}

#[tokio::test]
async fn an_unanswered_change_is_reported_as_unconfirmed_with_the_command_to_check_it() {
    // Nobody answers on source id "elsewhere": the change was sent, and for all the CLI knows a
    // hub stored it and stopped before answering. It must not be reported as lost.
    let hub = TestHub::start().await;
    let unanswered = [
        (
            vec!["work", "delete", "web", "--cluster", "edge-1"],
            "ocm-edge work get web --cluster edge-1",
        ),
        (
            vec!["cluster", "accept", "edge-9"],
            "ocm-edge cluster get edge-9",
        ),
    ];
    for (mut args, check) in unanswered {
        args.extend(["--source-id", "elsewhere", "--timeout", "1s"]);
        let out = hub.cli(&args).await;
        assert_failure_mentioning(
            &out,
            &[
                "did not confirm",
                "may have been carried out",
                check,
                "\"elsewhere\"",
            ],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("no hub answered"), "{stderr}");
    }
    hub.stop().await;
}

#[tokio::test]
async fn no_broker_gets_a_clear_cannot_connect_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("mqtt://127.0.0.1:{port}");
    let out = ocm_edge(&url, &["cluster", "list", "--timeout", "2s"]).await;
    assert_failure_mentioning(&out, &["cannot connect", &url, "--broker"]);
    let out = ocm_edge("127.0.0.1:1883", &["cluster", "list"]).await;
    assert_failure_mentioning(&out, &["invalid broker URL", "mqtt://"]);
}

#[tokio::test]
async fn the_hub_command_serves_the_cli_and_stops_cleanly_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = tokio::process::Command::new(BIN)
        .args([
            "hub",
            "--listen",
            "127.0.0.1:0",
            "--metrics-listen",
            "off",
            "--data-dir",
        ])
        .arg(dir.path().join("data"))
        .env_remove("OCM_EDGE_BROKER")
        .env_remove("OCM_EDGE_SOURCE_ID")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let first = timeout(WAIT, lines.next_line())
        .await
        .expect("the hub announces itself")
        .unwrap()
        .expect("a line");
    let url = first
        .split_whitespace()
        .find(|w| w.starts_with("mqtts://"))
        .map(|w| w.trim_end_matches(','))
        .unwrap_or_else(|| panic!("no mqtts:// broker URL in {first:?}"))
        .to_owned();
    let pin_line = timeout(WAIT, lines.next_line())
        .await
        .expect("the hub prints its CA pin")
        .unwrap()
        .expect("a line");
    assert!(
        pin_line.starts_with("CA pin sha256:") && pin_line.contains("pki/ca.pem"),
        "{pin_line:?}"
    );
    // The first start wrote the first admin's credential, private, and says where.
    let admin_line = timeout(WAIT, lines.next_line())
        .await
        .expect("the hub names its admin credential")
        .unwrap()
        .expect("a line");
    let credential = dir.path().join("data/admin-credentials.pem");
    assert!(
        admin_line.starts_with("admin credential: ")
            && admin_line.contains(credential.to_str().unwrap()),
        "{admin_line:?}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&credential).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    // Next to the hub (its data directory known) the CLI trusts the hub's CA with no flag;
    // elsewhere it does not trust it, and says which flag to give.
    let out = ocm_edge_with(
        &url,
        Some(&dir.path().join("data")),
        &["cluster", "list", "-o", "json"],
    )
    .await;
    assert_success(&out);
    assert_eq!(json(&out), Value::Array(vec![]));
    let out = ocm_edge(&url, &["cluster", "list", "--timeout", "2s"]).await;
    assert_failure_mentioning(&out, &["not trusted", "--broker-ca-pin"]);

    let pid = child.id().unwrap().to_string();
    let kill = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = timeout(WAIT, child.wait())
        .await
        .expect("the hub stops")
        .unwrap();
    assert!(status.success(), "{status:?}");
    assert!(dir.path().join("data").exists());
}

#[tokio::test]
async fn the_hub_command_refuses_an_intake_count_out_of_range_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    for n in ["0", "17"] {
        let out = tokio::process::Command::new(BIN)
            .args([
                "hub",
                "--listen",
                "127.0.0.1:0",
                "--intakes",
                n,
                "--data-dir",
            ])
            .arg(&data)
            .env_remove("OCM_EDGE_BROKER")
            .env_remove("OCM_EDGE_SOURCE_ID")
            .output()
            .await
            .unwrap();
        assert_failure_mentioning(&out, &["--intakes must be 1 to 16", &format!("not {n}")]);
        assert!(
            !data.exists(),
            "a refused hub command creates no data directory"
        );
    }
}

#[tokio::test]
async fn cluster_get_shows_state_labels_and_conditions_and_deny_revokes() {
    let hub = TestHub::start().await;
    let agent = hub.accepted_cluster("edge-1").await;

    let out = hub.cli(&["cluster", "list"]).await;
    assert_success(&out);
    assert!(stdout(&out).contains("edge-1") && stdout(&out).contains("Accepted"));

    let out = hub.cli(&["cluster", "get", "edge-1"]).await;
    assert_success(&out);
    let text = stdout(&out);
    for needle in [
        "Cluster:     edge-1",
        "State:       Accepted",
        "HubAcceptedManagedCluster",
    ] {
        assert!(text.contains(needle), "lacks {needle:?}:\n{text}");
    }
    // The agent's signing key, bound at accept: its 32-hex-digit id.
    let key = text
        .lines()
        .find_map(|l| l.strip_prefix("Agent key:   "))
        .unwrap_or_else(|| panic!("no agent key line:\n{text}"));
    assert!(
        key.len() == 32 && key.bytes().all(|b| b.is_ascii_hexdigit()),
        "{key:?}"
    );

    let out = hub.cli(&["cluster", "get", "edge-1", "-o", "yaml"]).await;
    assert_success(&out);
    let view: Value = serde_yaml_ng::from_slice(&out.stdout).unwrap();
    assert_eq!(view["name"], "edge-1");
    assert_eq!(view["state"], "Accepted");

    let out = hub.cli(&["cluster", "deny", "edge-1"]).await;
    assert_success(&out);
    assert!(stdout(&out).contains("denied"), "{}", stdout(&out));
    let out = hub.cli(&["cluster", "get", "edge-1", "-o", "json"]).await;
    assert_eq!(json(&out)["state"], "Denied");

    // Works cannot be sent to a denied cluster.
    let dir = fixture("web");
    let out = hub
        .cli(&[
            "work",
            "create",
            "web",
            "-f",
            dir.to_str().unwrap(),
            "--clusters",
            "edge-1",
        ])
        .await;
    assert_failure_mentioning(&out, &["edge-1"]);
    agent.shutdown().await.unwrap();
    hub.stop().await;
}

#[tokio::test]
async fn a_command_sent_before_the_hub_is_up_is_answered_once_it_is() {
    use ocm_edge_mqtt::{Session, SessionConfig, SessionEvent};

    let broker = tokio::task::spawn_blocking(|| {
        ocm_edge_mqtt::broker::start_embedded("127.0.0.1:0".parse().unwrap())
    })
    .await
    .unwrap()
    .unwrap();
    let url = broker.url().to_string();

    // Watch the request topic to know the CLI has asked while no hub listens.
    let mut watcher = SessionConfig::new(broker.url(), "watcher");
    watcher.subscriptions = vec!["ocm-edge/ocm-edge/admin/requests".to_owned()];
    let (_watcher, mut events) = Session::connect(watcher, WAIT).await.unwrap();
    // The hub's CA exists before the hub runs (as when an admin prepared it), and so does the
    // operator's credential.
    let dir = tempfile::tempdir().unwrap();
    let pki =
        ocm_edge_hub::pki::HubPki::load_or_create(&dir.path().join("pki"), chrono::Utc::now())
            .unwrap();
    let credential = dir.path().join("viewer.pem");
    let (pem, _) = ocm_edge_hub::admin::users::issue(
        &pki,
        "early",
        ocm_edge_schemas::admin::Role::Viewer,
        chrono::Duration::days(1),
        chrono::Utc::now(),
    )
    .unwrap();
    std::fs::write(&credential, pem).unwrap();
    let cli = tokio::spawn({
        let url = url.clone();
        let credential = credential.display().to_string();
        async move {
            ocm_edge(
                &url,
                &[
                    "cluster",
                    "list",
                    "-o",
                    "json",
                    "--timeout",
                    "20s",
                    "--credentials",
                    &credential,
                ],
            )
            .await
        }
    });
    timeout(WAIT, async {
        loop {
            if let SessionEvent::Message(_) = events.recv().await.unwrap() {
                return;
            }
        }
    })
    .await
    .expect("the CLI publishes its request");

    let mut cfg = HubConfig::new(dir.path());
    cfg.broker = BrokerConfig::External { url };
    let hub = start_hub(cfg).await.unwrap();

    let out = cli.await.unwrap();
    assert_success(&out);
    assert_eq!(json(&out), Value::Array(vec![]));
    hub.shutdown().await.unwrap();
}
