//! The real `ocm-edge-agent` binary from outside: what it says at its default log level (a line
//! when it applies a new work version and one when a work's status changes), and drift put into
//! its simulated cluster with `ocm-edge-agent sim ...` while it runs.

use std::process::Stdio;
use std::time::Duration;

use crate::support::*;
use ocm_edge_schemas::wire::extensions as ext;
use tokio::io::{AsyncBufReadExt, BufReader};

const CLUSTER: &str = "7ff1a8f4-8811-49b4-8c19-9271bc51975e";
const RID: &str = "55c61e54-a3f6-563d-9fec-b1fe297bdfdb";

/// The real agent binary on a fresh broker, a fake maestro hub, and the maestro work applied:
/// returns once the agent reported the work's status. `extra` are more agent flags; the agent's
/// stderr is piped.
struct Running {
    _broker: TestBroker,
    _hub: HubPeer,
    dir: tempfile::TempDir,
    child: tokio::process::Child,
}

/// The real agent binary (source maestro, sim applier, default log level, stderr piped) on a
/// fresh broker with a fake maestro hub, and the maestro spec published once the agent has
/// subscribed.
async fn agent_sent_the_maestro_spec(
    extra: &[&str],
) -> (
    TestBroker,
    HubPeer,
    tempfile::TempDir,
    tokio::process::Child,
) {
    let broker = start_broker();
    let mut hub = HubPeer::connect(
        &broker,
        &format!("sources/maestro/consumers/{CLUSTER}/agentevents"),
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_ocm-edge-agent"))
        .args(["--cluster-name", CLUSTER, "--source-id", "maestro"])
        .args(["--applier", "sim", "--broker", &broker])
        .args(extra)
        .arg("--data-dir")
        .arg(dir.path())
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    hub.next_event("spec.resync_request", |_| true).await;
    hub.publish_event(
        &maestro_spec(),
        &format!("sources/maestro/consumers/{CLUSTER}/sourceevents"),
    )
    .await;
    (broker, hub, dir, child)
}

async fn agent_with_the_maestro_work(extra: &[&str]) -> Running {
    let mut flags = vec!["--accept-unsigned-specs-from", "maestro"];
    flags.extend_from_slice(extra);
    let (broker, mut hub, dir, child) = agent_sent_the_maestro_spec(&flags).await;
    hub.next_event("status.update_request", |e| ext::resource_id(e) == Ok(RID))
        .await;
    Running {
        _broker: broker,
        _hub: hub,
        dir,
        child,
    }
}

#[tokio::test]
async fn applying_a_work_and_its_status_changes_are_logged_at_the_default_level() {
    let mut agent = agent_with_the_maestro_work(&[]).await;
    let mut lines = BufReader::new(agent.child.stderr.take().unwrap()).lines();

    let mut seen = Vec::new();
    let wanted = [
        "applying a new work version",
        "work status changed",
        "INSECURE: events from the hub's side are taken without a signature",
    ];
    let found = tokio::time::timeout(Duration::from_secs(30), async {
        while let Ok(Some(line)) = lines.next_line().await {
            seen.push(line);
            if wanted.iter().all(|w| seen.iter().any(|l| l.contains(w))) {
                return true;
            }
        }
        false
    })
    .await;
    assert!(
        matches!(found, Ok(true)),
        "the agent's log lacks one of {wanted:?}:\n{}",
        seen.join("\n")
    );
    let applying = seen
        .iter()
        .find(|l| l.contains("applying a new work version"))
        .unwrap();
    assert!(
        applying.contains("INFO") && applying.contains(RID),
        "{applying}"
    );
    assert!(
        seen.iter().all(|l| !l.contains('\x1b')),
        "colour codes in a log that goes to a pipe:\n{}",
        seen.join("\n")
    );
    let _ = agent.child.kill().await;
}

#[tokio::test]
async fn an_unsigned_spec_is_refused_logged_and_never_applied_without_the_explicit_flag() {
    let (_broker, _hub, dir, mut child) = agent_sent_the_maestro_spec(&[]).await;
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let refused = tokio::time::timeout(Duration::from_secs(30), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if line.contains("refused an event from the hub's side") {
                return Some(line);
            }
        }
        None
    })
    .await
    .ok()
    .flatten()
    .expect("the agent logs the unsigned spec it refused");
    assert!(
        refused.contains("WARN")
            && refused.contains("unsigned")
            && refused.contains("--accept-unsigned-specs-from"),
        "{refused}"
    );
    // Refused before anything was stored: nothing applied (the sim cluster has no Deployment).
    let (ok, _, err) = sim(
        dir.path(),
        &["get", "Deployment", "default/maestro-e2e-upgrade-test"],
    )
    .await;
    assert!(!ok && err.contains("no Deployment"), "{err}");
    let _ = child.kill().await;
}

/// Runs `ocm-edge-agent sim --data-dir DIR args...` and returns (success, stdout, stderr).
async fn sim(dir: &std::path::Path, args: &[&str]) -> (bool, String, String) {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_ocm-edge-agent"))
        .arg("sim")
        .arg("--data-dir")
        .arg(dir)
        .args(args)
        .output()
        .await
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Polls `sim get` until `pred` holds on the object (bounded).
async fn wait_object(
    dir: &std::path::Path,
    what: &str,
    pred: impl Fn(Option<serde_json::Value>) -> bool,
) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let mut poll = tokio::time::interval(Duration::from_millis(100));
    loop {
        poll.tick().await;
        let (ok, out, _) = sim(
            dir,
            &["get", "Deployment", "default/maestro-e2e-upgrade-test"],
        )
        .await;
        let object = ok.then(|| serde_json::from_str(&out).unwrap());
        if pred(object) {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "never saw {what}");
    }
}

