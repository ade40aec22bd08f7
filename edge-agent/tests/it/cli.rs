//! The `ocm-edge-agent` binary: flags, environment variables and clear errors.

use std::process::Command;

fn agent() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ocm-edge-agent"));
    c.env_remove("RUST_LOG");
    for (k, _) in std::env::vars() {
        if k.starts_with("OCM_EDGE_") {
            c.env_remove(k);
        }
    }
    c
}

#[test]
fn help_lists_every_flag() {
    let out = agent().arg("--help").output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--cluster-name",
        "--broker",
        "--data-dir",
        "--source-id",
        "--applier",
        "--sim-ready-delay",
        "--sim-capacity",
        "--sim-allocatable",
        "--sim-nodes",
        "--kubeconfig",
        "--in-cluster",
        "--label",
        "--claim",
        "--lease-duration-seconds",
        "--keepalive-seconds",
        "--hub-ca-pin",
        "--accept-unsigned-specs-from",
        "OCM_EDGE_CLUSTER_NAME",
    ] {
        assert!(help.contains(flag), "{flag} missing from --help:\n{help}");
    }
}

/// Runs the agent with `--cluster-name NAME` and returns its error output; it must fail.
fn refused_cluster_name(name: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = agent()
        .args(["--cluster-name", name, "--applier", "sim", "--data-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success(), "the agent started as {name:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_bad_cluster_name_exits_non_zero_with_a_message_that_says_what_to_use() {
    let err = refused_cluster_name("Edge_1");
    assert!(
        err.contains("cluster name") && err.contains("[a-z0-9-]+"),
        "{err}"
    );
}

#[test]
fn a_cluster_named_like_the_hubs_broker_identity_is_refused_before_it_connects() {
    let err = refused_cluster_name("ocm-edge-hub");
    assert!(
        err.contains("\"ocm-edge-hub\"") && err.contains("choose another name"),
        "{err}"
    );
}

#[test]
fn a_cluster_named_like_the_first_level_of_ocm_edges_topics_is_refused_before_it_connects() {
    let err = refused_cluster_name("addons");
    assert!(
        err.contains("\"addons\"")
            && err.contains("first level of ocm-edge's topics")
            && err.contains("choose another name"),
        "{err}"
    );
}

#[test]
fn a_lease_below_five_seconds_from_the_environment_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = agent()
        .env("OCM_EDGE_CLUSTER_NAME", "edge-1")
        .env("OCM_EDGE_LEASE_DURATION_SECONDS", "2")
        .args(["--applier", "sim", "--data-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("at least 5"));
}

#[test]
fn a_label_that_is_not_key_value_is_refused() {
    let out = agent()
        .args([
            "--cluster-name",
            "edge-1",
            "--applier",
            "sim",
            "--label",
            "novalue",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not k=v"));
}

/// Runs the sim agent with `args` (no broker is reached: it must refuse before) and returns its
/// error output; it must fail.
fn refused_sim(args: &[&str], env: &[(&str, &str)]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = agent()
        .args(["--cluster-name", "edge-1", "--applier", "sim", "--data-dir"])
        .arg(dir.path())
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(!out.status.success(), "the agent started with {args:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_simulated_capacity_that_is_not_a_quantity_names_the_flag_and_how_to_write_it() {
    let err = refused_sim(&["--sim-capacity", "cpu=4,memory=8GB"], &[]);
    assert!(
        err.contains("--sim-capacity memory=8GB")
            && err.contains("not a Kubernetes quantity")
            && err.contains("cpu=4,memory=8Gi,pods=110"),
        "{err}"
    );
    let err = refused_sim(&["--sim-allocatable", "cpu"], &[]);
    assert!(
        err.contains("--sim-allocatable \"cpu\" is not k=v") && err.contains("NAME=QUANTITY"),
        "{err}"
    );
    let err = refused_sim(&[], &[("OCM_EDGE_SIM_CAPACITY", "cpu=-2")]);
    assert!(
        err.contains("--sim-capacity cpu=-2") && err.contains("negative"),
        "{err}"
    );
}

#[test]
fn a_bad_maintenance_window_is_refused_at_start_naming_the_window_and_the_field() {
    for (window, field) in [
        ("0 22 * *;2h;Europe/Berlin", "schedule"),
        ("0 22 * * *;2x;Europe/Berlin", "duration"),
        ("0 22 * * *;2h;Europe/Atlantis", "time zone"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = agent()
            .args(["--cluster-name", "edge-1", "--applier", "sim", "--data-dir"])
            .arg(dir.path())
            .args(["--maintenance-window", window])
            .output()
            .unwrap();
        assert!(!out.status.success(), "the agent started with {window:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(window) && err.contains(field),
            "{window}: {err}"
        );
    }
}

#[test]
fn hold_and_release_write_and_remove_the_hold_file_in_the_data_dir() {
    let dir = tempfile::tempdir().unwrap();
    let out = agent()
        .args(["hold", "--note", "line 3 running", "--data-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let hold = ocm_edge_agent::maintenance::hold::read(dir.path()).expect("held");
    assert_eq!(hold.note, "line 3 running");
    let out = agent()
        .args(["release", "--data-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("hold released"));
    assert_eq!(ocm_edge_agent::maintenance::hold::read(dir.path()), None);
}
