//! The static agent users get for a Raspberry Pi or another ARM box (`deploy/release.sh`), run
//! under qemu-user against a real hub: the hub's embedded broker with TLS, a join token, the
//! operator's accept, a work applied and its status back, signed both ways as by default.
//! `.ci/run` runs it with the aarch64 agent; `deploy/release.sh` with the aarch64 and the armv7
//! one. The times it prints are emulated ones, for a look, never asserted.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ocm_edge_schemas::admin::ClusterState;
use ocm_edge_tests::cross::{Machine, cross_agent};
use ocm_edge_tests::fleet::{Fleet, FleetOptions, has_true_condition, is_available};
use ocm_edge_tests::manifests::{deployment, namespace};
use ocm_edge_tests::wait::wait_for;
use tokio::io::{AsyncBufReadExt, BufReader};

const CLUSTER: &str = "edge-arm";
/// An emulated agent is 5 to 20 times slower than a native one, on a CI machine that is busy:
/// bounds with slack, not speeds.
const EMULATED: Duration = Duration::from_secs(120);

#[tokio::test]
async fn a_static_arm_agent_under_qemu_joins_applies_a_work_and_reports_its_signed_status() {
    let test = "a_static_arm_agent_under_qemu_joins_applies_a_work_and_reports_its_signed_status";
    let Some(agent) = cross_agent(test) else {
        return;
    };
    eprintln!("{}: {}", agent.binary.display(), agent.elf);
    assert!(
        agent.elf.is_static,
        "{} is not statically linked: users' boxes have no musl",
        agent.binary.display()
    );
    assert_ne!(
        agent.elf.machine,
        Machine::host(),
        "{} is for this machine's architecture: point it at the cross-built one",
        agent.binary.display()
    );

    // The hub as `ocm-edge hub` runs it: its own broker, TLS with its CA, logins with keys.
    let fleet = Fleet::start_with(FleetOptions {
        hub_broker: true,
        ..FleetOptions::default()
    })
    .await;
    let pin = fleet.hub().hub_ca_pin().to_string();
    let data_dir = fleet.dir().join("cross-agent");
    let started = Instant::now();
    // As a user starts it (the quickstart's flags): the pin `ocm-edge hub` printed and a token.
    let mut child = agent
        .command()
        .args(["--cluster-name", CLUSTER, "--broker", fleet.broker_url()])
        .args(["--broker-ca-pin", &pin])
        .args(["--token", fleet.join_token().expect("the hub's join token")])
        .args(["--applier", "sim", "--sim-ready-delay", "0.3"])
        .args(["--reconcile-seconds", "1", "--lease-duration-seconds", "5"])
        .arg("--data-dir")
        .arg(&data_dir)
        .env_clear()
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", agent.qemu.display()));
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let mut lines = BufReader::new(child.stderr.take().expect("stderr is piped")).lines();
    let kept = log.clone();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            kept.lock().expect("not poisoned").push(line);
        }
    });
    let log_text = || log.lock().expect("not poisoned").join("\n");

    let admin = fleet.admin().await;
    let joined = wait_for(
        "the emulated agent's join request at the hub",
        EMULATED,
        || async move {
            admin
                .get_cluster(CLUSTER)
                .await
                .ok()
                .filter(|c| c.state == ClusterState::Pending)
        },
    )
    .await;
    assert!(
        joined.is_ok(),
        "{joined:?}; the agent's log:\n{}",
        log_text()
    );
    let join_time = started.elapsed();
    fleet.accept(CLUSTER).await;
    fleet
        .wait_cluster(CLUSTER, EMULATED, "available", is_available)
        .await;
    let available_time = started.elapsed();

    let applying = Instant::now();
    fleet
        .create_work(
            "web",
            &[CLUSTER],
            vec![namespace("web"), deployment("web", "web", 1, "nginx:1.27")],
        )
        .await;
    let applied = wait_for(
        "the work Applied and Available at the hub",
        EMULATED,
        || async move {
            admin.get_work(CLUSTER, "web").await.ok().filter(|w| {
                ["Applied", "Available"]
                    .iter()
                    .all(|t| has_true_condition(&w.conditions, t))
            })
        },
    )
    .await;
    assert!(
        applied.is_ok(),
        "{applied:?}; the agent's log:\n{}",
        log_text()
    );
    let apply_time = applying.elapsed();
    eprintln!(
        "{} under {}: join request at the hub {join_time:.1?} after start, available \
         {available_time:.1?} after start (accept included), a work applied with its status at \
         the hub {apply_time:.1?} after it was written",
        agent.elf,
        agent.qemu.display()
    );

    // The work is on the (simulated) cluster, as the agent's own `sim get` shows, under qemu too.
    let got = agent
        .command()
        .args(["sim", "--data-dir"])
        .arg(&data_dir)
        .args(["get", "Deployment", "web/web"])
        .env_clear()
        .output()
        .await
        .expect("the emulated agent's sim get runs");
    let object: serde_json::Value = serde_json::from_slice(&got.stdout).unwrap_or_else(|e| {
        panic!(
            "sim get printed no object ({e}): {}",
            String::from_utf8_lossy(&got.stderr)
        )
    });
    assert_eq!(object["spec"]["replicas"], 1, "{object}");

    // Signed both ways, nothing refused: the hub took the agent's statuses under the key it
    // bound at accept, and the agent applied only what the hub signed.
    let counters = fleet.stats().await.counters;
    let count = |name: &str| counters.get(name).copied().unwrap_or(0);
    assert!(count("statusesAccepted") > 0, "{counters:?}");
    assert_eq!(count("agentEventsRefusedSignature"), 0, "{counters:?}");
    assert_eq!(count("messagesMalformed"), 0, "{counters:?}");
    let text = log_text();
    assert!(
        !text.contains("INSECURE") && !text.contains("refused an event from the hub's side"),
        "{text}"
    );
    child.kill().await.expect("the emulated agent stops");
}
