//go:build tools

// The command scripts/helm builds, imported so that go.mod and go.sum pin it.
package tools

import (
	_ "helm.sh/helm/v4/cmd/helm"
)
