//go:build tools

// The command scripts/registry builds, imported so that go.mod and go.sum pin it.
package tools

import (
	_ "github.com/distribution/distribution/v3/cmd/registry"
)
