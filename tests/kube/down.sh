#!/usr/bin/env bash
# Stops what tests/kube/up.sh started in WORK_DIR, by pid, newest first.
# Usage: down.sh WORK_DIR
set -uo pipefail
work="$1"
[ -f "$work/pids" ] || exit 0
tac "$work/pids" | while read -r pid name; do
  kill "$pid" 2>/dev/null || true
done
for _ in $(seq 50); do
  alive=0
  while read -r pid name; do kill -0 "$pid" 2>/dev/null && alive=1; done < "$work/pids"
  [ "$alive" = 0 ] && break
  sleep 0.2
done
while read -r pid name; do kill -9 "$pid" 2>/dev/null || true; done < "$work/pids"
: > "$work/pids"
