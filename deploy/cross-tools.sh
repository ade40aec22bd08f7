#!/usr/bin/env bash
# Installs what builds the static binaries, once per version, into a cache directory, and prints
# the directories to put before PATH (`PATH="$(deploy/cross-tools.sh):$PATH"`):
#
# - Zig, from PyPI's `ziglang` wheel: the C compiler and linker for every musl target (it carries
#   musl's headers and libc for each architecture, which Debian's cross compilers do not;
#   docs/performance.md has the comparison);
# - cargo-zigbuild, from crates.io: cargo with Zig as the C compiler (ring, mimalloc, aws-lc) and
#   the linker.
#
# Cache: $OCM_EDGE_CI_CACHE (as .ci/run sets it), else ~/.cache/ocm-edge-ci.
set -euo pipefail

zig_version=0.15.2
zigbuild_version=0.24.1
cache="${OCM_EDGE_CI_CACHE:-${HOME:-/tmp}/.cache/ocm-edge-ci}"
zig_dir="$cache/zig-$zig_version"
zigbuild_dir="$cache/cargo-zigbuild-$zigbuild_version"

if [ ! -x "$zig_dir/ziglang/zig" ]; then
  python=$(command -v python3 || true)
  [ -n "$python" ] || { echo "error: python3 with pip installs Zig (PyPI's ziglang); apt-get install python3-pip" >&2; exit 1; }
  rm -rf "$zig_dir.tmp"
  "$python" -m pip install --quiet --disable-pip-version-check --no-deps --target "$zig_dir.tmp" "ziglang==$zig_version" >&2
  rm -rf "$zig_dir"
  mv "$zig_dir.tmp" "$zig_dir"
fi
if [ ! -x "$zigbuild_dir/bin/cargo-zigbuild" ]; then
  cargo install --quiet --locked --root "$zigbuild_dir" cargo-zigbuild --version "$zigbuild_version" >&2
fi
echo "$zig_dir/ziglang:$zigbuild_dir/bin"
