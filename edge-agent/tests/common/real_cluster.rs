//! The real Kubernetes cluster of the end-to-end tests (`e2e_` tests): `tests/kube/e2e.sh` and
//! `.ci/run` start one from the Go modules (tests/kube/README.md) and name its admin kubeconfig
//! in [`KUBECONFIG_ENV`]; any cluster you may write to works too (k3s, KinD).
//!
//! Included by path (`#[path = ...] mod real_cluster;`) by the agent's and the `tests` crate's
//! end-to-end tests.

use std::path::PathBuf;

/// Environment variable naming the admin kubeconfig of the real cluster.
pub const KUBECONFIG_ENV: &str = "OCM_EDGE_E2E_KUBECONFIG";

/// The real cluster's admin kubeconfig. `None` (the test is skipped, with a line saying so) when
/// [`KUBECONFIG_ENV`] is not set, unless `CI` is set: then it panics, since CI starts a cluster.
pub fn kubeconfig(test: &str) -> Option<PathBuf> {
    match std::env::var_os(KUBECONFIG_ENV) {
        Some(path) => Some(PathBuf::from(path)),
        None if std::env::var_os("CI").is_some() => panic!(
            "{test}: CI is set but {KUBECONFIG_ENV} is not; .ci/run starts a real control plane \
             (tests/kube/up.sh) and sets it, or run tests/kube/e2e.sh"
        ),
        None => {
            eprintln!(
                "SKIPPED {test}: no real cluster; run tests/kube/e2e.sh (builds and starts one) or \
                 set {KUBECONFIG_ENV} to an admin kubeconfig; set CI=1 to make this a failure"
            );
            None
        }
    }
}
