package bench

import (
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// This file runs a benchmark: it connects, fills the keyspace during the warmup, snapshots the
// server's INFO, runs each test with all workers and collects their histograms and counters into
// a Result.

// readBufSize is each connection's reply buffer; large enough that a pipeline of GET replies of
// the default size arrives in one read.
const readBufSize = 64 << 10

// runner holds the connections of a run.
type runner struct {
	o       Options
	ctl     *control
	workers []*worker
}

// dial opens one connection and authenticates it.
func dial(o *Options) (net.Conn, replyReader, error) {
	rd := newReplyReader(readBufSize)
	nc, err := net.DialTimeout("tcp", net.JoinHostPort(o.Host, strconv.Itoa(o.Port)), o.Timeout)
	if err != nil {
		return nil, rd, err
	}
	if o.TLS != nil {
		tc := tls.Client(nc, o.TLS)
		_ = tc.SetDeadline(time.Now().Add(o.Timeout))
		if err := tc.Handshake(); err != nil {
			nc.Close()
			return nil, rd, fmt.Errorf("TLS handshake: %w", err)
		}
		_ = tc.SetDeadline(time.Time{})
		nc = tc
	}
	if o.Password != "" {
		c := control{nc: nc, rd: rd}
		auth := []string{"AUTH", o.Password}
		if o.User != "" {
			auth = []string{"AUTH", o.User, o.Password}
		}
		if _, err := c.call(o.Timeout, auth...); err != nil {
			nc.Close()
			return nil, rd, fmt.Errorf("AUTH: %w", err)
		}
		rd = c.rd
	}
	return nc, rd, nil
}

// connect opens the control connection and the benchmark connections, and hands the connections
// to the workers round-robin: worker i drives connections i, i+threads, i+2*threads, ...
func connect(o Options) (*runner, error) {
	r := &runner{o: o}
	nc, rd, err := dial(&o)
	if err != nil {
		return nil, err
	}
	r.ctl = &control{nc: nc, rd: rd}
	for i := 0; i < o.Threads; i++ {
		seed := uint64(time.Now().UnixNano()) ^ uint64(i+1)*0x9e3779b97f4a7c15
		r.workers = append(r.workers, &worker{rng: newRNG(seed)})
	}
	for i := 0; i < o.Clients; i++ {
		nc, rd, err := dial(&o)
		if err != nil {
			r.close()
			return nil, fmt.Errorf("connection %d of %d: %w", i+1, o.Clients, err)
		}
		if o.BenchSpace {
			c := control{nc: nc, rd: rd}
			if _, err := c.call(o.Timeout, "BENCHSPACE", "ENTER"); err != nil {
				nc.Close()
				r.close()
				return nil, fmt.Errorf("BENCHSPACE ENTER (--benchspace needs iocache-server): %w", err)
			}
			rd = c.rd
		}
		w := r.workers[i%o.Threads]
		w.conns = append(w.conns, &conn{nc: nc, rd: rd})
	}
	return r, nil
}

func (r *runner) close() {
	if r.ctl != nil {
		r.ctl.nc.Close()
	}
	for _, w := range r.workers {
		for _, c := range w.conns {
			if !c.dead {
				c.nc.Close()
			}
		}
	}
}

// newPlan builds the shared state of one test.
func (r *runner) newPlan(def testDef) *plan {
	templates, weights := def.build(&r.o)
	p := &plan{templates: templates, pipeline: r.o.Pipeline, keyspace: uint64(r.o.Keyspace)}
	for i, n := range weights {
		for j := 0; j < n; j++ {
			p.cycle = append(p.cycle, uint8(i))
		}
	}
	return p
}

// outcome is a test's merged measurements.
type outcome struct {
	wall      time.Duration
	requests  int64
	errors    int64
	misses    int64
	errSample string
	hists     []*hdrhistogram.Histogram // per template, merged over workers
	counts    []int64
	cpu       CPU
}

// execute runs a plan on all workers at once and merges what they measured. A watchdog stops the
// run when no batch completes for the timeout (a server that stopped answering), by closing the
// connections, which fails the blocked reads.
func (r *runner) execute(p *plan) outcome {
	for _, w := range r.workers {
		w.prepare(p)
	}
	done := make(chan struct{})
	go r.watchdog(p, done)
	ru0 := getRusage()
	t0 := mono()
	p.deadline = t0 + int64(p.length)
	var wg sync.WaitGroup
	for _, w := range r.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.run(p)
		}()
	}
	wg.Wait()
	wall := time.Duration(mono() - t0)
	close(done)
	out := outcome{wall: wall, cpu: cpuSince(ru0, getRusage(), wall)}
	out.counts = make([]int64, len(p.templates))
	for range p.templates {
		out.hists = append(out.hists, newHist())
	}
	for _, w := range r.workers {
		out.requests += w.requests
		out.errors += w.errors
		out.misses += w.misses
		if out.errSample == "" {
			out.errSample = w.errSample
		}
		for i := range p.templates {
			out.hists[i].Merge(w.hists[i])
			out.counts[i] += w.counts[i]
		}
	}
	return out
}

