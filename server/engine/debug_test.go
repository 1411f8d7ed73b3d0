package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iocache/iocache/server/config"
)

// The DEBUG subcommands Redis's test suite relies on answer as redis-server 7.0 does, byte for
// byte (hack/redis-testsuite.sh runs that suite).

func startDebugPair(t *testing.T) (iocacheAddr, redisAddr string) {
	t.Helper()
	_, iocacheAddr = startServer(t, func(c *config.Config) { c.EnableDebugCommand = "yes" })
	return iocacheAddr, startRedisPeer(t, "--enable-debug-command", "yes")
}

// DEBUG DIGEST and DIGEST-VALUE compute Redis's digest: the same data gives the same digits.
func TestDebugDigestMatchesRedis(t *testing.T) {
	io, redis := startDebugPair(t)
	differentialWith(t, io, redis, split(
		"DEBUG DIGEST", "DEBUG DIGEST-VALUE nokey", "DEBUG DIGEST-VALUE",
		"SET s hello", "SET n 12345", "SET e x", "PEXPIRE e 100000",
		"RPUSH l a b 3 c", "SADD st x y 1 2 3", "SADD big a b c d e f g h i j k l m n o p q r s t u v w x y z",
		"ZADD z 1 a 2.5 b -3 c 1e100 d inf e -inf f 0.1 g", "HSET h f1 v1 f2 2 f3 v3",
		"XADD x 1-1 a 1 b 2", "XADD x 5-0 c 3", "XGROUP CREATE x g 0",
		"SELECT 3", "SET other 1", "SELECT 0",
		"DEBUG DIGEST", "DEBUG DIGEST-VALUE s n e l st big z h x nokey",
		"SWAPDB 0 3", "DEBUG DIGEST", "SWAPDB 0 3", "DEL l", "DEBUG DIGEST",
	))
}

// DEBUG PROTOCOL answers each RESP type with Redis's values, in RESP2 and RESP3.
func TestDebugProtocolMatchesRedis(t *testing.T) {
	io, redis := startDebugPair(t)
	var cmds [][]string
	for _, name := range []string{"string", "integer", "double", "bignum", "null", "array", "set", "map", "attrib",
		"push", "verbatim", "true", "false", "nosuch", "STRING"} {
		cmds = append(cmds, []string{"DEBUG", "PROTOCOL", name})
	}
	differentialWith(t, io, redis, cmds)
}

// DEBUG QUICKLIST-PACKED-THRESHOLD validates its argument as Redis does (and changes nothing:
// iocache lists have no packed nodes).
func TestDebugQuicklistPackedThresholdMatchesRedis(t *testing.T) {
	io, redis := startDebugPair(t)
	differentialWith(t, io, redis, split("DEBUG QUICKLIST-PACKED-THRESHOLD 1b", "DEBUG QUICKLIST-PACKED-THRESHOLD 0",
		"DEBUG QUICKLIST-PACKED-THRESHOLD 5b", "DEBUG QUICKLIST-PACKED-THRESHOLD 1mb", "DEBUG QUICKLIST-PACKED-THRESHOLD abc",
		"DEBUG QUICKLIST-PACKED-THRESHOLD 5gb", "DEBUG QUICKLIST-PACKED-THRESHOLD -1", "DEBUG QUICKLIST-PACKED-THRESHOLD"))
}

