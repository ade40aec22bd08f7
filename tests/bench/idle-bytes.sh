#!/usr/bin/env bash
# Measures what an idle edge cluster costs on the wire, per day: one `ocm-edge-agent --applier sim`
# in its own network namespace, linked to the hub (`ocm-edge hub`, embedded broker) by a veth pair,
# holding one applied work. After the work is Available it reads the veth's byte counters (every
# Ethernet frame both ways: MQTT, TCP/IP headers, ACKs) over SECONDS and scales them to 86,400 s.
#
#   cargo build -p ocm-edge-cli -p ocm-edge-agent
#   sudo SECONDS_IDLE=600 tests/bench/idle-bytes.sh [extra ocm-edge-agent flags...]
#
# On the secure defaults a user gets: the hub's TLS listener (8883), a join token, the agent
# trusting the hub's CA file, the CLI signing with the hub's first admin credential
# (OCM_EDGE_DATA_DIR). The agent is accepted and given one work, as an operator would.
#
# Needs root (ip netns, veth). Prints one RESULT line, with the agent process's resident memory
# (VmRSS) at the end of the idle window. CAPTURE=FILE also records the idle window
# with tcpdump (read it with `tcpdump -nr FILE`).
set -eu
IDLE=${SECONDS_IDLE:-600}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${BIN:-$ROOT/target/debug}
D=$(mktemp -d)
NS=ocm-idle-$$
HOST_IF=oi0-$$
EDGE_IF=oi1-$$
HUB_IP=10.231.$(($$ % 250)).1
EDGE_IP=10.231.$(($$ % 250)).2
PORT=8883
B=mqtts://$HUB_IP:$PORT
# The CLI finds the hub's CA and first admin credential in its data directory.
export OCM_EDGE_DATA_DIR="$D/hub"
cleanup() {
  kill -9 ${AG:-} ${HUB:-} 2>/dev/null || true
  wait 2>/dev/null || true
  ip link del "$HOST_IF" 2>/dev/null || true
  ip netns del "$NS" 2>/dev/null || true
  rm -rf "$D"
}
trap cleanup EXIT
ip netns add "$NS"
ip link add "$HOST_IF" type veth peer name "$EDGE_IF"
ip link set "$EDGE_IF" netns "$NS"
ip addr add "$HUB_IP/24" dev "$HOST_IF"
ip link set "$HOST_IF" up
ip netns exec "$NS" ip addr add "$EDGE_IP/24" dev "$EDGE_IF"
ip netns exec "$NS" ip link set "$EDGE_IF" up
ip netns exec "$NS" ip link set lo up
# No IPv6 on the lab link: its router solicitations are not the agent's traffic. ARP stays in
# (a real link resolves its gateway too), so the figure is a little above MQTT's own bytes.
sysctl -qw "net.ipv6.conf.$HOST_IF.disable_ipv6=1"
ip netns exec "$NS" sysctl -qw "net.ipv6.conf.$EDGE_IF.disable_ipv6=1"

"$BIN/ocm-edge" hub --listen "$HUB_IP:$PORT" --data-dir "$D/hub" >"$D/hub.log" 2>&1 & HUB=$!
for _ in $(seq 50); do "$BIN/ocm-edge" --broker "$B" cluster list >/dev/null 2>&1 && break; sleep 0.2; done
TOKEN=$("$BIN/ocm-edge" token create --ttl 1h | grep '^oet1\.')
ip netns exec "$NS" "$BIN/ocm-edge-agent" --cluster-name idle-1 --applier sim --broker "$B" \
  --broker-ca-file "$D/hub/pki/ca.pem" --token "$TOKEN" \
  --data-dir "$D/agent" "$@" >"$D/agent.log" 2>&1 & AG=$!
for _ in $(seq 100); do "$BIN/ocm-edge" --broker "$B" cluster list 2>/dev/null | grep -q idle-1 && break; sleep 0.2; done
"$BIN/ocm-edge" --broker "$B" cluster accept idle-1 >/dev/null
"$ROOT/tests/bench/sample-work.sh" web >"$D/web.yaml"
"$BIN/ocm-edge" --broker "$B" work create web -f "$D/web.yaml" --clusters idle-1 --feedback >/dev/null
for _ in $(seq 150); do
  "$BIN/ocm-edge" --broker "$B" work list 2>/dev/null | grep -q Available && break; sleep 0.2
done
"$BIN/ocm-edge" --broker "$B" work list | grep -q Available || { echo "work never Available"; exit 1; }
# Let the last status changes (Progressing -> False at the next reconcile) pass.
sleep 25
STATS=/sys/class/net/$HOST_IF/statistics
rx0=$(cat "$STATS/rx_bytes"); tx0=$(cat "$STATS/tx_bytes"); rp0=$(cat "$STATS/rx_packets"); tp0=$(cat "$STATS/tx_packets")
if [ -n "${CAPTURE:-}" ]; then tcpdump -i "$HOST_IF" -w "$CAPTURE" >/dev/null 2>&1 & CAP=$!; fi
sleep "$IDLE"
if [ -n "${CAP:-}" ]; then kill "$CAP"; fi
rx1=$(cat "$STATS/rx_bytes"); tx1=$(cat "$STATS/tx_bytes"); rp1=$(cat "$STATS/rx_packets"); tp1=$(cat "$STATS/tx_packets")
rss_kb=$(awk '/^VmRSS:/ {print $2}' "/proc/$AG/status")
up=$((rx1 - rx0)); down=$((tx1 - tx0)); packets=$((rp1 - rp0 + tp1 - tp0))
per_day=$(( (up + down) * 86400 / IDLE ))
echo "idle ${IDLE} s: edge->hub ${up} B, hub->edge ${down} B, ${packets} frames; agent flags: ${*:-defaults}"
echo "RESULT idle_seconds=$IDLE bytes_up=$up bytes_down=$down frames=$packets bytes_per_day=$per_day mb_per_day=$(echo "scale=2; $per_day / 1000000" | bc) agent_rss_kb=$rss_kb"
