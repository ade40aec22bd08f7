#!/usr/bin/env bash
# Builds, once per version, the real Kubernetes control plane the end-to-end tests run against:
# kube-apiserver, kube-controller-manager and kube-scheduler from k8s.io/kubernetes (the wrapper
# module in controlplane/ requires it and replaces each k8s.io staging module with its published
# version), etcd (etcd/ calls etcd's own entry point) and kwok (fake nodes whose pods become
# Ready). Prints the directory holding the binaries.
#
# The directory is keyed by the hash of the modules and this script, under
# $OCM_EDGE_CI_CACHE (default ~/.cache/ocm-edge-ci): a warm run builds nothing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${OCM_EDGE_CI_CACHE:-${HOME:-/tmp}/.cache/ocm-edge-ci}"
kwok_version=v0.7.0
key=$(cat "$here/build.sh" "$here"/controlplane/go.* "$here"/controlplane/*.go \
  "$here"/etcd/go.* "$here"/etcd/*.go | { cat; echo "$kwok_version"; } | sha256sum | cut -c1-16)
out="$cache/kube-$key"
if [ -x "$out/bin/kwok" ]; then
  echo "$out/bin"
  exit 0
fi
mkdir -p "$out/bin.tmp"
export CGO_ENABLED=0
started=$(date +%s)
(cd "$here/controlplane" && go build -trimpath -ldflags="-s -w" -o "$out/bin.tmp/" \
  k8s.io/kubernetes/cmd/kube-apiserver \
  k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler) >&2
(cd "$here/etcd" && go build -trimpath -ldflags="-s -w" -o "$out/bin.tmp/etcd" .) >&2
GOBIN="$out/bin.tmp" go install -trimpath -ldflags="-s -w" "sigs.k8s.io/kwok/cmd/kwok@$kwok_version" >&2
# Renamed last: an interrupted build never leaves a directory that looks complete.
rm -rf "$out/bin"
mv "$out/bin.tmp" "$out/bin"
echo "built the control plane in $(($(date +%s) - started)) s into $out/bin" >&2
echo "$out/bin"
