#!/usr/bin/env bash
# Measures what an idle agent process holds in memory: a real hub (`ocm-edge hub`, embedded broker,
# TLS listener on loopback) and real `ocm-edge-agent` processes, each holding one applied work
# (tests/bench/sample-work.sh: a Namespace and an nginx Deployment, with status feedback; or the
# manifests in the file WORK names), as an operator would set them up. Once the work is Available
# on the hub (applied, and its status back), the agents are left idle for SETTLE seconds, then
# their resident memory is printed SAMPLES times, INTERVAL seconds apart.
#
#   cargo build --release -p ocm-edge-cli -p ocm-edge-agent
#   tests/bench/agent-rss.sh [KUBECONFIG] [extra ocm-edge-agent flags...]
#
# Always one agent on the simulated cluster (`--applier sim`); with a kubeconfig (the first
# argument, or OCM_EDGE_E2E_KUBECONFIG: e.g. the admin kubeconfig `tests/kube/up.sh` prints), a
# second one with `--applier kube` on that cluster, whose work goes to a namespace of its own.
#
# Each sample line: VmRSS and what it is made of (/proc/PID/status, smaps_rollup and smaps):
# anonymous memory (AnonHugePages of it in transparent huge pages) and file-backed pages, then by
# mapping: the agent binary's file pages (code and read-only data) and anonymous pages (data
# relocated at start), other files (the C library), thread stacks, and the heap (every other
# anonymous page, whatever the allocator). The last line per agent is `RESULT applier=...
# rss_kb=...` at the last sample, with the CPU time the agent used until its work was Available
# (start_cpu_ms: start, TLS, join, apply) and while sampled (cpu_ms). Prints figures; asserts
# nothing.
#
# BIN (default target/release) is where the binaries are; AGENT_BIN overrides the agent binary
# alone (to compare two builds of it against the same hub). Extra environment for the agents
# (MIMALLOC_*, MALLOC_ARENA_MAX, RUST_LOG) passes through.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${BIN:-$ROOT/target/release}
AGENT_BIN=${AGENT_BIN:-$BIN/ocm-edge-agent}
SETTLE=${SETTLE:-30}
SAMPLES=${SAMPLES:-4}
INTERVAL=${INTERVAL:-20}
KUBECONFIG_FILE=${OCM_EDGE_E2E_KUBECONFIG:-}
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then KUBECONFIG_FILE=$1; shift; fi
D=$(mktemp -d)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
B=mqtts://127.0.0.1:$PORT
# The CLI finds the hub's CA and first admin credential in its data directory.
export OCM_EDGE_DATA_DIR="$D/hub"
cleanup() {
  kill ${AGENTS:-} ${HUB:-} 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$D"
}
trap cleanup EXIT
cli() { "$BIN/ocm-edge" --broker "$B" "$@"; }

"$BIN/ocm-edge" hub --listen "127.0.0.1:$PORT" --data-dir "$D/hub" >"$D/hub.log" 2>&1 & HUB=$!
for _ in $(seq 100); do cli cluster list >/dev/null 2>&1 && break; sleep 0.2; done
TOKEN=$(cli token create --ttl 1h | grep '^oet1\.')

AGENTS=""
CLUSTERS=""
start_agent() { # NAME APPLIER-FLAGS...
  local name=$1; shift
  "$AGENT_BIN" --cluster-name "$name" --broker "$B" --broker-ca-file "$D/hub/pki/ca.pem" \
    --token "$TOKEN" --data-dir "$D/$name" "$@" >"$D/$name.log" 2>&1 &
  AGENTS="$AGENTS $!"
  CLUSTERS="$CLUSTERS $name:$!"
  for _ in $(seq 100); do cli cluster list 2>/dev/null | grep -q "$name" && break; sleep 0.2; done
  cli cluster accept "$name" >/dev/null
}
start_agent rss-sim --applier sim "$@"
if [ -n "$KUBECONFIG_FILE" ]; then
  start_agent rss-kube --applier kube --kubeconfig "$KUBECONFIG_FILE" "$@"
fi

