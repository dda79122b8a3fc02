//go:build tools

// The commands `scripts/control-plane --oldest` builds, imported so that go.mod and go.sum pin
// them.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
