#!/usr/bin/env bash
# Builds, once per version, the real Kubernetes control plane the end-to-end tests run against:
# kube-apiserver, kube-controller-manager and kube-scheduler from k8s.io/kubernetes (the wrapper
# module in controlplane/ requires it and replaces each k8s.io staging module with its published
# version), etcd (etcd/ calls etcd's own entry point) and kwok (fake nodes whose pods become
# Ready); and kubectl for the chart tests, from the same module, built after the control plane so
# it reuses the packages both need from the Go build cache (client-go, the API types). Prints the
# directory holding the binaries.
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
# The version stamps `kubectl version` prints (its release builds set them the same way).
kube_version=$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" { print $3 }' "$here/controlplane/go.mod")
(cd "$here/controlplane" && go build -trimpath -o "$out/bin.tmp/kubectl" -ldflags="-s -w \
  -X k8s.io/component-base/version.gitVersion=$kube_version \
  -X k8s.io/component-base/version.gitMajor=1 \
  -X k8s.io/component-base/version.gitMinor=$(echo "$kube_version" | cut -d. -f2) \
  -X k8s.io/client-go/pkg/version.gitVersion=$kube_version" \
  k8s.io/kubernetes/cmd/kubectl) >&2
(cd "$here/etcd" && go build -trimpath -ldflags="-s -w" -o "$out/bin.tmp/etcd" .) >&2
GOBIN="$out/bin.tmp" go install -trimpath -ldflags="-s -w" "sigs.k8s.io/kwok/cmd/kwok@$kwok_version" >&2
# Renamed last: an interrupted build never leaves a directory that looks complete.
rm -rf "$out/bin"
mv "$out/bin.tmp" "$out/bin"
echo "built the control plane in $(($(date +%s) - started)) s into $out/bin" >&2
echo "$out/bin"
