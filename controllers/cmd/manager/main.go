// Command manager is the iocache operator: it reconciles CacheInstance and CacheBenchmark objects.
package main

import (
	"os"

	"github.com/iocache/iocache/controllers/operator"
)

func main() {
	os.Exit(operator.Main(os.Args[1:]))
}
