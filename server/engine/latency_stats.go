package engine

import (
	"fmt"
	"math"
	"runtime"
)

// Per-command latency as Redis 7.0 reports it (and MEMORY MALLOC-STATS, the allocator's report): LATENCY HISTOGRAM (calls and a cumulative
// histogram by microseconds) and INFO latencystats (p50, p99 and p99.9). Redis keeps an HDR
// histogram per command; here execute counts each call in one of latencyBuckets power-of-two
// buckets (metrics.go), so the bucket bounds are powers of two of microseconds and a
// percentile is the bound of the bucket it falls in: coarser than Redis's, at no cost per call.

// bucketBoundUsec is the upper bound of bucket b: calls under 1 µs go to bucket 0, and bucket b
// holds calls of [2^(b-1), 2^b) µs.
func bucketBoundUsec(b int) int64 { return int64(1) << b }

// latencyPercentile is the bound, in µs, of the bucket where the p-th percentile call falls.
func latencyPercentile(cmd *command, p float64) int64 {
	target := int64(math.Ceil(p / 100 * float64(cmd.calls)))
	var seen int64
	for b, n := range cmd.hist {
		seen += n
		if seen >= target && seen > 0 {
			return bucketBoundUsec(b)
		}
	}
	return 0
}

// cmdLatencyHistogram is LATENCY HISTOGRAM [command ...]: every command called so far, or the
// named ones that exist and were called, each with its calls and cumulative counts by bucket
// bound, buckets that add nothing left out, as Redis lists them.
func (s *Server) cmdLatencyHistogram(c *client, names [][]byte) {
	var cmds []*command
	if len(names) == 0 {
		cmds = s.statCommands()
	} else {
		seen := map[*command]bool{}
		for _, n := range names {
			for _, cmd := range s.statCommandsNamed(n) {
				if !seen[cmd] {
					seen[cmd] = true
					cmds = append(cmds, cmd)
				}
			}
		}
	}
	var called []*command
	for _, cmd := range cmds {
		if cmd.calls > 0 {
			called = append(called, cmd)
		}
	}
	c.w.Map(len(called))
	for _, cmd := range called {
		c.w.BulkString(cmd.name)
		c.w.Map(2)
		c.w.BulkString("calls")
		c.w.Int(cmd.calls)
		c.w.BulkString("histogram_usec")
		var bounds, cumulative []int64
		var sum int64
		for b, n := range cmd.hist {
			if n > 0 {
				sum += n
				bounds, cumulative = append(bounds, bucketBoundUsec(b)), append(cumulative, sum)
			}
		}
		c.w.Map(len(bounds))
		for i := range bounds {
			c.w.Int(bounds[i])
			c.w.Int(cumulative[i])
		}
	}
}

// infoLatencystats is INFO latencystats.
func (s *Server) infoLatencystats(f func(string, any)) {
	latencyPercentiles := s.cfg.LatencyPercentiles // latency-tracking-info-percentiles
	for _, cmd := range s.statCommands() {
		if cmd.calls == 0 {
			continue
		}
		line := ""
		for i, p := range latencyPercentiles {
			if i > 0 {
				line += ","
			}
			line += fmt.Sprintf("p%s=%.3f", formatPercentile(p), float64(latencyPercentile(cmd, p)))
		}
		f("latency_percentiles_usec_"+cmd.name, line)
	}
}

// formatPercentile writes 50 as "50" and 99.9 as "99.9", as Redis names the fields.
func formatPercentile(p float64) string {
	if p == math.Trunc(p) {
		return fmt.Sprintf("%d", int64(p))
	}
	return fmt.Sprintf("%g", p)
}

// mallocStats is MEMORY MALLOC-STATS: where Redis prints jemalloc's report, the Go runtime's
// figures for its heap.
func mallocStats() string {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return fmt.Sprintf("___ Begin Go runtime memory statistics ___\n"+
		"Allocated: %d, active: %d, mapped: %d, retained: %d, released: %d\n"+
		"Heap objects: %d, allocations: %d, frees: %d\n"+
		"GC cycles: %d, next GC at: %d, GC CPU fraction: %.6f\n"+
		"Stacks in use: %d, runtime metadata: %d\n"+
		"--- End Go runtime memory statistics ---\n",
		m.HeapAlloc, m.HeapInuse, m.Sys, m.HeapIdle-m.HeapReleased, m.HeapReleased,
		m.HeapObjects, m.Mallocs, m.Frees,
		m.NumGC, m.NextGC, m.GCCPUFraction,
		m.StackInuse, m.MSpanSys+m.MCacheSys+m.BuckHashSys+m.GCSys+m.OtherSys)
}
