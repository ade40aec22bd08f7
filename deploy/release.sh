#!/usr/bin/env bash
# Builds what users install: static (musl) binaries and OCI images, checked, into dist/.
#
#   deploy/release.sh                    everything below, then a summary table
#   deploy/release.sh --only agent:aarch64   one binary, built and checked (what .ci/run does)
#
# 1. The binaries, with cargo-zigbuild (deploy/cross-tools.sh) and the `dist` profiles (fat LTO,
#    one codegen unit, stripped; `dist` for the agent is optimised for size, `dist-hub` for
#    speed): ocm-edge-agent for x86_64, aarch64 and armv7, the hub (`ocm-edge` without the demo,
#    which would pull the agent in) for x86_64 and aarch64, in dist/<arch>/. A target whose
#    standard library rustup cannot install is built with -Zbuild-std from rust-src
#    (RUSTC_BOOTSTRAP=1), and says so.
# 2. Each checked with `file` (statically linked, stripped, the right architecture) and its size
#    (an agent at most 15 MB).
# 3. The aarch64 and armv7 agents run under qemu-user against a real hub: the cross_agent test of
#    tests/tests/it/, as in CI.
# 4. One multi-arch OCI image per binary (deploy/image.sh), built twice to prove the digest is
#    reproducible, inspected with skopeo, and imported into a private containerd with ctr (the
#    importer `k3s ctr images import` is) when Debian's containerd is installed.
#
# Needs: Rust with rustup, python3 with pip (Zig), file, qemu-user, skopeo (apt-get install
# file qemu-user skopeo containerd). Environment: OCM_EDGE_DIST (default dist/),
# OCM_EDGE_DIST_TARGET (the cross builds' target directory, default cargo's),
# SOURCE_DATE_EPOCH (default the last commit's time).
set -euo pipefail
cd "$(dirname "$0")/.."
only=
case "${1:-}" in
  --only) only=${2:?--only BINARY:ARCH, e.g. agent:aarch64} ;;
  "") ;;
  *) echo "usage: $0 [--only agent|hub:x86_64|aarch64|armv7]" >&2; exit 2 ;;
