// kubectl for ocm-edge's chart tests (tests/helm/build.sh), from the same k8s.io/kubernetes
// version as the e2e control plane (tests/kube/controlplane): its own module, so adding it did
// not change the control plane's module files (and cache key).

//go:build tools

package kubectl

import (
	_ "k8s.io/kubernetes/cmd/kubectl"
)