# Its own namespace on a real cluster, so runs against one API server never meet.
NS=rss-$$-$(date +%s)
for c in $CLUSTERS; do
  name=${c%%:*}
  if [ -n "${WORK:-}" ]; then cp "$WORK" "$D/$name.yaml"
  else "$ROOT/tests/bench/sample-work.sh" "$NS" >"$D/$name.yaml"; fi
  cli work create "web-$name" -f "$D/$name.yaml" --clusters "$name" --feedback >/dev/null
done
for c in $CLUSTERS; do
  name=${c%%:*}
  for _ in $(seq 600); do
    cli work list 2>/dev/null | grep "$name" | grep -q Available && break; sleep 0.5
  done
  cli work list | grep "$name" | grep -q Available || {
    echo "the work on $name never became Available; the agent's log ($D/$name.log):"
    tail -20 "$D/$name.log"
    exit 1
  }
done
# CPU time (user + system) of a process so far, in milliseconds.
cpu_ms() { awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print int(($12 + $13) * 1000 / hz) }' "/proc/$1/stat"; }
declare -A START_CPU
for c in $CLUSTERS; do START_CPU[${c%%:*}]=$(cpu_ms "${c##*:}"); done
echo "works Available on:$(for c in $CLUSTERS; do printf ' %s' "${c%%:*}"; done); idle for ${SETTLE} s"
sleep "$SETTLE"

# Resident kB of a process by kind of mapping: the agent binary's file pages (its code and
# read-only data) and its anonymous pages (data written at start: relocations, statics), other
# files (the C library), thread stacks (the main thread's, and anonymous mappings of 2 MiB + a
# page, the size Rust and tokio give a thread) and the rest of the anonymous memory: the heap,
# whatever the allocator.
by_mapping() { # PID
  awk -v exe="$(readlink "/proc/$1/exe")" '
    /^[0-9a-f]+-[0-9a-f]+ / { path = $6; next }
    /^Size:/ {
      if (path == exe) k = "binary"
      else if (path == "[stack]" || (path == "" && $2 >= 2040 && $2 <= 2056)) k = "stacks"
      else if (path == "" || path ~ /^\[/) k = "heap"
      else k = "libs"
    }
    /^Rss:/ { rss[k] += $2 }
    /^Anonymous:/ { anon[k] += $2 }
    END {
      printf "binary_file=%d binary_anon=%d libs=%d stacks=%d heap=%d", \
        rss["binary"] - anon["binary"], anon["binary"], rss["libs"], rss["stacks"], rss["heap"]
    }
  ' "/proc/$1/smaps"
}
field() { awk -v f="$2:" '$1 == f {print $2}' "$1"; }
declare -A CPU0
for c in $CLUSTERS; do CPU0[${c%%:*}]=$(cpu_ms "${c##*:}"); done
WINDOW0=$(date +%s)
for i in $(seq "$SAMPLES"); do
  for c in $CLUSTERS; do
    name=${c%%:*}; pid=${c##*:}
    s=/proc/$pid/status
    echo "sample $i $name: VmRSS=$(field "$s" VmRSS) kB anon=$(field "$s" RssAnon) file=$(field "$s" RssFile)" \
      "AnonHugePages=$(field "/proc/$pid/smaps_rollup" AnonHugePages) threads=$(field "$s" Threads); $(by_mapping "$pid")"
  done
  [ "$i" -lt "$SAMPLES" ] && sleep "$INTERVAL"
done
for c in $CLUSTERS; do
  name=${c%%:*}; pid=${c##*:}
  s=/proc/$pid/status
  echo "RESULT applier=${name#rss-} rss_kb=$(field "$s" VmRSS) anon_kb=$(field "$s" RssAnon)" \
    "file_kb=$(field "$s" RssFile) threads=$(field "$s" Threads) $(by_mapping "$pid")" \
    "start_cpu_ms=${START_CPU[$name]} cpu_ms=$(( $(cpu_ms "$pid") - CPU0[$name] )) over_s=$(( $(date +%s) - WINDOW0 ))"
done
