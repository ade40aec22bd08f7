#!/usr/bin/env bash
# Measures how long the hub takes to taint a cluster unreachable when its agent is killed (SIGKILL)
# or frozen (SIGSTOP), with real processes: `ocm-edge hub` (embedded broker) and `ocm-edge-agent
# --applier sim`. It polls `ocm-edge cluster get -o json` every 0.1 s, so figures carry ~0.1 s.
#
#   cargo build -p ocm-edge-cli -p ocm-edge-agent
#   KA=10 LEASE=60 tests/bench/detect-unreachable.sh kill    # or: stop
#
# KA is the agent's MQTT keepalive (s), LEASE its lease duration (s). Needs python3 and bc.
set -u
MODE=${1:-kill}; KA=${KA:-5}; LEASE=${LEASE:-5}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${BIN:-$ROOT/target/debug}
D=$(mktemp -d); PORT=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
B=mqtts://127.0.0.1:$PORT
# The secure defaults: TLS, a join token, the CLI signing with the hub's first admin credential
# (found in OCM_EDGE_DATA_DIR with the hub's CA).
export OCM_EDGE_DATA_DIR=$D/hub
$BIN/ocm-edge hub --listen 127.0.0.1:$PORT --data-dir $D/hub >$D/hub.log 2>&1 & HUB=$!
for i in $(seq 50); do $BIN/ocm-edge --broker $B cluster list >/dev/null 2>&1 && break; sleep 0.2; done
TOKEN=$($BIN/ocm-edge token create --ttl 1h | grep '^oet1\.')
$BIN/ocm-edge-agent --cluster-name e1 --applier sim --broker $B --broker-ca-file $D/hub/pki/ca.pem --token "$TOKEN" \
  --data-dir $D/a1 --keepalive-seconds $KA --lease-duration-seconds $LEASE >$D/agent.log 2>&1 & AG=$!
for i in $(seq 50); do $BIN/ocm-edge --broker $B cluster list 2>/dev/null | grep -q e1 && break; sleep 0.2; done
$BIN/ocm-edge --broker $B cluster accept e1 >/dev/null
for i in $(seq 100); do $BIN/ocm-edge --broker $B cluster get e1 -o json 2>/dev/null | grep -q '"True"' && break; sleep 0.2; done
sleep 3
if [ "$MODE" = kill ]; then kill -9 $AG; else kill -STOP $AG; fi
T0=$(date +%s.%N)
while true; do
  if $BIN/ocm-edge --broker $B cluster get e1 -o json 2>/dev/null | grep -q 'cluster.open-cluster-management.io/unreachable'; then break; fi
  sleep 0.1
  if (( $(echo "$(date +%s.%N) - $T0 > 120" | bc) )); then echo "no taint within 120 s"; break; fi
done
T1=$(date +%s.%N)
echo "mode=$MODE keepalive=${KA}s lease=${LEASE}s detection=$(echo "$T1 - $T0" | bc | cut -c1-5)s"
kill -CONT $AG 2>/dev/null; kill -9 $AG $HUB 2>/dev/null; wait 2>/dev/null; rm -rf $D
