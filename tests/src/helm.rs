//! The Helm charts (`deploy/helm/`) in the tests: the `helm` and `kubectl` binaries, rendering a
//! chart, and the plain manifests generated from the agent's chart, which are checked in
//! ([`GENERATED`]) and must stay its rendering.
//!
//! `tests/helm/build.sh` builds Helm from its Go module and `tests/kube/build.sh` kubectl with the
//! e2e control plane, from the same Kubernetes version; `.ci/run` names them in [`HELM_ENV`] and
//! [`KUBECTL_ENV`]. Without them (and without them on `PATH`) a test is skipped, or fails under
//! `CI`.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Environment variable naming the `helm` binary.
pub const HELM_ENV: &str = "OCM_EDGE_HELM";
/// Environment variable naming the `kubectl` binary.
pub const KUBECTL_ENV: &str = "OCM_EDGE_KUBECTL";

/// The repository's root.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is in the repository")
        .to_path_buf()
}

/// `helm`, or `None` after printing why `test` is skipped.
///
/// # Panics
/// When it is missing and `CI` is set: `.ci/run` builds it.
pub fn helm(test: &str) -> Option<PathBuf> {
    tool(test, "helm", HELM_ENV, "tests/helm/build.sh")
}

/// `kubectl`, or `None` after printing why `test` is skipped.
///
/// # Panics
/// When it is missing and `CI` is set: `.ci/run` builds it.
pub fn kubectl(test: &str) -> Option<PathBuf> {
    tool(test, "kubectl", KUBECTL_ENV, "tests/kube/build.sh")
}

/// `name` from `env`, else `PATH`; `script` is what builds it (Helm from its own module, kubectl
/// with the control plane).
fn tool(test: &str, name: &str, env: &str, script: &str) -> Option<PathBuf> {
    let found = std::env::var_os(env)
        .map(PathBuf::from)
        .or_else(|| crate::mosquitto::find_program(name));
    match found {
        Some(path) => Some(path),
        None if std::env::var_os("CI").is_some() => panic!(
            "{test}: CI is set but there is no {name} ({env} unset, none on PATH); .ci/run builds \
             it with {script}"
        ),
        None => {
            eprintln!(
                "SKIPPED {test}: no {name}; run {script} and set {env} to the {name} it built (or \
                 put one on PATH); set CI=1 to make this a failure"
            );
            None
        }
    }
}

/// Runs `program ARGS` in the repository's root, with `env` (and none of the test's own
/// `OCM_EDGE_*` settings of the broker, source id, data directory or credentials) and `stdin` on
/// its standard input, to completion.
///
/// # Panics
/// When it cannot be run.
pub fn run(program: &Path, args: &[&str], env: &[(&str, &OsStr)], stdin: &str) -> Output {
    use std::io::Write as _;
    let mut command = Command::new(program);
    for var in [
        "OCM_EDGE_BROKER",
        "OCM_EDGE_SOURCE_ID",
        "OCM_EDGE_DATA_DIR",
        "OCM_EDGE_CREDENTIALS",
    ] {
        command.env_remove(var);
    }
    let mut child = command
        .envs(env.iter().copied())
        .args(args)
        .current_dir(repo_root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("run {}: {e}", program.display()));
    let mut input = child.stdin.take().expect("stdin is piped");
    input
        .write_all(stdin.as_bytes())
        .unwrap_or_else(|e| panic!("write to {}: {e}", program.display()));
    drop(input);
    child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("wait for {}: {e}", program.display()))
}

/// One rendering of a chart: `helm template RELEASE CHART --namespace NAMESPACE -f VALUES...`,
/// paths relative to the repository's root.
#[derive(Debug, Clone, Copy)]
pub struct Rendering {
    /// The chart's directory, e.g. `deploy/helm/ocm-edge-agent`.
    pub chart: &'static str,
    /// The release's name.
    pub release: &'static str,
    /// The release's namespace.
    pub namespace: &'static str,
    /// Values files, in order.
    pub values: &'static [&'static str],
}

