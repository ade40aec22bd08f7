#!/usr/bin/env bash
# Builds, once per version, OCM's own work agent from its Go module (open-cluster-management.io/ocm,
# cmd/work, a `tool` of the wrapper module in workagent/), and copies beside it the CRD it needs on
# the managed cluster (AppliedManifestWork, from open-cluster-management.io/api). Prints the
# directory holding `work` and `appliedmanifestworks.crd.yaml`.
#
# The directory is keyed by the hash of the wrapper module and this script, under
# $OCM_EDGE_CI_CACHE (default ~/.cache/ocm-edge-ci): a warm run builds nothing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${OCM_EDGE_CI_CACHE:-${HOME:-/tmp}/.cache/ocm-edge-ci}"
key=$(cat "$here/build.sh" "$here"/workagent/go.* | sha256sum | cut -c1-16)
out="$cache/ocm-work-agent-$key"
if [ -x "$out/bin/work" ]; then
  echo "$out/bin"
  exit 0
fi
mkdir -p "$out/bin.tmp"
export CGO_ENABLED=0
started=$(date +%s)
cd "$here/workagent"
go build -trimpath -ldflags="-s -w" -o "$out/bin.tmp/work" open-cluster-management.io/ocm/cmd/work >&2
api=$(go list -m -f '{{.Dir}}' open-cluster-management.io/api)
cp "$api/work/v1/0000_01_work.open-cluster-management.io_appliedmanifestworks.crd.yaml" \
  "$out/bin.tmp/appliedmanifestworks.crd.yaml"
chmod u+w "$out/bin.tmp/appliedmanifestworks.crd.yaml"
# Renamed last: an interrupted build never leaves a directory that looks complete.
rm -rf "$out/bin"
mv "$out/bin.tmp" "$out/bin"
echo "built OCM's work agent in $(($(date +%s) - started)) s into $out/bin" >&2
echo "$out/bin"
