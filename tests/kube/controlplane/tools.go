// The control plane binaries ocm-edge's end-to-end tests build from k8s.io/kubernetes
// (tests/kube/build.sh), and kubectl for the chart tests: one module, so kubectl is built from
// the same versions and reuses the packages the control plane compiled.

//go:build tools

package controlplane

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
