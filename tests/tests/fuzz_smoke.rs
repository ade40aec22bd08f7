//! A short run of every fuzz target (`fuzz/`, cargo-fuzz with libFuzzer) over its seeds and a few
//! thousand mutations of them: the decoders that read the network or a file (an agent's message to
//! the hub, the hub's to an agent, an admin request and its credential, a broker login, YAML input) must not
//! panic on any of them.
//! The long runs (10 million executions per target) are done by hand and noted in the docs
//! (performance and security pages).
//!
//! This test is a binary of its own, not a module of `it`: it keeps one core busy with
//! instrumented code for its whole run, which would slow the tests beside it that wait on
//! deadlines (leases, keepalives) on a 2-core machine.
//!
//! The targets need a compiler with libFuzzer instrumentation (cargo-fuzz, `RUSTC_BOOTSTRAP=1`),
//! so `.ci/run` builds them and names their directory in `OCM_EDGE_FUZZ_BIN_DIR`; without it the
//! test says SKIPPED, and under `CI` it fails.

use std::path::{Path, PathBuf};
use std::process::Command;

const TARGETS: [&str; 8] = [
    "hub_agent_message",
    "agent_inbound",
    "hub_admin_request",
    "admin_credential",
    "broker_login",
    "yaml_input",
    "cluster_certificate",
    "expressions",
];
const BIN_DIR_ENV: &str = "OCM_EDGE_FUZZ_BIN_DIR";

fn bin_dir() -> Option<PathBuf> {
    let local = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/target/x86_64-unknown-linux-gnu/release");
    let found = std::env::var_os(BIN_DIR_ENV)
        .map(PathBuf::from)
        .into_iter()
        .chain([local])
        .find(|d| TARGETS.iter().all(|t| d.join(t).is_file()));
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "no fuzz target binaries but CI is set: build them as .ci/run does \
             (cargo install cargo-fuzz; RUSTC_BOOTSTRAP=1 cargo fuzz build -O) or set {BIN_DIR_ENV}"
        );
        eprintln!(
            "SKIPPED fuzz smoke: no fuzz target binaries (cargo install cargo-fuzz; \
             RUSTC_BOOTSTRAP=1 cargo fuzz build -O); set CI=1 to make this a failure"
        );
    }
    found
}

#[test]
fn every_fuzz_target_survives_its_seeds_and_their_mutations() {
    let Some(bin_dir) = bin_dir() else {
        return;
    };
    let fuzz_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    for target in TARGETS {
        let seeds = fuzz_dir.join("seeds").join(target);
        let seed_count = std::fs::read_dir(&seeds)
            .map(|d| d.count())
            .unwrap_or_default();
        assert!(seed_count > 0, "{target}: no seeds in {}", seeds.display());
        // A corpus of its own, so the smoke run never writes into the repository.
        let corpus = tempfile::tempdir().unwrap();
        let artifacts = tempfile::tempdir().unwrap();
        let out = Command::new(bin_dir.join(target))
            .arg(format!("-artifact_prefix={}/", artifacts.path().display()))
            .args(["-runs=30000", "-max_total_time=60", "-print_final_stats=1"])
            .arg(corpus.path())
            .arg(&seeds)
            .output()
            .unwrap_or_else(|e| panic!("cannot run the fuzz target {target}: {e}"));
        let log = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            // Kept for whoever reads the failure: the input that crashed the target.
            let kept = artifacts.keep();
            panic!(
                "fuzz target {target} found a crash (input kept in {}):\n{log}",
                kept.display()
            );
        }
        let runs = log
            .lines()
            .find_map(|l| l.strip_prefix("stat::number_of_executed_units:"))
            .and_then(|n| n.trim().parse::<u64>().ok())
            .unwrap_or_else(|| panic!("{target}: no execution count in its output:\n{log}"));
        assert!(
            runs >= seed_count as u64,
            "{target} ran {runs} inputs, fewer than its {seed_count} seeds"
        );
        println!("{target}: {runs} executions, no crash");
    }
}
