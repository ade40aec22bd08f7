#!/usr/bin/env bash
# The kube applier's end-to-end tests against a real control plane: builds it once
# (tests/kube/build.sh, cached, with kubectl) and Helm for the chart tests (tests/helm/build.sh,
# cached), starts it on loopback (up.sh), runs the tests that need a real cluster with
# OCM_EDGE_E2E_KUBECONFIG pointing at it, and stops everything by pid (down.sh), also when a test
# fails or the script is interrupted.
#
# Usage: tests/kube/e2e.sh [extra cargo test arguments]
# (.ci/run starts the same control plane itself and runs them with every other test.)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin=$("$here/build.sh")
helm=$("$here/../helm/build.sh")
export OCM_EDGE_HELM="$helm/helm" OCM_EDGE_KUBECTL="$bin/kubectl"
work=$(mktemp -d "${TMPDIR:-/tmp}/ocm-edge-kube.XXXXXX")
cleanup() {
  "$here/down.sh" "$work"
  if [ "${OCM_EDGE_KEEP_KUBE:-}" = "" ]; then rm -rf "$work"; else echo "kept $work" >&2; fi
}
trap cleanup EXIT
kubeconfig=$("$here/up.sh" "$bin" "$work")
echo "control plane up: $kubeconfig" >&2
cd "$here/../.."
export OCM_EDGE_E2E_KUBECONFIG="$kubeconfig"
# The whole path needs the real agent and CLI binaries beside the tests.
cargo build -p ocm-edge-agent --bin ocm-edge-agent -p ocm-edge-cli --bin ocm-edge
cargo test -p ocm-edge-agent -p ocm-edge-tests "$@" e2e_
