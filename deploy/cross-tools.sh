#!/usr/bin/env bash
# Installs what builds the static binaries, once per version, into a cache directory, and prints
# the directories to put before PATH (`PATH="$(deploy/cross-tools.sh):$PATH"`):
#
# - Zig, from PyPI's `ziglang` wheel: the C compiler and linker for every musl target (it carries
#   musl's headers and libc for each architecture, which Debian's cross compilers do not;
#   docs/performance.md has the comparison);
# - cargo-zigbuild, from PyPI's `cargo-zigbuild` wheel (its maintainer's own build of the crates.io
#   release): cargo with Zig as the C compiler (ring, aws-lc) and the linker. Building it from
#   crates.io instead cost a cold CI run 113 s of CPU (docs/performance.md#ci-time); where PyPI has
#   no wheel for the machine, pip builds it from source (that needs Rust, which is here anyway).
#
# Cache: $OCM_EDGE_CI_CACHE (as .ci/run sets it), else ~/.cache/ocm-edge-ci.
set -euo pipefail

zig_version=0.15.2
zigbuild_version=0.24.1
cache="${OCM_EDGE_CI_CACHE:-${HOME:-/tmp}/.cache/ocm-edge-ci}"
zig_dir="$cache/zig-$zig_version"
zigbuild_dir="$cache/cargo-zigbuild-$zigbuild_version-pypi"

python=$(command -v python3 || true)
# pip_install DIR SPEC: installs one wheel into DIR (renamed last: an interrupted install never
# leaves a directory that looks complete).
pip_install() {
  [ -n "$python" ] || { echo "error: python3 with pip installs Zig and cargo-zigbuild (PyPI); apt-get install python3-pip" >&2; exit 1; }
  rm -rf "$1.tmp"
  PIP_ROOT_USER_ACTION=ignore "$python" -m pip install --quiet --disable-pip-version-check --no-deps --target "$1.tmp" "$2" >&2
  rm -rf "$1"
  mv "$1.tmp" "$1"
}
[ -x "$zig_dir/ziglang/zig" ] || pip_install "$zig_dir" "ziglang==$zig_version"
[ -x "$zigbuild_dir/bin/cargo-zigbuild" ] || pip_install "$zigbuild_dir" "cargo-zigbuild==$zigbuild_version"
echo "$zig_dir/ziglang:$zigbuild_dir/bin"
