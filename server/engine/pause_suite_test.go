package engine

import (
	"regexp"
	"testing"
	"time"
)

// Behaviours of CLIENT PAUSE that Redis's unit/pause checks, on both servers.

func pauseInfo(t *testing.T, p *peerConn, section, field string) string {
	t.Helper()
	m := regexp.MustCompile(`\r\n` + field + `:([^\r]*)\r\n`).FindStringSubmatch(p.do("INFO", section))
	if m == nil {
		t.Fatalf("INFO %s has no %s", section, field)
	}
	return m[1]
}

// A client held by CLIENT PAUSE counts in blocked_clients, as Redis counts it.
func TestPausedClientsCountAsBlocked(t *testing.T) {
	_, io := startServer(t, nil)
	for _, addr := range []string{startRedisPeer(t), io} {
		admin, writer := dialPeer(t, addr), dialPeer(t, addr)
		admin.do("CLIENT", "PAUSE", "100000", "WRITE")
		writer.send("SET", "k", "v")
		deadline := time.Now().Add(3 * time.Second)
		for pauseInfo(t, admin, "clients", "blocked_clients") != "1" {
			if time.Now().After(deadline) {
				t.Fatalf("%s: blocked_clients never reached 1 with a write held by CLIENT PAUSE", addr)
			}
			time.Sleep(10 * time.Millisecond)
		}
		admin.do("CLIENT", "UNPAUSE")
		if got := writer.readUntil("+OK\r\n"); got != "+OK\r\n" {
			t.Fatalf("%s: the held SET answered %q", addr, got)
		}
	}
}

// Under a pause, an expired key reads as gone but is not deleted (expired_keys stays), on access
// as in the active cycle; once the pause ends, access deletes it.
func TestPauseKeepsExpiredKeys(t *testing.T) {
	_, io := startServer(t, nil)
	for _, addr := range []string{startRedisPeer(t), io} {
		p := dialPeer(t, addr)
		before := pauseInfo(t, p, "stats", "expired_keys")
		p.do("MULTI")
		p.do("SET", "foo", "bar", "PX", "10")
		p.do("CLIENT", "PAUSE", "50000", "WRITE")
		p.do("EXEC")
		time.Sleep(150 * time.Millisecond)
		if got := p.do("GET", "foo"); got != "$-1\r\n" {
			t.Fatalf("%s: GET of an expired key under pause: %q", addr, got)
		}
		if got := pauseInfo(t, p, "stats", "expired_keys"); got != before {
			t.Fatalf("%s: expired_keys went from %s to %s under pause", addr, before, got)
		}
		p.do("CLIENT", "UNPAUSE")
		p.do("GET", "foo")
		if got := pauseInfo(t, p, "stats", "expired_keys"); got == before {
			t.Fatalf("%s: expired_keys still %s after the pause", addr, got)
		}
	}
}

// Read-only scripts may not run may-replicate commands such as PUBLISH, as in Redis.
func TestReadOnlyScriptsRefusePublishAsRedis(t *testing.T) {
	_, addr := startServer(t, nil)
	differential(t, addr, [][]string{
		{"EVAL_RO", "return redis.call('publish','ch','msg')", "0"},
		{"EVAL", "#!lua flags=no-writes\nreturn redis.call('publish','ch','msg')", "0"},
		{"EVAL", "return redis.call('publish','ch','msg')", "0"},
	})
}

// CLIENT PAUSE WRITE holds PFCOUNT (it may write the cached cardinality, may-replicate in Redis)
// and an EXEC whose queue writes, as Redis does; a read-only EXEC runs.
func TestPauseWriteHoldsWhatRedisHolds(t *testing.T) {
	_, io := startServer(t, nil)
	for _, addr := range []string{startRedisPeer(t), io} {
		admin := dialPeer(t, addr)
		admin.do("PFADD", "hll", "a")
		tx, ro := dialPeer(t, addr), dialPeer(t, addr)
		tx.do("MULTI")
		tx.do("SET", "k", "v")
		ro.do("MULTI")
		ro.do("GET", "k")
		admin.do("CLIENT", "PAUSE", "100000", "WRITE")
		if got := ro.do("EXEC"); got != "*1\r\n$-1\r\n" {
			t.Fatalf("%s: read-only EXEC under pause: %q", addr, got)
		}
		pf := dialPeer(t, addr)
		pf.send("PFCOUNT", "hll")
		tx.send("EXEC")
		deadline := time.Now().Add(3 * time.Second)
		for pauseInfo(t, admin, "clients", "blocked_clients") != "2" {
			if time.Now().After(deadline) {
				t.Fatalf("%s: PFCOUNT and a writing EXEC were not both held by CLIENT PAUSE WRITE", addr)
			}
			time.Sleep(10 * time.Millisecond)
		}
		admin.do("CLIENT", "UNPAUSE")
		if got := pf.readUntil(":1\r\n"); got != ":1\r\n" {
			t.Fatalf("%s: PFCOUNT after the pause: %q", addr, got)
		}
		if got := tx.readUntil("*1\r\n+OK\r\n"); got != "*1\r\n+OK\r\n" {
			t.Fatalf("%s: EXEC after the pause: %q", addr, got)
		}
	}
}
