#!/usr/bin/env bash
# Prints the benchmarks' sample work: a Namespace and an nginx Deployment in it (one replica), what
# a small edge cluster typically holds. The namespace is the first argument (default `web`).
#
#   tests/bench/sample-work.sh [NAMESPACE] > web.yaml
set -eu
ns=${1:-web}
cat <<YAML
apiVersion: v1
kind: Namespace
metadata: {name: $ns}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: $ns}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "nginx:1.27"}]}
YAML
