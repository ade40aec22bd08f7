//! A short run of every fuzz target (`fuzz/`, cargo-fuzz with libFuzzer) over its seeds and a few
//! thousand mutations of them: the decoders that read the network or a file (an agent's message to
//! the hub, the hub's to an agent, an admin request and its credential, a broker login, YAML input) must not
//! panic on any of them.
//! The long runs (10 million executions per target) are done by hand and noted in the docs
//! (performance and security pages).
//!
//! This test is a binary of its own, not a module of `it`: it keeps every core busy with
//! instrumented code for its whole run (the targets run side by side, one per core), which would
//! slow the tests beside it that wait on deadlines (leases, keepalives) on a 2-core machine.
//!
//! The targets need a compiler with libFuzzer instrumentation (`fuzz/build.sh`, the flags of
//! `cargo fuzz build -O`, with `RUSTC_BOOTSTRAP=1`), so `.ci/run` builds them and names their
//! directory in `OCM_EDGE_FUZZ_BIN_DIR`; without it the test says SKIPPED, and under `CI` it
//! fails.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The slowest first (`expressions` compiles CEL for each input: about 33 s of the 70 the eight
/// take one after the other), so the others run beside it.
const TARGETS: [&str; 8] = [
    "expressions",
    "hub_agent_message",
    "agent_inbound",
    "hub_admin_request",
    "admin_credential",
    "broker_login",
    "yaml_input",
    "cluster_certificate",
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
             (fuzz/build.sh) or set {BIN_DIR_ENV}"
        );
        eprintln!(
            "SKIPPED fuzz smoke: no fuzz target binaries (build them with fuzz/build.sh); \
             set CI=1 to make this a failure"
        );
    }
    found
}

/// What one target's short run found: its execution count, or why it failed.
fn smoke_run(bin_dir: &Path, fuzz_dir: &Path, target: &str) -> Result<u64, String> {
    let seeds = fuzz_dir.join("seeds").join(target);
    let seed_count = std::fs::read_dir(&seeds)
        .map(|d| d.count())
        .unwrap_or_default();
    if seed_count == 0 {
        return Err(format!("{target}: no seeds in {}", seeds.display()));
    }
    // A corpus of its own, so the smoke run never writes into the repository.
    let corpus = tempfile::tempdir().map_err(|e| format!("{target}: temporary corpus: {e}"))?;
    let artifacts =
        tempfile::tempdir().map_err(|e| format!("{target}: temporary artifacts: {e}"))?;
    let out = Command::new(bin_dir.join(target))
        .arg(format!("-artifact_prefix={}/", artifacts.path().display()))
        .args(["-runs=30000", "-max_total_time=60", "-print_final_stats=1"])
        .arg(corpus.path())
        .arg(&seeds)
        .output()
        .map_err(|e| format!("cannot run the fuzz target {target}: {e}"))?;
    let log = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        // Kept for whoever reads the failure: the input that crashed the target.
        let kept = artifacts.keep();
        return Err(format!(
            "fuzz target {target} found a crash (input kept in {}):\n{log}",
            kept.display()
        ));
    }
    let runs = log
        .lines()
        .find_map(|l| l.strip_prefix("stat::number_of_executed_units:"))
        .and_then(|n| n.trim().parse::<u64>().ok())
        .ok_or_else(|| format!("{target}: no execution count in its output:\n{log}"))?;
    if runs < seed_count as u64 {
        return Err(format!(
            "{target} ran {runs} inputs, fewer than its {seed_count} seeds"
        ));
    }
    Ok(runs)
}

#[test]
fn every_fuzz_target_survives_its_seeds_and_their_mutations() {
    let Some(bin_dir) = bin_dir() else {
        return;
    };
    let fuzz_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    // One target per core at a time: each run is one single-threaded process.
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(TARGETS.len());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(target) = TARGETS.get(i) else {
                        break;
                    };
                    let result = smoke_run(&bin_dir, &fuzz_dir, target);
                    results.lock().unwrap().push((i, result));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    assert_eq!(results.len(), TARGETS.len(), "not every target ran");
    results.sort_by_key(|(i, _)| *i);
    let mut failures = Vec::new();
    for (i, result) in results {
        match result {
            Ok(runs) => println!("{}: {runs} executions, no crash", TARGETS[i]),
            Err(why) => failures.push(why),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
