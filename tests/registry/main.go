// Command registry is distribution's registry with the storage drivers the tests use
// (filesystem, in memory): its own main package adds every cloud's SDK, which the tests
// never call and which would triple the build.
package main

import (
	"github.com/distribution/distribution/v3/registry"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/filesystem"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory"
)

func main() {
	if err := registry.RootCmd.Execute(); err != nil {
		panic(err)
	}
}
