// Package bench is iocache-bench, a load generator for Redis-compatible servers.
package bench

import (
	"fmt"
	"io"
)

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
