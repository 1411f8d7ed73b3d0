package bench

import (
	"bytes"
	"net"
	"sync"
	"testing"
)

// This file measures the request loop itself: that it allocates nothing per request, and how many
// requests per second one process drives (go test -bench RequestLoop -benchmem).

// startFake starts a server that answers +OK to every request, allocating nothing per request, so
// allocation counts and CPU profiles show the client alone. Every request the templates make starts
// with '*' and holds no other '*', so counting '*' counts requests.
func startFake(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		l.Close()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			wg.Add(1)
			go func() {
				defer wg.Done()
				in := make([]byte, 64<<10)
				out := bytes.Repeat([]byte("+OK\r\n"), 64<<10)
				for {
					n, err := c.Read(in)
					if err != nil {
						return
					}
					if k := bytes.Count(in[:n], []byte{'*'}); k > 0 {
						if _, err := c.Write(out[:5*k]); err != nil {
							return
						}
					}
				}
			}()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}

// loopRunner connects a runner and builds a --requests plan for one test.
func loopRunner(t testing.TB, port int, test string, clients, threads, pipeline int) (*runner, *plan) {
	t.Helper()
	o := defaultOptions()
	o.Port, o.Clients, o.Threads, o.Pipeline = port, clients, threads, pipeline
	r, err := connect(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.close)
	def, _ := testByName(test)
	p := r.newPlan(def)
	p.limited = true
	for _, w := range r.workers {
		w.prepare(p)
	}
	return r, p
}

// TestRequestLoopAllocatesNothing runs the loop on this goroutine (one worker, so no goroutine is
// started) against the fake server and counts heap allocations.
func TestRequestLoopAllocatesNothing(t *testing.T) {
	for _, test := range []string{"mixed", "set", "ping"} {
		r, p := loopRunner(t, startFake(t), test, 8, 1, 4)
		w := r.workers[0]
		p.remaining.Store(1000) // warm up: first reads, first histogram buckets
		w.run(p)
		const n = 4000
		allocs := testing.AllocsPerRun(5, func() {
			p.remaining.Store(n)
			w.run(p)
		})
		if w.errors != 0 {
			t.Fatalf("%s: %d errors: %s", test, w.errors, w.errSample)
		}
		// A handful of runtime allocations (netpoll, timers) may land in the window; per request
		// anything at all would show up as thousands.
		if allocs > 4 {
			t.Errorf("%s: %v allocations per %d requests", test, allocs, n)
		}
	}
}

// benchLoop runs b.N requests of a test through the loop with all workers, as a run does.
func benchLoop(b *testing.B, port int, test string, clients, threads, pipeline int) {
	r, p := loopRunner(b, port, test, clients, threads, pipeline)
	p.remaining.Store(int64(b.N))
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for _, w := range r.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.run(p)
		}()
	}
	wg.Wait()
	b.StopTimer()
	var done, errs int64
	for _, w := range r.workers {
		done += w.requests
		errs += w.errors
	}
	if done != int64(b.N) || errs != 0 {
		b.Fatalf("%d of %d requests, %d errors", done, b.N, errs)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

// BenchmarkRequestLoop: the operator's defaults (50 clients, 2 threads, 256-byte values) against
// the fake server (client cost alone), an in-process iocache-server (its allocations are counted
// too: same process) and redis-server (a separate process: the counts are the client's alone).
func BenchmarkRequestLoop(b *testing.B) {
	fake := startFake(b)
	b.Run("fake/mixed/P1", func(b *testing.B) { benchLoop(b, fake, "mixed", 50, 2, 1) })
	b.Run("fake/mixed/P16", func(b *testing.B) { benchLoop(b, fake, "mixed", 50, 2, 16) })
	ioc := startIOCache(b, nil)
	b.Run("iocache/get/P1", func(b *testing.B) { benchLoop(b, ioc, "get", 50, 2, 1) })
	b.Run("iocache/mixed/P1", func(b *testing.B) { benchLoop(b, ioc, "mixed", 50, 2, 1) })
	b.Run("iocache/mixed/P16", func(b *testing.B) { benchLoop(b, ioc, "mixed", 50, 2, 16) })
	redis := startRedis(b)
	b.Run("redis/mixed/P1", func(b *testing.B) { benchLoop(b, redis, "mixed", 50, 2, 1) })
	b.Run("redis/mixed/P16", func(b *testing.B) { benchLoop(b, redis, "mixed", 50, 2, 16) })
}