#[tokio::test]
async fn drift_put_in_from_outside_a_running_sim_agent_is_corrected_by_its_reconcile() {
    let mut agent = agent_with_the_maestro_work(&["--reconcile-seconds", "0.2"]).await;
    let dir = agent.dir.path().to_owned();
    // Nobody reads its log here: keep the pipe drained so the agent never blocks on it.
    let mut log = BufReader::new(agent.child.stderr.take().unwrap()).lines();
    tokio::spawn(async move { while let Ok(Some(_)) = log.next_line().await {} });
    let replicas =
        |o: &Option<serde_json::Value>| o.as_ref().and_then(|o| o["spec"]["replicas"].as_i64());
    wait_object(&dir, "the applied Deployment", |o| replicas(&o) == Some(0)).await;

    // Changed behind the agent's back while its API server is down (so no reconcile can undo it
    // before we look): the drift is there, and once the API server is back the agent corrects it.
    const DEPLOYMENT: &str = "default/maestro-e2e-upgrade-test";
    type Drifted = fn(&Option<serde_json::Value>) -> bool;
    let drifts: [(&[&str], Drifted); 2] = [
        (
            &["set", "Deployment", DEPLOYMENT, "/spec/replicas=5"],
            |o| o.as_ref().and_then(|o| o["spec"]["replicas"].as_i64()) == Some(5),
        ),
        (&["delete", "Deployment", DEPLOYMENT], |o| o.is_none()),
    ];
    for (args, drifted) in drifts {
        let (ok, _, err) = sim(&dir, &["api-down"]).await;
        assert!(ok, "{err}");
        let (ok, _, err) = sim(&dir, args).await;
        assert!(ok, "{args:?}: {err}");
        let (_, out, _) = sim(&dir, &["get", "Deployment", DEPLOYMENT]).await;
        let now = serde_json::from_str(&out).ok();
        assert!(drifted(&now), "{args:?} did not change the object: {now:?}");
        let (ok, _, err) = sim(&dir, &["api-up"]).await;
        assert!(ok, "{err}");
        wait_object(&dir, "the drift corrected", |o| replicas(&o) == Some(0)).await;
    }

    // Bad requests say what is wrong and change nothing.
    let cases: [(&[&str], &str); 4] = [
        (
            &["get", "Deployment", "default/nope"],
            "no Deployment default/nope",
        ),
        (
            &[
                "set",
                "Deployment",
                "default/maestro-e2e-upgrade-test",
                "/spec/nothere=1",
            ],
            "no field at \"/spec/nothere\"",
        ),
        (
            &[
                "set",
                "Deployment",
                "default/maestro-e2e-upgrade-test",
                "spec.replicas=1",
            ],
            "not a JSON pointer",
        ),
        (
            &[
                "set",
                "Deployment",
                "default/maestro-e2e-upgrade-test",
                "/spec/replicas=five",
            ],
            "is not JSON",
        ),
    ];
    for (args, message) in cases {
        let (ok, _, err) = sim(&dir, args).await;
        assert!(!ok && err.contains(message), "{args:?}: {err}");
    }
    wait_object(&dir, "the Deployment unchanged", |o| {
        replicas(&o) == Some(0)
    })
    .await;
    let _ = agent.child.kill().await;

    let elsewhere = tempfile::tempdir().unwrap();
    let (ok, _, err) = sim(elsewhere.path(), &["api-down"]).await;
    assert!(
        !ok && err.contains("cannot reach the simulated cluster"),
        "{err}"
    );
}

/// `ocm-edge-agent unjoin --keep-resources --timeout-seconds 1` through the binary: refused while
/// the agent runs (it holds the store), and, with the agent stopped but no hub to answer, it
/// stops before wiping anything, saying how to go on.
#[tokio::test]
async fn unjoin_is_refused_while_the_agent_runs_and_wipes_nothing_until_a_hub_answers() {
    let mut agent = agent_with_the_maestro_work(&[]).await;
    let url = agent._broker.url();
    let dir = agent.dir.path().to_owned();
    let unjoin = || {
        tokio::process::Command::new(env!("CARGO_BIN_EXE_ocm-edge-agent"))
            .args(["--cluster-name", CLUSTER, "--source-id", "maestro"])
            .args(["--applier", "sim", "--broker", &url])
            .arg("--data-dir")
            .arg(&dir)
            .args(["unjoin", "--keep-resources", "--timeout-seconds", "1"])
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .output()
    };
    let running = unjoin().await.unwrap();
    let err = String::from_utf8_lossy(&running.stderr);
    assert!(
        !running.status.success() && err.contains("stop the agent first"),
        "{err}"
    );
    agent.child.kill().await.unwrap();
    let unanswered = unjoin().await.unwrap();
    let err = String::from_utf8_lossy(&unanswered.stderr);
    assert!(!unanswered.status.success(), "{err}");
    assert!(
        err.contains("the hub could not be told") && err.contains("ocm-edge cluster remove"),
        "{err}"
    );
    assert!(
        dir.join("agent-key.p8").exists(),
        "the key is kept for a second run"
    );
    assert!(dir.join("agent.redb").exists(), "the store is kept");
}
