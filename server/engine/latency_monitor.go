package engine

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The latency monitor, as Redis's latency.c: while latency-monitor-threshold is above 0, every
// event that takes at least that many milliseconds is recorded in its event's series: one sample
// per second (the worst), the last latencySeriesLen of them, and the worst ever. The events are
// Redis's names for what iocache does on the main thread: "command" and "fast-command" (a call),
// "expire-cycle" (active expiry) and "eviction-cycle" (an eviction pass). LATENCY LATEST,
// HISTORY, RESET, DOCTOR and GRAPH read them. Everything here runs on the main thread.

const latencySeriesLen = 160 // Redis's LATENCY_TS_LEN

type latencySample struct {
	unix int64 // 0: an empty slot
	ms   int64
}

type latencySeries struct {
	next    int // the slot the next sample goes to
	worst   int64
	samples [latencySeriesLen]latencySample
}

type latencyMonitor struct {
	// thresholdMs is latency-monitor-threshold (0: off), set by its directive's effect
	// (config_effects.go) so that a command's call pays one comparison.
	thresholdMs int64
	series      map[string]*latencySeries
	order       []string // event names in the order they first occurred
}

// noteLatency records ns for event when the monitor is on and ns reaches the threshold.
func (s *Server) noteLatency(event string, ns int64) {
	m := &s.latency
	if m.thresholdMs <= 0 || ns < m.thresholdMs*int64(time.Millisecond) {
		return
	}
	ms := ns / int64(time.Millisecond)
	ts := m.series[event]
	if ts == nil {
		if m.series == nil {
			m.series = map[string]*latencySeries{}
		}
		ts = &latencySeries{}
		m.series[event] = ts
		m.order = append(m.order, event)
	}
	ts.worst = max(ts.worst, ms)
	now := time.Now().Unix()
	prev := &ts.samples[(ts.next+latencySeriesLen-1)%latencySeriesLen]
	if prev.unix == now {
		prev.ms = max(prev.ms, ms)
		return
	}
	ts.samples[ts.next] = latencySample{unix: now, ms: ms}
	ts.next = (ts.next + 1) % latencySeriesLen
}

// samples are the series' samples, oldest first.
func (ts *latencySeries) samplesInOrder() []latencySample {
	out := make([]latencySample, 0, latencySeriesLen)
	for j := 0; j < latencySeriesLen; j++ {
		if sm := ts.samples[(ts.next+j)%latencySeriesLen]; sm.unix != 0 {
			out = append(out, sm)
		}
	}
	return out
}

// resetLatency forgets the event (every event when name is empty), matched as Redis does,
// ignoring case; it returns how many were forgotten.
func (s *Server) resetLatency(name string) int64 {
	m := &s.latency
	var kept []string
	var n int64
	for _, ev := range m.order {
		if name == "" || strings.EqualFold(ev, name) {
			delete(m.series, ev)
			n++
			continue
		}
		kept = append(kept, ev)
	}
	m.order = kept
	return n
}

func (s *Server) latencyLatest(c *client) {
	m := &s.latency
	c.w.Array(len(m.order))
	for _, ev := range m.order {
		ts := m.series[ev]
		last := ts.samples[(ts.next+latencySeriesLen-1)%latencySeriesLen]
		c.w.Array(4)
		c.w.BulkString(ev)
		c.w.Int(last.unix)
		c.w.Int(last.ms)
		c.w.Int(ts.worst)
	}
}

func (s *Server) latencyHistory(c *client, event string) {
	ts := s.latency.series[event]
	if ts == nil {
		c.w.EmptyArray()
		return
	}
	samples := ts.samplesInOrder()
	c.w.Array(len(samples))
	for _, sm := range samples {
		c.w.Array(2)
		c.w.Int(sm.unix)
		c.w.Int(sm.ms)
	}
}

