#!/usr/bin/env bash
# Builds, once per version, the two clients of the chart tests (tests/tests/it/helm_charts.rs):
# kubectl from the same k8s.io/kubernetes version as the e2e control plane (the module in
# kubectl/ requires and replaces exactly what tests/kube/controlplane does, so every module both
# build from is the same version; checked below) and Helm from its Go module. Prints the directory
# holding `helm` and `kubectl`.
#
# The directory is keyed by the hash of this script, kubectl's module files and the Helm version,
# under $OCM_EDGE_CI_CACHE (default ~/.cache/ocm-edge-ci): a warm run builds nothing. kubectl has
# a module of its own so that it leaves tests/kube/build.sh's key (and its 15-minute cold build)
# alone.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${OCM_EDGE_CI_CACHE:-${HOME:-/tmp}/.cache/ocm-edge-ci}"
helm_version=v4.3.2
kube_version() { awk '$1 == "require" && $2 == "k8s.io/kubernetes" { print $3 }' "$1/go.mod"; }
kube_version=$(kube_version "$here/kubectl")
if [ "$kube_version" != "$(kube_version "$here/../kube/controlplane")" ] ||
  ! cmp -s <(grep '^replace' "$here/kubectl/go.mod") <(grep '^replace' "$here/../kube/controlplane/go.mod"); then
  echo "tests/helm/kubectl/go.mod and the control plane's (tests/kube/controlplane/go.mod) differ" \
    "in the k8s.io/kubernetes version or the replace lines: copy the control plane's, then run" \
    "go mod tidy in tests/helm/kubectl" >&2
  exit 1
fi
key=$(cat "$here/build.sh" "$here"/kubectl/go.* "$here"/kubectl/*.go \
  | { cat; echo "$helm_version"; } | sha256sum | cut -c1-16)
out="$cache/helm-kubectl-$key"
if [ -x "$out/bin/helm" ] && [ -x "$out/bin/kubectl" ]; then
  echo "$out/bin"
  exit 0
fi
mkdir -p "$out/bin.tmp"
export CGO_ENABLED=0
started=$(date +%s)
# The version stamps `kubectl version` and `helm version` print (their release builds set them the
# same way), taken from the module versions built.
kube_minor=$(echo "$kube_version" | cut -d. -f2)
(cd "$here/kubectl" && go build -trimpath -o "$out/bin.tmp/kubectl" -ldflags="-s -w \
  -X k8s.io/component-base/version.gitVersion=$kube_version \
  -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$kube_minor \
  -X k8s.io/client-go/pkg/version.gitVersion=$kube_version" \
  k8s.io/kubernetes/cmd/kubectl) >&2
GOBIN="$out/bin.tmp" go install -trimpath \
  -ldflags="-s -w -X helm.sh/helm/v4/internal/version.version=$helm_version" \
  "helm.sh/helm/v4/cmd/helm@$helm_version" >&2
# Renamed last: an interrupted build never leaves a directory that looks complete.
rm -rf "$out/bin"
mv "$out/bin.tmp" "$out/bin"
echo "built kubectl $kube_version and helm $helm_version in $(($(date +%s) - started)) s into $out/bin" >&2
echo "$out/bin"
