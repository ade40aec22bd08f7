#!/usr/bin/env bash
# Starts a real control plane on loopback from the binaries in BIN_DIR (tests/kube/build.sh):
# etcd, kube-apiserver (RBAC, service-account tokens), kube-controller-manager (leader election
# off), kube-scheduler and kwok with one fake node. Everything lives in WORK_DIR: certificates
# (openssl), data, logs, admin.kubeconfig and the pids that tests/kube/down.sh stops.
#
# Usage: up.sh BIN_DIR WORK_DIR
set -euo pipefail
bin="$1"
work="$2"
mkdir -p "$work/pki" "$work/logs"
pki="$work/pki"
: > "$work/pids"

# Free ports, so two control planes (or a stale one) never collide.
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
etcd_port=$(port); etcd_peer=$(port); api_port=$(port); cm_port=$(port); sched_port=$(port)

# Certificates: one CA for serving and clients, the API server's serving certificate, the admin
# (system:masters), and the service-account signing key.
openssl_quiet() { openssl "$@" >/dev/null 2>&1; }
openssl_quiet req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=ocm-edge-e2e-ca" \
  -keyout "$pki/ca.key" -out "$pki/ca.crt"
cat > "$pki/api.ext" <<EXT
subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:10.0.0.1
extendedKeyUsage=serverAuth
EXT
openssl_quiet req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" -keyout "$pki/api.key" -out "$pki/api.csr"
openssl_quiet x509 -req -in "$pki/api.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
  -days 2 -extfile "$pki/api.ext" -out "$pki/api.crt"
client() { # NAME GROUP
  openssl_quiet req -newkey rsa:2048 -nodes -subj "/O=$2/CN=$1" -keyout "$pki/$1.key" -out "$pki/$1.csr"
  printf 'extendedKeyUsage=clientAuth\n' > "$pki/client.ext"
  openssl_quiet x509 -req -in "$pki/$1.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -days 2 -extfile "$pki/client.ext" -out "$pki/$1.crt"
}
client admin system:masters
client system:kube-controller-manager system:kube-controller-manager
client system:kube-scheduler system:kube-scheduler
openssl_quiet genrsa -out "$pki/sa.key" 2048
openssl_quiet rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub"

kubeconfig() { # FILE USER
  cat > "$1" <<KC
apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: https://127.0.0.1:$api_port
    certificate-authority: $pki/ca.crt
users:
- name: $2
  user:
    client-certificate: $pki/$2.crt
    client-key: $pki/$2.key
contexts:
- name: e2e
  context: {cluster: e2e, user: $2}
current-context: e2e
KC
}
kubeconfig "$work/admin.kubeconfig" admin
kubeconfig "$work/controller-manager.kubeconfig" system:kube-controller-manager
kubeconfig "$work/scheduler.kubeconfig" system:kube-scheduler

start() { # NAME ARGS...
  local name="$1"; shift
  "$bin/$name" "$@" > "$work/logs/$name.log" 2>&1 &
  echo "$! $name" >> "$work/pids"
}
fail() {
  echo "up.sh: $1; the last lines of its log ($work/logs/$2.log):" >&2
  tail -20 "$work/logs/$2.log" >&2 || true
  exit 1
}
# Waits (bounded) until COMMAND succeeds.
wait_for() { # WHAT LOG SECONDS COMMAND...
  local what="$1" log="$2" secs="$3"; shift 3
  for _ in $(seq $((secs * 5))); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  fail "$what did not come up in $secs s" "$log"
}

start etcd --name e2e --data-dir "$work/etcd" \
  --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
  --listen-peer-urls "http://127.0.0.1:$etcd_peer" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
  --initial-cluster "e2e=http://127.0.0.1:$etcd_peer" --unsafe-no-fsync --quota-backend-bytes 1073741824
wait_for "etcd" etcd 30 curl -sf "http://127.0.0.1:$etcd_port/health"

start kube-apiserver --etcd-servers "http://127.0.0.1:$etcd_port" \
  --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" \
  --tls-cert-file "$pki/api.crt" --tls-private-key-file "$pki/api.key" --client-ca-file "$pki/ca.crt" \
  --service-account-issuer https://kubernetes.default.svc --service-account-key-file "$pki/sa.pub" \
  --service-account-signing-key-file "$pki/sa.key" --api-audiences https://kubernetes.default.svc \
  --authorization-mode Node,RBAC --service-cluster-ip-range 10.0.0.0/24 --allow-privileged=true \
  --enable-priority-and-fairness=false --profiling=false
wait_for "kube-apiserver" kube-apiserver 120 curl -sf --cacert "$pki/ca.crt" \
  --cert "$pki/admin.crt" --key "$pki/admin.key" "https://127.0.0.1:$api_port/readyz"

start kube-controller-manager --kubeconfig "$work/controller-manager.kubeconfig" \
  --authentication-kubeconfig "$work/controller-manager.kubeconfig" \
  --authorization-kubeconfig "$work/controller-manager.kubeconfig" \
  --leader-elect=false --bind-address 127.0.0.1 --secure-port "$cm_port" \
  --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
  --use-service-account-credentials=true --controllers '*,-nodeipam,-cloud-node-lifecycle' \
  --cluster-signing-cert-file "$pki/ca.crt" --cluster-signing-key-file "$pki/ca.key"
start kube-scheduler --kubeconfig "$work/scheduler.kubeconfig" \
  --authentication-kubeconfig "$work/scheduler.kubeconfig" \
  --authorization-kubeconfig "$work/scheduler.kubeconfig" \
  --leader-elect=false --bind-address 127.0.0.1 --secure-port "$sched_port"
wait_for "kube-controller-manager" kube-controller-manager 60 curl -sfk "https://127.0.0.1:$cm_port/healthz"
wait_for "kube-scheduler" kube-scheduler 60 curl -sfk "https://127.0.0.1:$sched_port/healthz"

# kwok: one fake node; pods scheduled on it become Running and Ready.
start kwok --kubeconfig "$work/admin.kubeconfig" --manage-all-nodes=false \
  --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake --node-lease-duration-seconds 40 \
  --server-address "127.0.0.1:$(port)"
api() { curl -sf --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" "$@"; }
api -X POST -H 'Content-Type: application/json' "https://127.0.0.1:$api_port/api/v1/nodes" -d '{
  "apiVersion": "v1", "kind": "Node",
  "metadata": {"name": "kwok-node-0", "annotations": {"kwok.x-k8s.io/node": "fake"},
    "labels": {"kubernetes.io/hostname": "kwok-node-0", "type": "kwok"}},
  "spec": {}
}' >/dev/null
node_ready() {
  api "https://127.0.0.1:$api_port/api/v1/nodes/kwok-node-0" | python3 -c 'import json, sys
conditions = json.load(sys.stdin).get("status", {}).get("conditions", [])
sys.exit(0 if any(c["type"] == "Ready" and c["status"] == "True" for c in conditions) else 1)'
}
wait_for "the kwok node" kwok 60 node_ready
echo "$work/admin.kubeconfig"