// latencyGraph is LATENCY GRAPH: Redis's ASCII sparkline of the event's samples, each labelled
// with how long ago it was taken.
func (s *Server) latencyGraph(c *client, event string) {
	ts := s.latency.series[event]
	if ts == nil {
		s.addError(c, "ERR No samples available for event '"+event+"'")
		return
	}
	samples := ts.samplesInOrder()
	now := time.Now().Unix()
	values := make([]float64, len(samples))
	labels := make([]string, len(samples))
	lo, hi := int64(0), int64(0)
	for i, sm := range samples {
		if i == 0 || sm.ms < lo {
			lo = sm.ms
		}
		hi = max(hi, sm.ms)
		values[i] = float64(sm.ms)
		switch ago := now - sm.unix; {
		case ago < 60:
			labels[i] = strconv.FormatInt(ago, 10) + "s"
		case ago < 3600:
			labels[i] = strconv.FormatInt(ago/60, 10) + "m"
		case ago < 86400:
			labels[i] = strconv.FormatInt(ago/3600, 10) + "h"
		default:
			labels[i] = strconv.FormatInt(ago/86400, 10) + "d"
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s - high %d ms, low %d ms (all time high %d ms)\n", event, hi, lo, ts.worst)
	b.WriteString(strings.Repeat("-", 80) + "\n")
	renderSparkline(&b, values, labels, 80, 4)
	c.w.Verbatim(b.String())
}

// renderSparkline draws values as Redis's sparkline.c does with SPARKLINE_FILL: rows of "_o#"
// (and "|" below the top of a column), then each sample's label written downwards after a blank
// line, in chunks of columns samples.
func renderSparkline(b *strings.Builder, values []float64, labels []string, columns, rows int) {
	if len(values) == 0 {
		return
	}
	lo, hi := values[0], values[0]
	for _, v := range values[1:] {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	const fill = "_o#"
	steps := len(fill) * rows
	span := hi - lo
	if span == 0 {
		span = 1
	}
	for off := 0; off < len(values); off += columns {
		if off != 0 {
			b.WriteByte('\n')
		}
		n := min(columns, len(values)-off)
		line := make([]byte, n)
		for row := 0; ; row++ {
			more := false
			for j := range line {
				line[j] = ' '
			}
			for j := 0; j < n; j++ {
				i := off + j
				// As in C: the product is truncated to an int before the division.
				step := int(float64(int((values[i]-lo)*float64(steps))) / span)
				step = min(max(step, 0), steps-1)
				if row < rows {
					more = true
					switch idx := step - (rows-row-1)*len(fill); {
					case idx >= 0 && idx < len(fill):
						line[j] = fill[idx]
					case idx >= len(fill):
						line[j] = '|'
					}
					continue
				}
				if row-rows < 1 { // the blank line between the graph and the labels
					more = true
					break
				}
				if k := row - rows - 1; k < len(labels[i]) {
					more = true
					line[j] = labels[i][k]
				}
			}
			if !more {
				break
			}
			b.Write(line)
			b.WriteByte('\n')
		}
	}
}

// latencyDoctor is LATENCY DOCTOR: Redis's report, in its words, for the events iocache records
// (the advice about fork, AOF and transparent huge pages concerns what iocache does not do).
func (s *Server) latencyDoctor(c *client) {
	m := &s.latency
	if len(m.order) == 0 && m.thresholdMs == 0 {
		c.w.Verbatim("I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n")
		return
	}
	var b strings.Builder
	var slowlogOff, slowlogTuning, slowlogInspect, scheduler, hz, largeObjects, massEviction bool
	advices := 0
	now := time.Now().Unix()
	for i, ev := range m.order {
		ts := m.series[ev]
		if i == 0 {
			b.WriteString("Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n")
		}
		samples := ts.samplesInOrder()
		var sum, oldest int64
		for _, sm := range samples {
			sum += sm.ms
			if oldest == 0 || sm.unix < oldest {
				oldest = sm.unix
			}
		}
		var avg, mad, period int64
		if len(samples) > 0 {
			avg = sum / int64(len(samples))
			if period = now - oldest; period == 0 {
				period = 1
			}
			var dev int64
			for _, sm := range samples {
				d := avg - sm.ms
				dev += max(d, -d)
			}
			mad = dev / int64(len(samples))
		}
		fmt.Fprintf(&b, "%d. %s: %d latency spikes (average %dms, mean deviation %dms, period %.2f sec). Worst all time event %dms.",
			i+1, ev, len(samples), avg, mad, float64(period)/float64(len(samples)), ts.worst)
		switch ev {
		case "command":
			if s.cfg.SlowlogLogSlowerThan < 0 {
				slowlogOff = true
				advices++
			} else if s.cfg.SlowlogLogSlowerThan/1000 > m.thresholdMs {
				slowlogTuning = true
				advices++
			}
			slowlogInspect, largeObjects = true, true
			advices += 2
		case "fast-command":
			scheduler = true
			advices++
		case "expire-cycle":
			hz, largeObjects = true, true
			advices += 2
		case "eviction-cycle":
			massEviction = true
			advices++
		}
		b.WriteByte('\n')
	}
	switch {
	case len(m.order) == 0 && advices == 0:
		b.WriteString("Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n")
	case advices == 0:
		b.WriteString("\nWhile there are latency events logged, I'm not able to suggest any easy fix. Please use the Redis community to get some help, providing this report in your help request.\n")
	default:
		b.WriteString("\nI have a few advices for you:\n\n")
		if slowlogOff {
			fmt.Fprintf(&b, "- There are latency issues with potentially slow commands you are using. Try to enable the Slow Log Redis feature using the command 'CONFIG SET slowlog-log-slower-than %d'. If the Slow log is disabled Redis is not able to log slow commands execution for you.\n", m.thresholdMs*1000)
		}
		if slowlogTuning {
			fmt.Fprintf(&b, "- Your current Slow Log configuration only logs events that are slower than your configured latency monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than %d'.\n", m.thresholdMs*1000)
		}
		if slowlogInspect {
			b.WriteString("- Check your Slow Log to understand what are the commands you are running which are too slow to execute. Please check https://redis.io/commands/slowlog for more information.\n")
		}
		if scheduler {
			b.WriteString("- The system is slow to execute Redis code paths not containing system calls. This usually means the system does not provide Redis CPU time to run for long periods. You should try to:\n" +
				"  1) Lower the system load.\n" +
				"  2) Use a computer / VM just for Redis if you are running other software in the same system.\n" +
				"  3) Check if you have a \"noisy neighbour\" problem.\n" +
				"  4) Check with 'redis-cli --intrinsic-latency 100' what is the intrinsic latency in your system.\n" +
				"  5) Check if the problem is allocator-related by recompiling Redis with MALLOC=libc, if you are using Jemalloc. However this may create fragmentation problems.\n")
		}
		if hz && s.cfg.HZ < 100 {
			b.WriteString("- In order to make the Redis keys expiring process more incremental, try to set the 'hz' configuration parameter to 100 using 'CONFIG SET hz 100'.\n")
		}
		if largeObjects {
			b.WriteString("- Deleting, expiring or evicting (because of maxmemory policy) large objects is a blocking operation. If you have very large objects that are often deleted, expired, or evicted, try to fragment those objects into multiple smaller objects.\n")
		}
		if massEviction {
			b.WriteString("- Sudden changes to the 'maxmemory' setting via 'CONFIG SET', or allocation of large objects via sets or sorted sets intersections, STORE option of SORT, Redis Cluster large keys migrations (RESTORE command), may create sudden memory pressure forcing the server to block trying to evict keys. \n")
		}
	}
	c.w.Verbatim(b.String())
}
