package bench

import (
	"syscall"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// This file holds the measuring: a monotonic clock, the HDR histograms latencies go into (one per
// worker goroutine and command, merged when a test ends, so recording takes no lock), and the
// client's own CPU use from getrusage.

var epoch = time.Now()

// mono is nanoseconds on the monotonic clock since the program started: cheap to subtract and
// unaffected by wall-clock steps.
func mono() int64 { return int64(time.Since(epoch)) }

// histMax is the largest latency a histogram tracks; slower replies are recorded as histMax.
const histMax = int64(60 * time.Second)

// newHist tracks 1 ns to histMax at 3 significant digits (0.1% resolution), as redis-benchmark's
// hdr_init does in microseconds.
func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, histMax, 3) }

func record(h *hdrhistogram.Histogram, ns int64) {
	if ns < 1 {
		ns = 1
	} else if ns > histMax {
		ns = histMax
	}
	_ = h.RecordValue(ns) // cannot fail: the value is within the tracked range
}

func ms(ns int64) float64 { return round3(float64(ns) / 1e6) }

// summarize turns a histogram into the JSON latency summary in milliseconds.
func summarize(h *hdrhistogram.Histogram) Latency {
	if h.TotalCount() == 0 {
		return Latency{}
	}
	return Latency{
		P50:  ms(h.ValueAtQuantile(50)),
		P90:  ms(h.ValueAtQuantile(90)),
		P99:  ms(h.ValueAtQuantile(99)),
		P999: ms(h.ValueAtQuantile(99.9)),
		Max:  ms(h.Max()),
		Mean: round3(h.Mean() / 1e6),
	}
}

// round3 keeps a millisecond figure to the microsecond, all the histogram resolves anyway, so the
// compact JSON stays short.
func round3(v float64) float64 { return float64(int64(v*1000+0.5)) / 1000 }

// rusage is the process's CPU time so far.
type rusage struct{ user, sys time.Duration }

func getRusage() rusage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return rusage{}
	}
	return rusage{user: time.Duration(ru.Utime.Nano()), sys: time.Duration(ru.Stime.Nano())}
}

// cpuSince is the CPU used between two samples; wall gives Cores, the average cores kept busy.
func cpuSince(a, b rusage, wall time.Duration) CPU {
	c := CPU{User: round3((b.user - a.user).Seconds()), Sys: round3((b.sys - a.sys).Seconds())}
	if wall > 0 {
		c.Cores = round3(float64(b.user-a.user+b.sys-a.sys) / float64(wall))
	}
	return c
}
