#!/usr/bin/env bash
# Builds, once per version, Helm for the chart tests (tests/tests/it/helm_charts.rs) from its Go
# module, and prints the directory holding `helm`. kubectl, the chart tests' other client, is built
# with the control plane (tests/kube/build.sh), from the same Kubernetes version.
#
# The directory is keyed by the hash of this script and the Helm version, under
# $OCM_EDGE_CI_CACHE (default ~/.cache/ocm-edge-ci): a warm run builds nothing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${OCM_EDGE_CI_CACHE:-${HOME:-/tmp}/.cache/ocm-edge-ci}"
helm_version=v4.3.2
key=$( { cat "$here/build.sh"; echo "$helm_version"; } | sha256sum | cut -c1-16)
out="$cache/helm-$key"
if [ -x "$out/bin/helm" ]; then
  echo "$out/bin"
  exit 0
fi
mkdir -p "$out/bin.tmp"
export CGO_ENABLED=0
started=$(date +%s)
# The version stamp `helm version` prints (its release builds set it the same way).
GOBIN="$out/bin.tmp" go install -trimpath \
  -ldflags="-s -w -X helm.sh/helm/v4/internal/version.version=$helm_version" \
  "helm.sh/helm/v4/cmd/helm@$helm_version" >&2
# Renamed last: an interrupted build never leaves a directory that looks complete.
rm -rf "$out/bin"
mv "$out/bin.tmp" "$out/bin"
echo "built helm $helm_version in $(($(date +%s) - started)) s into $out/bin" >&2
echo "$out/bin"
