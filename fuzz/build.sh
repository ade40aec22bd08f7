#!/usr/bin/env bash
# Builds every fuzz target the way `cargo fuzz build -O` does (cargo-fuzz 0.13.2, its default
# address sanitizer), without cargo-fuzz: the same cargo command and RUSTFLAGS, so a target
# directory either of them filled serves the other. CI builds the targets this way because
# building cargo-fuzz itself cost a cold run 2.5 CPU-minutes (docs/performance.md#ci-time); for
# `cargo fuzz run` by hand, install cargo-fuzz (CONTRIBUTING.md, "Fuzzing").
#
# Usage: fuzz/build.sh [TARGET_DIR]   (default fuzz/target; the binaries land in
# TARGET_DIR/<host triple>/release). RUSTC_BOOTSTRAP=1 lets the stable compiler take the
# sanitizer and coverage flags; RUSTFLAGS you set are added after these, as cargo-fuzz does.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
target_dir="${1:-$here/target}"
host=$(rustc -vV | sed -n 's/^host: //p')
flags="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4"
flags+=" -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table"
flags+=" -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing"
flags+=" -Cllvm-args=-simplifycfg-branch-fold-threshold=0 -Zsanitizer=address"
# cargo-fuzz adds the stack-depth counter on Linux only, and forces one codegen unit in release
# builds (the sancov passes would otherwise keep ThinLTO from inlining anything).
case "$host" in *-linux-*) flags+=" -Cllvm-args=-sanitizer-coverage-stack-depth" ;; esac
flags+=" -Ccodegen-units=1"
# cargo-fuzz starts its flags with a space; kept, so the RUSTFLAGS (and the fingerprints) match.
# --locked, which cargo-fuzz does not pass: a fuzz/Cargo.lock that no longer matches the
# workspace's crates is an error here (update it with `cargo update --manifest-path
# fuzz/Cargo.toml --workspace`), not a file CI rewrites.
RUSTC_BOOTSTRAP=1 RUSTFLAGS=" $flags${RUSTFLAGS:+ $RUSTFLAGS}" cargo build --locked \
  --manifest-path "$here/Cargo.toml" --target "$host" \
  --release --config 'profile.release.debug="line-tables-only"' --bins --target-dir "$target_dir"