// DEBUG SET-ACTIVE-EXPIRE 0 stops the active expire cycle: an expired key nobody touches stays
// (DBSIZE counts it, as in Redis) until it is accessed; 1 starts the cycle again.
func TestDebugSetActiveExpireStopsTheCycle(t *testing.T) {
	io, redis := startDebugPair(t)
	for _, addr := range []string{redis, io} {
		p := dialPeer(t, addr)
		p.do("DEBUG", "SET-ACTIVE-EXPIRE", "0")
		p.do("SET", "k", "v", "PX", "1")
		time.Sleep(300 * time.Millisecond)
		if got := p.do("DBSIZE"); got != ":1\r\n" {
			t.Fatalf("%s: DBSIZE with active expire off: %q, want :1", addr, got)
		}
		p.do("DEBUG", "SET-ACTIVE-EXPIRE", "1")
		deadline := time.Now().Add(3 * time.Second)
		for p.do("DBSIZE") != ":0\r\n" {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the key did not expire once active expire was back on", addr)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// DEBUG LOADAOF replays the AOF in place: the same data afterwards, and nothing appended to the
// AOF by the replay.
func TestDebugLoadAOFRoundTrip(t *testing.T) {
	dir := t.TempDir()
	_, addr := startServer(t, func(c *config.Config) {
		c.EnableDebugCommand, c.Dir, c.AppendOnly = "yes", dir, true
	})
	p := dialPeer(t, addr)
	for _, cmd := range split("SET a 1", "RPUSH l x y z", "HSET h f v", "ZADD z 1 m", "XADD s 1-1 f v", "SELECT 2", "SADD st a b", "SELECT 0") {
		p.do(cmd...)
	}
	before := p.do("DEBUG", "DIGEST")
	size := func() int64 {
		var n int64
		files, _ := filepath.Glob(filepath.Join(dir, "appendonlydir", "*.incr.aof"))
		for _, f := range files {
			if fi, err := os.Stat(f); err == nil {
				n += fi.Size()
			}
		}
		return n
	}
	sizeBefore := size()
	if got := p.do("DEBUG", "LOADAOF"); got != "+OK\r\n" {
		t.Fatalf("DEBUG LOADAOF: %q", got)
	}
	if after := p.do("DEBUG", "DIGEST"); after != before || strings.HasPrefix(after, "+000000") {
		t.Fatalf("digest before %q, after DEBUG LOADAOF %q", before, after)
	}
	// With appendfsync everysec a write waits while the last fsync runs (up to 2 s, as in
	// Redis) and the reply does not wait for it: a loaded machine needs the margin.
	p.do("SET", "b", "2")
	for deadline := time.Now().Add(5 * time.Second); size() <= sizeBefore; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the AOF did not grow with a write after DEBUG LOADAOF")
		}
	}
	if got := p.do("DEBUG", "LOADAOF"); got != "+OK\r\n" {
		t.Fatalf("second DEBUG LOADAOF: %q", got)
	}
	if got := p.do("GET", "b"); got != "$1\r\n2\r\n" {
		t.Fatalf("GET b after the second DEBUG LOADAOF: %q", got)
	}
	if got := p.do("DBSIZE"); got != ":6\r\n" {
		t.Fatalf("DBSIZE after DEBUG LOADAOF: %q, want 6 (the replay must not double anything)", got)
	}
}

// INFO server has redis_git_sha1 and redis_git_dirty, as every Redis has: the suite's first file
// (unit/printver) reads them. iocache is not built from Redis's tree: the values of a Redis built
// outside git.
func TestInfoHasRedisGitFields(t *testing.T) {
	_, addr := startServer(t, nil)
	info := dialPeer(t, addr).do("INFO", "server")
	for _, want := range []string{"\r\nredis_git_sha1:00000000\r\n", "\r\nredis_git_dirty:0\r\n"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO server lacks %q:\n%s", want, info)
		}
	}
}

// INFO memory has the fields Redis 7.0's suite computes with; without mem_not_counted_for_evict
// unit/tracking aborted at "Tracking invalidation message of eviction keys should be before
// response" ('can't use empty string as operand of "-"'). Each must be on redis-server too.
func TestInfoMemoryHasTheFieldsTheSuiteReads(t *testing.T) {
	_, addr := startServer(t, nil)
	for name, a := range map[string]string{"redis-server": startRedisPeer(t), "iocache": addr} {
		info := dialPeer(t, a).do("INFO", "memory")
		for _, field := range []string{"used_memory", "mem_not_counted_for_evict", "mem_clients_normal", "maxmemory",
			"maxmemory_policy", "mem_fragmentation_ratio", "lazyfree_pending_objects", "lazyfreed_objects"} {
			if !strings.Contains(info, "\r\n"+field+":") {
				t.Errorf("%s: INFO memory lacks %s", name, field)
			}
		}
	}
}

