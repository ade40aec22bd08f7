//! The `ocm-edge-proto` binary, run for real on the maestro vectors and on bad input.

use std::io::Write;
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_ocm-edge-proto");
const DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/vectors/maestro"
);

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("run ocm-edge-proto")
}

fn vector(name: &str) -> String {
    format!("{DIR}/{name}")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn statushash_prints_the_hash_go_peers_compute_for_the_maestro_status() {
    let o = run(&["statushash", &vector("cloudevents.agent.json")]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "6170884280acbd9d5e69ac59a00ef7cf84d50669621643782e7a3f1ab05836cf\n"
    );
}

#[test]
fn decode_prints_type_extensions_and_a_summary_of_the_status() {
    let o = run(&["decode", &vector("cloudevents.agent.json")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    for expected in [
        "type:        io.open-cluster-management.works.v1alpha1.manifestbundles.status.update_request",
        "time:        2025-12-16T06:00:17.921082037Z",
        "  sequenceid = 2000808179721572352",
        "  resourceversion = 1",
        "Applied = True (AppliedManifestWorkComplete)",
        "Deployment default/maestro-e2e-upgrade-test: Applied=True",
        "(matches)",
    ] {
        assert!(out.contains(expected), "missing {expected:?} in:\n{out}");
    }
}

#[test]
fn decode_lists_the_manifests_of_a_spec_event() {
    let o = run(&["decode", &vector("cloudevents.spec.maestro.json")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("manifests (1):"), "{out}");
    assert!(
        out.contains("Deployment default/maestro-e2e-upgrade-test"),
        "{out}"
    );
}

#[test]
fn statushash_of_a_spec_event_is_refused_with_a_fix() {
    let o = run(&["statushash", &vector("cloudevents.spec.maestro.json")]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("is not a ManifestWork status event"), "{err}");
    assert!(err.contains("fix:"), "{err}");
}

#[test]
fn bad_json_on_stdin_is_a_clear_error_with_exit_code_1() {
    let mut child = Command::new(BIN)
        .args(["decode", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"{\"specversion\":\"1.0\",")
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("not a CloudEvent in structured JSON"), "{err}");
    assert!(err.contains("line"), "{err}");
}

#[test]
fn a_missing_file_and_wrong_arguments_exit_with_code_2() {
    let o = run(&["decode", "/nonexistent/event.json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("cannot read /nonexistent/event.json"));
    let o = run(&["explain"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("usage: ocm-edge-proto"));
}

#[test]
fn a_status_event_with_an_undecodable_status_says_where() {
    // Cargo's per-package scratch directory for integration tests.
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("proto_cli_bad.json");
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(vector("cloudevents.agent.json")).unwrap()).unwrap();
    v["data"]["conditions"] = serde_json::json!("nope");
    std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
    let o = run(&["statushash", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("ManifestBundleStatus"), "{err}");
    assert!(err.contains("bad.json"), "{err}");
}
