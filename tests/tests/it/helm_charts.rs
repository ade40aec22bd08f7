//! The Helm charts in `deploy/helm/`, with the real `helm` and `kubectl` (tests/helm/build.sh
//! builds Helm, tests/kube/build.sh kubectl with the e2e control plane, from its version): `helm lint`; the plain manifests
//! generated from the agent's chart are its rendering (`deploy/k3s/agent.yaml`, and the e2e
//! tests' RBAC in `tests/kube/agent-e2e.yaml`); an install without its join settings stops with
//! what to set; and both charts, with their defaults and with every option on, pass the real API
//! server's checks (`kubectl apply --dry-run=server`, Pod Security's `restricted` level included).

use ocm_edge_schemas::contracts::{self, BLESS_ENV, ContractFile};
use ocm_edge_tests::helm::{
    AGENT_PLAIN, BLESS_COMMAND, GENERATED, Rendering, helm, kubectl, objects, repo_root, run,
};
use std::path::Path;

const AGENT: &str = "deploy/helm/ocm-edge-agent";
const HUB: &str = "deploy/helm/ocm-edge-hub";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn helm_the_plain_agent_manifests_are_the_agent_charts_rendering() {
    let Some(helm) = helm("helm_the_plain_agent_manifests_are_the_agent_charts_rendering") else {
        return;
    };
    let mut problems = Vec::new();
    for generated in GENERATED {
        let rendering = generated.rendering;
        let rendered = rendering
            .render(&helm, &[])
            .unwrap_or_else(|e| panic!("{}: {e}", rendering.command_line()));
        // Checked from the file's top folder, so that a message names it from the repository's root.
        let (top, rest) = generated.path.split_once('/').expect("a file in a folder");
        let root = repo_root().join(top);
        let files = [ContractFile {
            path: rest.to_owned(),
            contents: generated.contents(&rendered),
        }];
        if std::env::var_os(BLESS_ENV).is_some() {
            let changed = contracts::bless(&root, &files, None).expect("the file is written");
            eprintln!("{BLESS_ENV}: rewrote {changed:?}");
        }
        problems.extend(contracts::check(&root, &files, None, BLESS_COMMAND));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn helm_lint_passes_for_both_charts_with_each_of_their_values_files() {
    let Some(helm) = helm("helm_lint_passes_for_both_charts_with_each_of_their_values_files")
    else {
        return;
    };
    let cases: [(&str, &[&str]); 5] = [
        (AGENT, &["-f", "deploy/k3s/agent-values.yaml"]),
        (
            AGENT,
            &[
                "-f",
                "deploy/helm/ocm-edge-agent/ci/all-options-values.yaml",
            ],
        ),
        (
            AGENT,
            &[
                "-f",
                "deploy/helm/ocm-edge-agent/ci/existing-objects-values.yaml",
            ],
        ),
        (HUB, &[]),
        (
            HUB,
            &["-f", "deploy/helm/ocm-edge-hub/ci/all-options-values.yaml"],
        ),
    ];
    for (chart, values) in cases {
        let mut args = vec!["lint", "--strict", chart];
        args.extend_from_slice(values);
        let out = run(&helm, &args, &[], "");
        assert!(
            out.status.success(),
            "helm {}:\n{}{}",
            args.join(" "),
            text(&out.stdout),
            text(&out.stderr)
        );
    }
}

#[test]
fn helm_an_agent_install_without_its_join_settings_stops_with_what_to_set() {
    let Some(helm) = helm("helm_an_agent_install_without_its_join_settings_stops_with_what_to_set")
    else {
        return;
    };
    let bare = Rendering {
        values: &[],
        ..AGENT_PLAIN
    };
    let cases: [(&[&str], &[&str]); 6] = [
        (&[], &["clusterName is required", "cluster bootstrap"]),
        (
            &["--set", "clusterName=store-17"],
            &["broker.url is required"],
        ),
        (
            &[
                "--set",
                "clusterName=store-17",
                "--set",
                "broker.url=mqtts://hub.example.net:8883",
            ],
            &["broker.caPin or broker.caCert is required", "CA pin"],
        ),
        (
            &["--set", "clusterName=Store_17"],
            &["clusterName", "does not match pattern"],
        ),
        (
            &[
                "--set",
                "clusterName=store-17",
                "--set",
                "broker.url=hub.example.net",
            ],
            &["url", "does not match pattern"],
        ),
        (
            &["--set", "clustername=store-17"],
            &["clustername", "additional properties"],
        ),
    ];
    for (extra, needles) in cases {
        let err = bare
            .render(&helm, extra)
            .expect_err(&format!("{extra:?} is refused"));
        let lower = err.to_lowercase();
        for needle in needles {
            assert!(
                lower.contains(&needle.to_lowercase()),
                "{extra:?}: {needle:?} not in {err}"
            );
        }
    }
    // With the pin the same install renders; an existing Secret stands for every join setting.
    let pin = format!("broker.caPin=sha256:{}", "0".repeat(64));
    for extra in [
        &[
            "--set",
            "clusterName=store-17",
            "--set",
            "broker.url=mqtts://hub.example.net:8883",
            "--set",
            pin.as_str(),
        ][..],
        &["--set", "existingSecret=store-17-join"],
    ] {
        bare.render(&helm, extra)
            .unwrap_or_else(|e| panic!("{extra:?} renders: {e}"));
    }
}

/// A namespace for one rendering on the real API server, made for real (a server-side dry run of
/// objects in a namespace that does not exist fails), under the `restricted` Pod Security level,
/// enforced and warned.
fn namespace(kubectl: &Path, kubeconfig: &str, name: &str) {
    let ns = format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n  labels:\n    \
         pod-security.kubernetes.io/enforce: restricted\n    \
         pod-security.kubernetes.io/warn: restricted\n"
    );
    let out = run(
        kubectl,
        &["--kubeconfig", kubeconfig, "apply", "-f", "-"],
        &[],
        &ns,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn e2e_helm_both_charts_with_defaults_and_every_option_pass_the_real_api_servers_dry_run() {
    let test =
        "e2e_helm_both_charts_with_defaults_and_every_option_pass_the_real_api_servers_dry_run";
    let Some(admin_kubeconfig) = ocm_edge_tests::kube::kubeconfig(test) else {
        return;
    };
    let (Some(helm), Some(kubectl)) = (helm(test), kubectl(test)) else {
        return;
    };
    let kubeconfig = admin_kubeconfig.to_str().unwrap();
    let cases = [
        Rendering {
            namespace: "e2e-chart-agent-plain",
            ..AGENT_PLAIN
        },
        Rendering {
            chart: AGENT,
            release: "every-option",
            namespace: "e2e-chart-agent-all",
            values: &["deploy/helm/ocm-edge-agent/ci/all-options-values.yaml"],
        },
        Rendering {
            chart: AGENT,
            release: "own-objects",
            namespace: "e2e-chart-agent-own",
            values: &["deploy/helm/ocm-edge-agent/ci/existing-objects-values.yaml"],
        },
        Rendering {
            chart: HUB,
            release: "ocm-edge-hub",
            namespace: "e2e-chart-hub-defaults",
            values: &[],
        },
        Rendering {
            chart: HUB,
            release: "every-option",
            namespace: "e2e-chart-hub-all",
            values: &["deploy/helm/ocm-edge-hub/ci/all-options-values.yaml"],
        },
    ];
    for case in cases {
        let what = case.command_line();
        let rendered = case
            .render(&helm, &[])
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let objects = objects(&rendered);
        namespace(&kubectl, kubeconfig, case.namespace);
        let out = run(
            &kubectl,
            &[
                "--kubeconfig",
                kubeconfig,
                "apply",
                "--dry-run=server",
                "-f",
                "-",
            ],
            &[],
            &rendered,
        );
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert!(
            out.status.success(),
            "{what}: the API server refuses it:\n{stderr}"
        );
        // Every object went through the API server's validation and admission.
        let dry_run = stdout
            .lines()
            .filter(|l| l.ends_with("(server dry run)"))
            .count();
        assert_eq!(dry_run, objects.len(), "{what}:\n{stdout}");
        assert!(
            !stderr.contains("violate PodSecurity"),
            "{what}: the pod is not `restricted`:\n{stderr}"
        );
        eprintln!("{what}: {dry_run} objects pass the API server's dry run");
    }
}