esac
dist=${OCM_EDGE_DIST:-dist}
# Absolute: the tests below run from the workspace's crates, not from here.
case $dist in /*) ;; *) dist=$PWD/$dist ;; esac
dist_target=${OCM_EDGE_DIST_TARGET:-${CARGO_TARGET_DIR:-target}}
version=$(cargo metadata --no-deps --format-version 1 | jq -r '.packages[] | select(.name == "ocm-edge-agent") | .version')
# Only the images take SOURCE_DATE_EPOCH (deploy/image.sh defaults it to the last commit's time):
# build scripts that use cc re-run when it changes, so exported here it would rebuild crates at
# every commit.
PATH="$(deploy/cross-tools.sh):$PATH"
export CARGO_INCREMENTAL=0
started=$(date +%s)
say() { echo "[release] $(($(date +%s) - started)) s: $*" >&2; }
fail() { echo "error: $*" >&2; exit 1; }

# Rust target, `file`'s name for the architecture, OCI platform of each architecture.
declare -A triple=([x86_64]=x86_64-unknown-linux-musl [aarch64]=aarch64-unknown-linux-musl [armv7]=armv7-unknown-linux-musleabihf)
declare -A file_arch=([x86_64]="x86-64" [aarch64]="ARM aarch64" [armv7]="ARM, EABI5")
declare -A platform=([x86_64]=linux/amd64 [aarch64]=linux/arm64 [armv7]=linux/arm/v7)
declare -A cargo_args=(
  [agent]="-p ocm-edge-agent --bin ocm-edge-agent"
  [hub]="-p ocm-edge-cli --bin ocm-edge --no-default-features --features embedded-broker"
)
declare -A binary_name=([agent]=ocm-edge-agent [hub]=ocm-edge)
# Cargo.toml says why the agent is optimised for size and the hub for speed.
declare -A profile=([agent]=dist [hub]=dist-hub)
agent_max_bytes=$((15 * 1000 * 1000))

# build BINARY ARCH: builds, copies to $dist/ARCH/, checks; prints the file's path.
build() {
  local what=$1 arch=$2 target=${triple[$2]} name=${binary_name[$1]}
  local env=() std_args=()
  if ! rustup target list --installed | grep -qx "$target" && ! rustup target add "$target" >/dev/null 2>&1; then
    say "rustup has no prebuilt standard library for $target here: building it from rust-src (-Zbuild-std)"
    rustup component add rust-src >/dev/null 2>&1 || fail "neither rust-std for $target nor rust-src can be installed"
    std_args=(-Zbuild-std=std,panic_abort)
    # Without rust-std there are no self-contained musl start files either: Zig links its own.
    env=(RUSTC_BOOTSTRAP=1 "CARGO_TARGET_$(tr 'a-z-' 'A-Z_' <<< "$target")_RUSTFLAGS=-C link-self-contained=no")
  fi
  # shellcheck disable=SC2086 # cargo_args holds several words on purpose
  env "${env[@]}" cargo zigbuild --locked --quiet --profile "${profile[$what]}" --target "$target" --target-dir "$dist_target" \
    "${std_args[@]}" ${cargo_args[$what]} >&2
  mkdir -p "$dist/$arch"
  cp "$dist_target/$target/${profile[$what]}/$name" "$dist/$arch/$name.tmp"
  mv "$dist/$arch/$name.tmp" "$dist/$arch/$name"
  check "$what" "$arch" "$dist/$arch/$name"
  echo "$dist/$arch/$name"
}

# check BINARY ARCH FILE: static, stripped, of ARCH, and an agent small enough.
check() {
  local described size
  described=$(file -b "$3")
  case $described in
    *"statically linked"* | *"static-pie linked"*) ;;
    *) fail "$3 is not statically linked: $described" ;;
  esac
  [[ $described == *"${file_arch[$2]}"* ]] || fail "$3 is not for $2 (${file_arch[$2]}): $described"
  [[ $described == *", stripped"* ]] || fail "$3 is not stripped: $described"
  size=$(stat -c %s "$3")
  if [ "$1" = agent ] && [ "$size" -gt "$agent_max_bytes" ]; then
    fail "$3 is $size bytes, over the agent's budget of $agent_max_bytes (15 MB)"
  fi
  say "$3: $size bytes, $described"
}

if [ -n "$only" ]; then
  what=${only%%:*} arch=${only#*:}
  [ -n "${cargo_args[$what]:-}" ] && [ -n "${triple[$arch]:-}" ] || fail "--only $only: use agent or hub, and x86_64, aarch64 or armv7"
  build "$what" "$arch"
  exit 0
fi

command -v qemu-aarch64 >/dev/null && command -v qemu-arm >/dev/null || fail "qemu-user runs the ARM agents: apt-get install qemu-user"
command -v skopeo >/dev/null || fail "skopeo checks the images: apt-get install skopeo"
rm -rf "$dist"
for arch in x86_64 aarch64 armv7; do build agent "$arch" >/dev/null; done
for arch in x86_64 aarch64; do build hub "$arch" >/dev/null; done
say "binaries built and checked"

# The cross_agent test, as CI runs it, once per ARM agent.
cargo test --locked --quiet -p ocm-edge-tests --test it --no-run >&2
for arch in aarch64 armv7; do
  OCM_EDGE_CROSS_AGENT="$dist/$arch/ocm-edge-agent" CI=true \
    cargo test --locked --quiet -p ocm-edge-tests --test it cross_agent -- --nocapture >&2
done
say "the ARM agents joined, applied a work and reported its status under qemu-user"

images() {
  local out=$1
  SOURCE_DATE_EPOCH=$epoch deploy/image.sh ocm-edge-agent "$version" "$out" \
    "linux/amd64=$dist/x86_64/ocm-edge-agent" "linux/arm64=$dist/aarch64/ocm-edge-agent" \
    "linux/arm/v7=$dist/armv7/ocm-edge-agent" 2>/dev/null
  SOURCE_DATE_EPOCH=$epoch deploy/image.sh ocm-edge-hub "$version" "$out" \
    "linux/amd64=$dist/x86_64/ocm-edge" "linux/arm64=$dist/aarch64/ocm-edge" 2>/dev/null
}
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}
first=$(images "$dist/images")
again=$(images "$(mktemp -d)")
[ "$first" = "$again" ] || fail "two builds of the images gave different digests: $first / $again"
say "images built twice, same digests"
deploy/image-check.sh "$dist/images" "$version"

# The summary.
(cd "$dist" && sha256sum ./*/ocm-edge* images/*.oci.tar > SHA256SUMS)
{
  printf '\n%-26s %12s  %-64s  %s\n' file bytes sha256 file
  for f in "$dist"/*/ocm-edge "$dist"/*/ocm-edge-agent; do
    printf '%-26s %12s  %s  %s\n' "${f#"$dist"/}" "$(stat -c %s "$f")" "$(sha256sum "$f" | cut -d' ' -f1)" \
      "$(file -b "$f" | cut -d, -f1-2)"
  done
  printf '\n%-36s %-14s %-71s %s\n' image platform digest 'compressed layer bytes'
  for image in ocm-edge-agent ocm-edge-hub; do
    layout="$dist/images/$image"
    index=$(jq -r '.manifests[0].digest' "$layout/index.json")
    printf '%-36s %-14s %s\n' "$image:$version" index "$index"
    jq -r '.manifests[] | "\(.platform.os)/\(.platform.architecture)\(if .platform.variant then "/" + .platform.variant else "" end) \(.digest)"' \
      "$layout/blobs/sha256/${index#sha256:}" | while read -r plat digest; do
      layer=$(jq -r '.layers[0].size' "$layout/blobs/sha256/${digest#sha256:}")
      printf '%-36s %-14s %s %s\n' "" "$plat" "$digest" "$layer"
    done
  done
} | tee "$dist/SUMMARY.txt"
say "done: $dist/"
