package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/resp"
)

// The hot path is parse → execute → reply for the commands a cache serves most, on the main
// thread, without sockets: the work every request costs besides its two system calls. It must
// not allocate, so that request rates do not turn into garbage-collector work. The test enforces
// it; the benchmark measures it.

var hotPathCases = []struct{ name, req string }{
	{"GET", "*2\r\n$3\r\nGET\r\n$16\r\nkey:000000000042\r\n"},
	{"GET_MISS", "*2\r\n$3\r\nGET\r\n$7\r\nmissing\r\n"},
	{"SET", "*3\r\n$3\r\nSET\r\n$16\r\nkey:000000000042\r\n$3\r\nxxx\r\n"},
	{"INCR", "*2\r\n$4\r\nINCR\r\n$7\r\ncounter\r\n"},
	{"EXISTS", "*2\r\n$6\r\nEXISTS\r\n$16\r\nkey:000000000042\r\n"},
	// A hit and a miss; the miss's {hash tag} puts it in the hit's slot, as cluster mode requires.
	{"MGET", "*3\r\n$4\r\nMGET\r\n$16\r\nkey:000000000042\r\n$25\r\n{key:000000000042}missing\r\n"},
	{"HGET", "*3\r\n$4\r\nHGET\r\n$4\r\nhash\r\n$5\r\nfield\r\n"},
	// A field of a small (inline) hash overwritten, as redis-benchmark -t hset does.
	{"HSET", "*4\r\n$4\r\nHSET\r\n$4\r\nhash\r\n$5\r\nfield\r\n$5\r\nvalue\r\n"},
	{"PING_INLINE", "PING\r\n"},
	{"PING", "*1\r\n$4\r\nPING\r\n"},
	// A pipeline of 16 GETs in one read, as redis-benchmark -P 16 sends them: one op is 16 requests.
	{"GET_PIPELINE16", strings.Repeat("*2\r\n$3\r\nGET\r\n$16\r\nkey:000000000042\r\n", 16)},
}

// bareServer is a server that is not serving (its main loop never runs: the test calls it on
// its own goroutine) and an authenticated client of the default user, with no socket.
func bareServer(tb testing.TB, mutate ...func(*config.Config)) (*Server, *client) {
	cfg := config.New()
	cfg.Port = 0
	cfg.Bind = []string{"127.0.0.1"}
	cfg.LogLevel = "warning"
	cfg.Save = ""
	for _, m := range mutate {
		m(cfg)
	}
	s, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.closeListeners)
	c := newClient(1, -1, 0)
	c.user, c.authed = s.acl.users.Default(), true
	return s, c
}

// hotPathRunner returns a function that serves one request on a server's main thread.
func hotPathRunner(tb testing.TB, mutate ...func(*config.Config)) func(req []byte) {
	s, c := bareServer(tb, mutate...)
	lim := resp.DefaultLimits
	var qbuf []byte
	serve := func(req []byte) {
		qbuf = append(qbuf[:0], req...)
		c.conn.Argv, c.conn.CmdEnds = c.conn.Argv[:0], c.conn.CmdEnds[:0]
		for off := 0; off < len(qbuf); {
			var n int
			c.conn.Argv, n, _, _ = resp.ParseCommand(qbuf[off:], c.conn.Argv, &lim)
			if n == 0 {
				tb.Fatalf("%q does not parse", qbuf[off:])
			}
			off += n
			c.conn.CmdEnds = append(c.conn.CmdEnds, len(c.conn.Argv))
		}
		s.process(c)
		if len(c.w.Buf) > 0 && c.w.Buf[0] == '-' {
			tb.Fatalf("%q: %q", req, c.w.Buf)
		}
		c.w.Buf = c.w.Buf[:0]
	}
	// The keys exist first, so that GET hits and SET overwrites in place.
	if s.cluster != nil { // a node serving every slot
		serve([]byte("*4\r\n$7\r\nCLUSTER\r\n$13\r\nADDSLOTSRANGE\r\n$1\r\n0\r\n$5\r\n16383\r\n"))
	}
	serve([]byte("*3\r\n$3\r\nSET\r\n$16\r\nkey:000000000042\r\n$3\r\nxxx\r\n"))
	serve([]byte("*4\r\n$4\r\nHSET\r\n$4\r\nhash\r\n$5\r\nfield\r\n$5\r\nvalue\r\n"))
	return serve
}