func (r *runner) watchdog(p *plan, done <-chan struct{}) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	last, since := int64(-1), time.Now()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		var n int64
		for _, w := range r.workers {
			n += w.progress.Load()
		}
		if n != last {
			last, since = n, time.Now()
			continue
		}
		if time.Since(since) >= r.o.Timeout {
			p.stop.Store(true)
			for _, w := range r.workers {
				for _, c := range w.conns {
					c.nc.Close() // the owning worker sees the read fail and counts the loss
				}
			}
			return
		}
	}
}

// warmup sends SETs that walk the keyspace in order, so GETs in the tests find their keys.
func (r *runner) warmup() *Warmup {
	p := &plan{
		templates: []template{setTemplate(r.o.KeyPrefix, r.o.DataSize)}, cycle: []uint8{0}, pipeline: r.o.Pipeline,
		keyspace: uint64(r.o.Keyspace), length: r.o.Warmup, seqKeys: new(atomic.Uint64),
	}
	out := r.execute(p)
	return &Warmup{
		Duration: round3(out.wall.Seconds()), Requests: out.requests, Errors: out.errors,
		Filled: out.requests-out.errors >= r.o.Keyspace && out.errors == 0,
	}
}

// runTest runs one test and reports it.
func (r *runner) runTest(def testDef) (Test, outcome) {
	p := r.newPlan(def)
	if r.o.Requests > 0 {
		p.limited = true
		p.remaining.Store(r.o.Requests)
	} else {
		p.length = r.o.Duration
	}
	out := r.execute(p)
	t := Test{
		Name: def.name, Requests: out.requests, Errors: out.errors, Misses: out.misses,
		Duration: round3(out.wall.Seconds()), ErrorSample: truncate(out.errSample, 200),
		ClientCPU: out.cpu,
	}
	all := newHist()
	for _, h := range out.hists {
		all.Merge(h)
	}
	t.Latency = summarize(all)
	t.OpsPerSec = perSec(out.requests-out.errors, out.wall)
	if len(p.templates) > 1 {
		for i, tp := range p.templates {
			s := summarize(out.hists[i])
			t.Commands = append(t.Commands, Command{
				Name: tp.name, Requests: out.counts[i], OpsPerSec: perSec(out.counts[i], out.wall),
				P50: s.P50, P99: s.P99,
			})
		}
	}
	out.hists = []*hdrhistogram.Histogram{all}
	return t, out
}

func perSec(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(int64(float64(n)/d.Seconds()*100+0.5)) / 100
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// run is a whole benchmark: it never panics on a server's misbehaviour and always returns a
// Result whose OK and Error say whether it succeeded.
func run(o Options) *Result {
	res := &Result{
		Version: SchemaVersion, Tool: "iocache-bench", Target: net.JoinHostPort(o.Host, strconv.Itoa(o.Port)),
		StartedAt: time.Now().UTC().Format(time.RFC3339), Tests: []Test{},
		Config: Config{
			Clients: o.Clients, Threads: o.Threads, Pipeline: o.Pipeline, DataSize: o.DataSize,
			Keyspace: o.Keyspace, Ratio: o.ratioString(), Tests: o.Tests, Requests: o.Requests,
			DurationSec: o.Duration.Seconds(), WarmupSec: o.Warmup.Seconds(),
		},
	}
	r, err := connect(o)
	if err != nil {
		res.Error = "connect: " + err.Error()
		return res
	}
	defer r.close()
	if o.Warmup > 0 {
		res.Warmup = r.warmup()
	}
	res.Server = &Server{}
	before, err := r.ctl.fetchInfo(o.Timeout)
	if err != nil {
		res.Server.InfoError = err.Error()
	}
	res.Server.Before = before
	all := newHist()
	var wall time.Duration
	ru0 := getRusage()
	for _, name := range o.Tests {
		def, _ := testByName(name)
		t, out := r.runTest(def)
		res.Tests = append(res.Tests, t)
		res.Requests += t.Requests
		res.Errors += t.Errors
		wall += out.wall
		all.Merge(out.hists[0])
		if res.Error == "" {
			res.Error = testFailure(t)
		}
	}
	res.ClientCPU = cpuSince(ru0, getRusage(), wall)
	res.Duration = round3(wall.Seconds())
	res.OpsPerSec = perSec(res.Requests-res.Errors, wall)
	res.Latency = summarize(all)
	if before != nil {
		after, err := r.ctl.fetchInfo(o.Timeout)
		if err != nil {
			res.Server.InfoError = err.Error()
		}
		res.Server.After = after
		res.Server.Delta = infoDelta(before, after)
	}
	if o.BenchSpace {
		// Read before the deferred close: the space is dropped when its last guest leaves.
		res.BenchSpace = r.ctl.fetchBenchSpace(o.Timeout)
	}
	res.OK = res.Error == ""
	return res
}

// testFailure says why a test counts as failed: it got no successful reply at all.
func testFailure(t Test) string {
	switch {
	case t.Requests == 0:
		return fmt.Sprintf("%s: no request could be sent (%s)", t.Name, orUnknown(t.ErrorSample))
	case t.Errors == t.Requests:
		return fmt.Sprintf("%s: all %d requests failed: %s", t.Name, t.Requests, orUnknown(t.ErrorSample))
	}
	return ""
}

func orUnknown(s string) string {
	if s == "" {
		return "no connection left"
	}
	return s
}