// DEBUG POPULATE makes the keys and values Redis makes (the digest covers them all).
func TestDebugPopulateMatchesRedis(t *testing.T) {
	io, redis := startDebugPair(t)
	long := strings.Repeat("p", 200)
	differentialWith(t, io, redis, [][]string{
		{"SET", "key:3", "mine"}, {"DEBUG", "POPULATE", "10"}, {"DEBUG", "POPULATE", "5", "pre"},
		{"DEBUG", "POPULATE", "3", "sized", "3"}, {"DEBUG", "POPULATE", "3", "padded", "12"}, {"DEBUG", "POPULATE", "2", long},
		{"DEBUG", "POPULATE", "0"}, {"DEBUG", "POPULATE", "-1"}, {"DEBUG", "POPULATE", "x"}, {"DEBUG", "POPULATE", "1", "p", "-2"},
		{"DEBUG", "POPULATE", "1", "p", "y"}, {"DEBUG", "POPULATE", "1", "p", "1", "extra"},
		{"DBSIZE"}, {"GET", "key:3"}, {"GET", "key:9"}, {"GET", "padded:2"}, {"STRLEN", "padded:2"}, {"GET", "sized:1"},
		{"DEBUG", "DIGEST"},
	})
}

// DEBUG POPULATE stops at maxmemory instead of filling the machine.
func TestDebugPopulateStopsAtMaxmemory(t *testing.T) {
	_, addr := startServer(t, func(c *config.Config) { c.EnableDebugCommand = "yes"; c.MaxMemory = 8 << 20 })
	p := dialPeer(t, addr)
	if got := p.do("DEBUG", "POPULATE", "100000000", "k", "100"); !strings.HasPrefix(got, "-OOM ") {
		t.Fatalf("DEBUG POPULATE of 10 GB under maxmemory 8mb: %q", got)
	}
	if got := p.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING afterwards: %q", got)
	}
}

// DEBUG RELOAD takes Redis's MERGE, NOFLUSH and NOSAVE: without MERGE, a library or key that is
// already there fails the load; with it, the file's replaces it (Redis's unit/functions).
func TestDebugReloadOptionsMatchRedis(t *testing.T) {
	io, redis := startDebugPair(t)
	lib := "#!lua name=test\nredis.register_function('test', function() return 'hello' end)"
	differentialWith(t, io, redis, [][]string{
		{"FUNCTION", "LOAD", lib}, {"SET", "x", "1"}, {"DEBUG", "RELOAD"}, {"FCALL", "test", "0"}, {"GET", "x"},
		{"DEBUG", "RELOAD", "NOFLUSH"}, {"DEBUG", "RELOAD", "NOFLUSH", "MERGE"}, {"FUNCTION", "LIST"}, {"GET", "x"},
		{"DEBUG", "RELOAD", "FOO"}, {"SET", "x", "2"}, {"DEBUG", "RELOAD", "NOSAVE", "NOFLUSH", "MERGE"}, {"GET", "x"},
		{"DEBUG", "RELOAD", "nosave"}, {"GET", "x"}, {"DEBUG", "DIGEST"},
	})
}

// An empty stream whose last ID is 0-0 survives an AOF rewrite in AOF format and DEBUG LOADAOF,
// on both servers alike (Redis's unit/type/stream-cgroups): the base rebuilds it with XADD of
// 0-1, trimmed at once, then XSETID.
func TestEmptyStreamSurvivesAOFRewriteAsRedis(t *testing.T) {
	dir := t.TempDir()
	_, io := startServer(t, func(c *config.Config) { c.EnableDebugCommand, c.Dir = "yes", dir })
	redis := startRedisPeer(t, "--enable-debug-command", "yes")
	run := func(addr string) string {
		p := dialPeer(t, addr)
		p.do("CONFIG", "SET", "aof-use-rdb-preamble", "no")
		p.do("CONFIG", "SET", "appendonly", "yes")
		waitInfo(t, p, "aof_rewrite_in_progress", "0")
		p.do("XGROUP", "CREATE", "mystream", "group-name", "$", "MKSTREAM")
		p.do("BGREWRITEAOF")
		waitInfo(t, p, "aof_rewrite_in_progress", "0")
		out := p.do("DEBUG", "LOADAOF") + p.do("XINFO", "GROUPS", "mystream") + p.do("TYPE", "mystream") + p.do("XLEN", "mystream")
		p.do("CONFIG", "SET", "appendonly", "no")
		return out
	}
	if want, got := run(redis), run(io); want != got {
		t.Fatalf("after BGREWRITEAOF and DEBUG LOADAOF:\n redis:   %q\n iocache: %q", want, got)
	}
}