impl Rendering {
    /// The `helm` arguments of this rendering, `extra` appended.
    pub fn args<'a>(&'a self, extra: &[&'a str]) -> Vec<&'a str> {
        let mut args = vec![
            "template",
            self.release,
            self.chart,
            "--namespace",
            self.namespace,
        ];
        for values in self.values {
            args.extend(["-f", values]);
        }
        args.extend_from_slice(extra);
        args
    }

    /// The command line, as a person would type it.
    pub fn command_line(&self) -> String {
        format!("helm {}", self.args(&[]).join(" "))
    }

    /// Renders it with `helm` (`extra`: more arguments, e.g. `--set`); `Err` holds what helm
    /// said on standard error.
    ///
    /// # Panics
    /// When helm cannot be run.
    pub fn render(&self, helm: &Path, extra: &[&str]) -> Result<String, String> {
        let out = run(helm, &self.args(extra), &[], "");
        if out.status.success() {
            Ok(String::from_utf8(out.stdout).expect("helm prints UTF-8"))
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }
}

/// A checked-in file that is a chart's rendering with a header.
#[derive(Debug, Clone, Copy)]
pub struct Generated {
    /// The file, relative to the repository's root.
    pub path: &'static str,
    /// What it is and how it is used: the comment lines after the generated-file notice.
    pub about: &'static str,
    /// How it is rendered.
    pub rendering: Rendering,
}

impl Generated {
    /// The file's expected contents for the chart's `rendered` output.
    pub fn contents(&self, rendered: &str) -> String {
        format!(
            "# GENERATED from the agent's Helm chart; do not edit. It is:\n\
             #   {command}\n\
             # A test fails when it differs from that rendering; rewrite it with\n\
             #   {bless}\n\
             #\n\
             {about}{rendered}",
            command = self.rendering.command_line(),
            bless = BLESS_COMMAND,
            about = self.about,
        )
    }
}

/// The command that rewrites the [`GENERATED`] files.
pub const BLESS_COMMAND: &str = "OCM_EDGE_BLESS=1 cargo test -p ocm-edge-tests --test it helm_";

/// The agent chart rendered as users apply it without Helm.
pub const AGENT_PLAIN: Rendering = Rendering {
    chart: "deploy/helm/ocm-edge-agent",
    release: "ocm-edge-agent",
    namespace: "open-cluster-management-agent",
    values: &["deploy/k3s/agent-values.yaml"],
};

/// The agent chart rendered for the e2e tests: the ServiceAccount and RBAC the agent runs with
/// there, the work rights narrowed to the kinds the tests' works contain.
pub const AGENT_E2E: Rendering = Rendering {
    chart: "deploy/helm/ocm-edge-agent",
    release: "e2e-ocm-edge-agent",
    namespace: "ocm-edge-e2e-agent",
    values: &["tests/kube/agent-e2e-values.yaml"],
};

/// The files generated from the agent's chart.
pub const GENERATED: [Generated; 2] = [
    Generated {
        path: "deploy/k3s/agent.yaml",
        about: "# The ocm-edge agent on one edge cluster (k3s, KinD, MicroK8s), without Helm. Set the join\n\
                # settings in the Secret below, or let `ocm-edge cluster bootstrap NAME --agent-broker URL`\n\
                # on the hub's machine print this file with them filled in; import the image\n\
                # ocm-edge-agent:0.1.0; then: kubectl apply -f deploy/k3s/agent.yaml\n\
                # (docs/guides/k3s-agent.md).\n",
        rendering: AGENT_PLAIN,
    },
    Generated {
        path: "tests/kube/agent-e2e.yaml",
        about: "# The agent as the e2e tests run it: its ServiceAccount and RBAC (tests/src/kube.rs,\n\
                # agent_kubeconfig, applies those objects), with the work rights of\n\
                # tests/kube/agent-e2e-values.yaml.\n",
        rendering: AGENT_E2E,
    },
];

/// The objects of a multi-document YAML text, in order (empty documents left out).
///
/// # Panics
/// When a document is not YAML.
pub fn objects(text: &str) -> Vec<serde_json::Value> {
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|doc| serde::Deserialize::deserialize(doc).expect("a YAML document"))
        .filter(|v: &serde_json::Value| !v.is_null())
        .collect()
}