func TestHotPathAllocatesNothing(t *testing.T) {
	serve := hotPathRunner(t)
	for _, tc := range hotPathCases {
		req := []byte(tc.req)
		serve(req) // warm up: the reply buffer and argv reach their size
		if n := testing.AllocsPerRun(1000, func() { serve(req) }); n != 0 {
			t.Errorf("%s: %.2f allocations per request, want 0", tc.name, n)
		}
	}
}

// In cluster mode each keyed command is routed (its keys found, their slot computed and checked)
// before it runs: that must not allocate either.
func TestHotPathAllocatesNothingInClusterMode(t *testing.T) {
	serve := hotPathRunner(t, clusterMode(t))
	for _, tc := range hotPathCases {
		req := []byte(tc.req)
		serve(req)
		if n := testing.AllocsPerRun(1000, func() { serve(req) }); n != 0 {
			t.Errorf("%s: %.2f allocations per request, want 0", tc.name, n)
		}
	}
}

func clusterMode(tb testing.TB) func(*config.Config) {
	dir := tb.TempDir()
	return func(c *config.Config) { c.ClusterEnabled, c.Dir = true, dir }
}

// BenchmarkHotPath measures the hot path per command, standalone and in cluster mode (the
// routing's cost); it reports 0 allocs/op.
func BenchmarkHotPath(b *testing.B) {
	b.Run("standalone", func(b *testing.B) { benchHotPath(b, hotPathRunner(b)) })
	b.Run("cluster", func(b *testing.B) { benchHotPath(b, hotPathRunner(b, clusterMode(b))) })
}

func benchHotPath(b *testing.B, serve func([]byte)) {
	for _, tc := range hotPathCases {
		b.Run(tc.name, func(b *testing.B) {
			req := []byte(tc.req)
			serve(req)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				serve(req)
			}
		})
	}
}

// A small collection written in one command (HSET, RPUSH, ZADD, SADD of integers with ten
// elements) allocates nothing besides the key's share of the DB's tables' growth: it is built in
// a reused write view and copied into its record (keyspace/inline.go). ZADD allocates its parsed
// scores. Any allocation would be garbage the collector must find, which is resident memory a
// cache pays for (hack/memtypes measures it).
func TestSmallCollectionWritesAllocateNothing(t *testing.T) {
	serve := hotPathRunner(t)
	for _, tc := range []struct {
		cmd  string
		elem func(j int) []string
		max  float64
	}{
		{"HSET", func(j int) []string { return []string{fmt.Sprint("field:", j), fmt.Sprint("value:", j)} }, 0},
		{"ZADD", func(j int) []string { return []string{fmt.Sprint(j), fmt.Sprint("member:", j)} }, 1}, // ZADD's parsed scores
		{"SADD", func(j int) []string { return []string{fmt.Sprint(j * 1000)} }, 0},
		{"RPUSH", func(j int) []string { return []string{fmt.Sprint("element:", j)} }, 0},
		{"LPUSH", func(j int) []string { return []string{fmt.Sprint("element:", j)} }, 0},
	} {
		i := 0
		next := func() []byte {
			i++
			args := []string{tc.cmd, fmt.Sprintf("%s:%012d", tc.cmd, i)}
			for j := 0; j < 10; j++ {
				args = append(args, tc.elem(j)...)
			}
			var b strings.Builder
			fmt.Fprintf(&b, "*%d\r\n", len(args))
			for _, a := range args {
				fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
			}
			return []byte(b.String())
		}
		reqs := make([][]byte, 2000)
		for k := range reqs {
			reqs[k] = next()
		}
		k := 0
		// The DB's index, dense list and object table grow by doubling: a handful of their
		// allocations are spread over the 2000 keys.
		if n := testing.AllocsPerRun(len(reqs)-1, func() { serve(reqs[k]); k++ }); n > tc.max+0.05 {
			t.Errorf("%s of 10 elements on a new key: %.2f allocations, want at most %v", tc.cmd, n, tc.max)
		}
	}
}
