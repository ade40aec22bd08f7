//! What the real `ocm-edge-agent` binary says at its default log level: a line when it applies a
//! new work version and a line when a work's status changes, so an operator reading the log sees
//! what the agent did without turning on debug output.

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::*;
use ocm_edge_schemas::wire::extensions as ext;
use tokio::io::{AsyncBufReadExt, BufReader};

const CLUSTER: &str = "7ff1a8f4-8811-49b4-8c19-9271bc51975e";
const RID: &str = "55c61e54-a3f6-563d-9fec-b1fe297bdfdb";

#[tokio::test]
async fn applying_a_work_and_its_status_changes_are_logged_at_the_default_level() {
    let broker = start_broker();
    let mut hub = FakeHub::connect(
        &broker,
        &format!("sources/maestro/consumers/{CLUSTER}/agentevents"),
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_ocm-edge-agent"))
        .args(["--cluster-name", CLUSTER, "--source-id", "maestro"])
        .args(["--applier", "sim", "--broker", &broker])
        .arg("--data-dir")
        .arg(dir.path())
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    hub.next_event("spec.resync_request", |_| true).await;
    hub.publish_event(
        &maestro_spec(),
        &format!("sources/maestro/consumers/{CLUSTER}/sourceevents"),
    )
    .await;
    hub.next_event("status.update_request", |e| ext::resource_id(e) == Ok(RID))
        .await;

    let mut seen = Vec::new();
    let wanted = ["applying a new work version", "work status changed"];
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
    let _ = child.kill().await;
}
