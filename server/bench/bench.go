// Package bench is iocache-bench, a load generator for Redis-compatible servers in the spirit of
// redis-benchmark and memtier_benchmark. It drives --clients connections from --threads goroutines
// with pipelined, pre-encoded requests, records every reply's latency into per-goroutine HDR
// histograms, and reports throughput, latency percentiles, its own CPU use, and the server's
// INFO threads and INFO cpu before and after the run, as a table or as JSON (Result).
//
// Files, one concern each: options.go (flags), workload.go (tests, templates, keys), resp.go (the
// wire), worker.go (the request loop), stats.go (histograms, clock, rusage), info.go (INFO
// parsing), run.go (a run from connect to Result), result.go (the JSON schema), output.go
// (printing).
package bench

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Exit codes.
const (
	exitOK     = 0
	exitFailed = 1 // the run failed: no connection, or a test got no successful reply
	exitUsage  = 2
)

// Main runs the load generator with the command-line args and returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	o, err := parseArgs(args)
	if errors.Is(err, errHelp) {
		fmt.Fprint(stdout, usage)
		printDefaults(stdout)
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "iocache-bench: %v\n", err)
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	res := run(o)
	switch {
	case o.JSONFull:
		_, _ = stdout.Write(FullJSON(res))
	case o.JSON:
		_, _ = stdout.Write(CompactJSON(res))
	default:
		writeTable(stdout, res, o.Quiet)
	}
	if o.JSONOut != "" {
		if err := os.WriteFile(o.JSONOut, CompactJSON(res), 0o644); err != nil {
			fmt.Fprintf(stderr, "iocache-bench: --json-out: %v\n", err)
			if res.OK {
				return exitFailed
			}
		}
	}
	if !res.OK {
		fmt.Fprintf(stderr, "iocache-bench: %s\n", res.Error)
		return exitFailed
	}
	return exitOK
}
