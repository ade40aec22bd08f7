//! `ocm-edge demo` runs the whole story (broker, hub, three simulated agents, hub restart) and
//! ends with every cluster Applied and Available with feedback.

use std::process::Stdio;
use std::time::Duration;

use tokio::time::timeout;

const BIN: &str = env!("CARGO_BIN_EXE_ocm-edge");

#[tokio::test]
async fn the_demo_converges_survives_a_hub_restart_and_exits_zero() {
    let run = tokio::process::Command::new(BIN)
        .args(["demo", "--hub-downtime", "3s", "--converge-timeout", "60s"])
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    // The demo bounds each of its waits; this bounds the whole run.
    let out = timeout(Duration::from_secs(240), run)
        .await
        .expect("the demo finishes")
        .expect("the demo runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "demo failed: {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );

    assert!(stdout.contains("SIMULATED clusters"), "{stdout}");
    assert!(stdout.contains("hub STOPPED"), "{stdout}");
    assert!(stdout.contains("drift corrected by the agents"), "{stdout}");
    assert!(stdout.contains("hub RESTARTED"), "{stdout}");

    let (_, final_state) = stdout
        .split_once("Final state")
        .unwrap_or_else(|| panic!("no final table:\n{stdout}"));
    for cluster in ["edge-1", "edge-2", "edge-3"] {
        let row = final_state
            .lines()
            .find(|l| l.contains(cluster) && l.contains("demo-web"))
            .unwrap_or_else(|| panic!("no work row for {cluster}:\n{final_state}"));
        let cells: Vec<&str> = row
            .split(['│', '┆'])
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        // CLUSTER WORK VERSION APPLIED AVAILABLE PHASE FEEDBACK STATUS-AT
        assert_eq!(cells[3], "True", "Applied on {cluster}: {row}");
        assert_eq!(cells[4], "True", "Available on {cluster}: {row}");
        assert!(
            cells[6].contains("ReadyReplicas=3"),
            "feedback on {cluster}: {row}"
        );
        let cluster_row = final_state
            .lines()
            .find(|l| l.contains(cluster) && l.contains("Accepted"))
            .unwrap_or_else(|| panic!("no cluster row for {cluster}:\n{final_state}"));
        assert!(cluster_row.contains("True"), "{cluster_row}");
    }
    assert!(stdout.contains("Demo finished"), "{stdout}");
}
