//! The fleet benchmark itself, run small: the performance figures in the docs come from
//! `fleet-bench`, so a change that breaks it (or makes it measure the wrong process) must fail
//! here, not at the next release measurement. Figures are checked for sense, never for speed.

use std::collections::BTreeMap;
use std::process::Command;

/// Runs `fleet-bench --agents 3 --rounds 2` and returns its RESULT line's fields.
fn run_small_bench(broker: &str) -> BTreeMap<String, String> {
    run_small_bench_with(broker, &[])
}

/// [`run_small_bench`] with more flags.
fn run_small_bench_with(broker: &str, extra: &[&str]) -> BTreeMap<String, String> {
    let out = Command::new(env!("CARGO_BIN_EXE_fleet-bench"))
        .args(extra)
        .args([
            "--agents",
            "3",
            "--agents-per-process",
            "2",
            "--rounds",
            "2",
            "--timeout-secs",
            "120",
            "--broker",
            broker,
        ])
        .output()
        .expect("fleet-bench runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "fleet-bench failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let result = stdout
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .unwrap_or_else(|| panic!("no RESULT line in:\n{stdout}"));
    result
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

fn number(fields: &BTreeMap<String, String>, key: &str) -> f64 {
    fields
        .get(key)
        .unwrap_or_else(|| panic!("RESULT has no {key}: {fields:?}"))
        .parse()
        .unwrap_or_else(|e| panic!("RESULT {key} is not a number ({e}): {fields:?}"))
}

fn assert_sensible(fields: &BTreeMap<String, String>, broker: &str) {
    assert_eq!(fields.get("broker").map(String::as_str), Some(broker));
    assert_eq!(fields.get("agents").map(String::as_str), Some("3"));
    for key in ["join_s", "converge_s", "transport_s", "ratio"] {
        assert!(
            number(fields, key) > 0.0,
            "{key} must be positive: {fields:?}"
        );
    }
    // The hub runs in its own process: its memory is a live process's (a wrong pid reads 0).
    let first = number(fields, "hub_rss_first_mb");
    let end = number(fields, "hub_rss_end_mb");
    assert!(first > 1.0 && end > 1.0, "hub RSS not measured: {fields:?}");
    // Every cluster's spec and status crossed the broker and the spy saw them.
    assert!(
        number(fields, "wire_bytes_per_cluster") > 1000.0,
        "wire bytes not counted: {fields:?}"
    );
}

#[test]
fn fleet_bench_runs_a_small_fleet_on_the_embedded_broker_and_reports_the_hub_process() {
    let fields = run_small_bench("embedded");
    assert_sensible(&fields, "embedded");
}

#[test]
fn fleet_bench_runs_a_small_fleet_on_the_secure_default() {
    // TLS and logins, as `ocm-edge hub` runs by default: the agents join with a token and log in
    // with their keys, so the fleet converging at all proves the bench set them up that way.
    let fields = run_small_bench_with("embedded", &["--secure"]);
    assert_eq!(fields.get("secure").map(String::as_str), Some("true"));
    assert_eq!(fields.get("agents").map(String::as_str), Some("3"));
    for key in ["join_s", "converge_s", "hub_cpu_ms_per_cluster"] {
        assert!(number(&fields, key) > 0.0, "{key}: {fields:?}");
    }
    assert!(number(&fields, "hub_rss_end_mb") > 1.0, "{fields:?}");
    // No spy and no ideal run with logins: nothing counted, no ratio.
    assert_eq!(number(&fields, "wire_bytes_per_cluster"), 0.0, "{fields:?}");
    assert!(number(&fields, "ratio").is_nan(), "{fields:?}");
}

#[test]
fn fleet_bench_runs_a_small_fleet_on_mosquitto() {
    if ocm_edge_tests::mosquitto::require_mosquitto("fleet_bench_runs_a_small_fleet_on_mosquitto")
        .is_none()
    {
        return;
    }
    let fields = run_small_bench("mosquitto");
    assert_sensible(&fields, "mosquitto");
}
