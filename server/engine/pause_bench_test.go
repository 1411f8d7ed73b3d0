package engine

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/keyspace"
)

// newIdleServer builds a server without serving it, so a benchmark can drive the main thread's
// work directly and time it.
func newIdleServer(b *testing.B, mutate func(*config.Config)) *Server {
	cfg := config.New()
	cfg.Save = ""
	cfg.Port = 0
	cfg.Bind = []string{"127.0.0.1"}
	cfg.LogLevel = "warning"
	if mutate != nil {
		mutate(cfg)
	}
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.closeListeners)
	s.updateClock(time.Now())
	return s
}

// pauseClock measures a stretch of main-thread work both in wall time (what clients wait) and
// in the thread's own CPU time (the same, minus time the machine gave to other processes: on a
// shared 2-core machine wall time alone overstates the server's pauses).
type pauseClock struct {
	wall, cpu  time.Duration
	startWall  time.Time
	cpuAtStart time.Duration
}

func threadCPUTime() time.Duration {
	u, s := mainThreadCPU()
	return u + s
}

func (p *pauseClock) start() {
	p.startWall = time.Now()
	p.cpuAtStart = threadCPUTime()
}

func (p *pauseClock) stop() {
	if d := time.Since(p.startWall); d > p.wall {
		p.wall = d
	}
	if d := threadCPUTime() - p.cpuAtStart; d > p.cpu {
		p.cpu = d
	}
}

func (p *pauseClock) report(b *testing.B) {
	b.ReportMetric(float64(p.wall.Microseconds())/1000, "max-pause-ms")
	b.ReportMetric(float64(p.cpu.Microseconds())/1000, "max-pause-cpu-ms")
}

// BenchmarkActiveExpireMillionKeys expires 1,000,000 keys that all reach their TTL at once and
// reports the longest single stall of the main thread (max-pause-ms, and its CPU time) and how
// many cycles the backlog took; between cycles the main loop serves clients.
func BenchmarkActiveExpireMillionKeys(b *testing.B) {
	const n = 1_000_000
	runtime.LockOSThread() // thread CPU time must be this goroutine's
	defer runtime.UnlockOSThread()
	var pc pauseClock
	cycles := 0
	for i := 0; i < b.N; i++ {
		s := newIdleServer(b, nil)
		db := s.dbs[0]
		val := []byte("xxx")
		for k := 0; k < n; k++ {
			db.SetString([]byte("key:"+strconv.Itoa(k)), val, s.nowMs+1, false, 0)
		}
		s.updateClock(time.Now().Add(time.Second))
		b.StartTimer()
		for db.Len() > 0 {
			pc.start()
			s.activeExpireCycle()
			pc.stop()
			cycles++
		}
		b.StopTimer()
	}
	pc.report(b)
	b.ReportMetric(float64(cycles)/float64(b.N), "cycles")
}

// BenchmarkEvictionPass fills 200,000 keys, lowers maxmemory by half and measures the longest
// single eviction pass (each write command runs one when over the limit).
func BenchmarkEvictionPass(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var pc pauseClock
	for i := 0; i < b.N; i++ {
		s := newIdleServer(b, func(c *config.Config) { c.MaxMemoryPolicy = "allkeys-lru" })
		db := s.dbs[0]
		val := make([]byte, 100)
		for k := 0; k < 200_000; k++ {
			db.SetString([]byte("key:"+strconv.Itoa(k)), val, 0, false, s.lruClock)
		}
		s.cfg.MaxMemory = s.usedMemory() / 2
		b.StartTimer()
		for s.usedMemory() > s.cfg.MaxMemory {
			pc.start()
			s.freeMemoryIfNeeded()
			pc.stop()
		}
		b.StopTimer()
	}
	pc.report(b)
}

// BenchmarkDelMillionMemberSet times DEL of a 1,000,000-member set on the main thread: the set is
// handed to the bio thread, so the command itself is O(1).
func BenchmarkDelMillionMemberSet(b *testing.B) {
	s := newIdleServer(b, nil)
	s.bio.start(&s.wg)
	b.Cleanup(s.bio.stop)
	db := s.dbs[0]
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		set := keyspace.NewSet()
		for m := 0; m < 1_000_000; m++ {
			set.Add([]byte(strconv.Itoa(m)))
		}
		r := db.SetObject([]byte("big"), keyspace.TypeSet, set, 0)
		b.StartTimer()
		s.deleteKey(db, r)
	}
}
