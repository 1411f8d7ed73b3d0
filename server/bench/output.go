package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// This file prints a Result: the human table (redis-benchmark -q's lines, then a summary) and the
// JSON forms. The compact form must fit a Kubernetes termination message, 4096 bytes, so it drops
// the raw INFO text and, if still too long, per-thread detail in a fixed order.

// MaxCompactBytes is the most the compact JSON may take, trailing newline included: the limit
// Kubernetes puts on a container's termination message.
const MaxCompactBytes = 4096

// CompactJSON encodes r in the compact form: one line, no raw INFO text, at most MaxCompactBytes.
// It does not change r.
func CompactJSON(r *Result) []byte {
	c := *r
	c.Server = stripRaw(r.Server)
	b := marshalLine(&c)
	// Shed detail until it fits, least useful first: the thread lists before and after (the delta
	// keeps the spread), the per-command split, the delta's thread list, the server section.
	for step := 0; len(b) > MaxCompactBytes && step < 4; step++ {
		c.Truncated = true
		switch step {
		case 0:
			s := *c.Server
			s.Before, s.After = dropThreads(s.Before), dropThreads(s.After)
			c.Server = &s
		case 1:
			c.Tests = append([]Test(nil), c.Tests...)
			for i := range c.Tests {
				c.Tests[i].Commands = nil
			}
		case 2:
			s := *c.Server
			s.Delta = dropThreads(s.Delta)
			c.Server = &s
		case 3:
			c.Server = nil
		}
		b = marshalLine(&c)
	}
	return b
}

// FullJSON encodes r indented, raw INFO text included; it has no size limit.
func FullJSON(r *Result) []byte {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		panic(err) // Result holds only plain values: encoding cannot fail
	}
	return append(b, '\n')
}

func marshalLine(r *Result) []byte {
	b, err := json.Marshal(r)
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}

func stripRaw(s *Server) *Server {
	if s == nil {
		return nil
	}
	c := *s
	for _, p := range []**Info{&c.Before, &c.After, &c.Delta} {
		if *p != nil {
			in := **p
			in.Raw = ""
			*p = &in
		}
	}
	return &c
}

func dropThreads(in *Info) *Info {
	if in == nil {
		return nil
	}
	c := *in
	c.Threads = nil
	return &c
}

// writeTable prints one line per test as redis-benchmark -q does, so the two tools' output can be
// compared line by line, then (unless quiet) the totals and the server's thread spread.
func writeTable(w io.Writer, r *Result, quiet bool) {
	for _, t := range r.Tests {
		def, _ := testByName(t.Name)
		fmt.Fprintf(w, "%s: %.2f requests per second, p50=%.3f msec\n", def.label, t.OpsPerSec, t.Latency.P50)
	}
	if quiet {
		return
	}
	for _, t := range r.Tests {
		fmt.Fprintf(w, "  %s: %d requests, %d errors, %d nil, %.3f s; latency msec p50=%.3f p90=%.3f p99=%.3f p99.9=%.3f max=%.3f\n",
			t.Name, t.Requests, t.Errors, t.Misses, t.Duration, t.Latency.P50, t.Latency.P90, t.Latency.P99, t.Latency.P999, t.Latency.Max)
		for _, c := range t.Commands {
			fmt.Fprintf(w, "    %s: %.2f requests per second, p50=%.3f p99=%.3f msec\n", c.Name, c.OpsPerSec, c.P50, c.P99)
		}
		if t.ErrorSample != "" {
			fmt.Fprintf(w, "    first error: %s\n", t.ErrorSample)
		}
	}
	if r.Warmup != nil {
		fmt.Fprintf(w, "warmup: %d SETs in %.3f s, keyspace filled: %v\n", r.Warmup.Requests, r.Warmup.Duration, r.Warmup.Filled)
	}
	fmt.Fprintf(w, "client CPU: %.2f cores (user %.3f s, sys %.3f s)\n", r.ClientCPU.Cores, r.ClientCPU.User, r.ClientCPU.Sys)
	if r.Server == nil {
		return
	}
	if r.Server.InfoError != "" {
		fmt.Fprintf(w, "server INFO: %s\n", r.Server.InfoError)
	}
	if d := r.Server.Delta; d != nil {
		if d.CPU != nil {
			fmt.Fprintf(w, "server CPU: user %.3f s, sys %.3f s (main thread user %.3f s, sys %.3f s)\n",
				d.CPU.User, d.CPU.Sys, d.CPU.UserMainThread, d.CPU.SysMainThread)
		}
		var parts []string
		for _, t := range d.Threads {
			parts = append(parts, fmt.Sprintf("io_thread_%d clients=%d reads=+%d writes=+%d cpus=%s", t.ID, t.Clients, t.Reads, t.Writes, t.CPUs))
		}
		if len(parts) > 0 {
			fmt.Fprintf(w, "server threads: %s\n", strings.Join(parts, "; "))
		}
	}
}
