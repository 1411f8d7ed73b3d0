// Command iocache-bench is a load generator for Redis-compatible servers that reports throughput,
// HDR-histogram latency percentiles and how the server spread the work over its I/O threads.
package main

import (
	"os"

	"github.com/iocache/iocache/server/bench"
)

func main() {
	os.Exit(bench.Main(os.Args[1:], os.Stdout, os.Stderr))
}
