// Package bench is iocache-bench, a load generator for Redis-compatible servers.
package bench

import (
	"fmt"
	"io"
)

const usage = `Usage: iocache-bench [--host H] [--port P] [--clients N] [--threads N] [--pipeline N]
                     [--data-size B] [--keyspace N] [--ratio SET:GET] [--tests get,set]
                     [--requests N | --duration D] [--warmup D] [--json]
`

// Main runs the load generator and returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	for _, a := range args {
		if a == "-h" || a == "--help" {
			fmt.Fprint(stdout, usage)
			return 0
		}
	}
	fmt.Fprint(stderr, usage)
	return 2
}
