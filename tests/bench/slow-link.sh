#!/usr/bin/env bash
# 2G delivery time: the real hub (embedded broker) and one real agent process in its own network
# namespace behind `link-shaper` (64 kbit/s, 300 ± 100 ms one way, 3 % loss, 50 packets of queue),
# at the agent's default link settings. A 300 KiB work is sent; then an update of the same size is
# cut at 70 % by a SIGKILL of the agent and resumed. Prints the delivery time, the bytes sent toward
# the edge, and the resumed transfer's cost against an uncut one, then one RESULT line.
#
#   sudo tests/bench/slow-link.sh
#
# Needs root (ip netns, TUN devices). It is the `link_faults` test that CI also runs; the figures
# are its own measurements, printed instead of only asserted.
set -eu
cd "$(dirname "$0")/../.."
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
OCM_EDGE_REQUIRE_NETNS=1 cargo test -q -p ocm-edge-tests --test it \
  link_faults::a_300_kib_work_crosses_a_2g_link -- --nocapture >"$OUT" 2>&1 || { cat "$OUT"; exit 1; }
grep '^2G link:' "$OUT"
applied=$(sed -n 's/^2G link: .* applied in \([0-9.]*\)s, \([0-9]*\) bytes.*/\1 \2/p' "$OUT")
resumed=$(sed -n 's/^2G link: update cut.*(\([0-9.]*\) x the uncut.*/\1/p' "$OUT")
set -- $applied
echo "RESULT link=2g work_kib=300 delivery_s=$1 bytes_to_edge=$2 resumed_cost_ratio=$resumed"
