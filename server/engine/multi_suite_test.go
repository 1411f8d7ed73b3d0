package engine

// Transactions and WATCH as Redis's own suite checks them (unit/multi, unit/type/set), against
// redis-server.

import (
	"slices"
	"testing"
	"time"

	"github.com/iocache/iocache/server/config"
)

// Over maxmemory, Redis refuses inside MULTI every command but EXEC, DISCARD, QUIT and RESET
// (queueing grows memory without bound) and flags the transaction, so EXEC aborts; an EXEC whose
// queue holds a denyoom command is aborted whole; the commands of an EXEC that runs are not
// checked one by one. Redis's unit/multi checks these; maxmemory changes on a second connection.
func TestMultiUnderOOMAsRedis(t *testing.T) {
	_, addr := startServer(t, nil)
	redis := startRedisPeer(t)
	const admin = "admin"
	steps := [][]string{
		{"MULTI"}, {"SET", "foo1", "bar1"}, {admin, "CONFIG", "SET", "maxmemory", "1"}, {"LPUSH", "l", "v"}, {"GET", "foo1"},
		{admin, "CONFIG", "SET", "maxmemory", "0"}, {"SET", "foo2", "bar2"}, {"EXEC"}, {"EXISTS", "foo1", "foo2"},
		{"MULTI"}, {admin, "CONFIG", "SET", "maxmemory", "1"}, {"SET", "x", "1"}, {"PING"}, {"DISCARD"},
		{admin, "CONFIG", "SET", "maxmemory", "0"},
		{"MULTI"}, {"SET", "x", "1"}, {"GET", "x"}, {admin, "CONFIG", "SET", "maxmemory", "1"}, {"EXEC"}, {"GET", "x"},
		{"MULTI"}, {"GET", "x"}, {"EXEC"}, {admin, "CONFIG", "SET", "maxmemory", "0"},
		{"MULTI"}, {"GET", "x"}, {"CONFIG", "SET", "maxmemory", "1"}, {"SET", "y", "1"}, {"EXEC"}, {admin, "CONFIG", "SET", "maxmemory", "0"},
	}
	var got [2][]string
	for i, a := range []string{redis, addr} {
		c, ad := dialPeer(t, a), dialPeer(t, a)
		for _, st := range steps {
			if st[0] == admin {
				ad.do(st[1:]...)
				continue
			}
			got[i] = append(got[i], c.do(st...))
		}
	}
	for i := range got[0] {
		if got[0][i] != got[1][i] {
			t.Errorf("reply %d:\n redis:   %q\n iocache: %q", i, got[0][i], got[1][i])
		}
	}
}

// SMOVE of a member the destination already holds does not touch the destination: a WATCH on
// it survives, as in Redis (unit/type/set).
func TestSMoveToAHolderKeepsWatchAsRedis(t *testing.T) {
	_, io := startServer(t, nil)
	for _, addr := range []string{startRedisPeer(t), io} {
		p, other := dialPeer(t, addr), dialPeer(t, addr)
		p.do("SADD", "src", "a", "b")
		p.do("SADD", "dst", "a")
		p.do("WATCH", "dst")
		p.do("MULTI")
		p.do("SADD", "dst", "c")
		other.do("SMOVE", "src", "dst", "a")
		if got := p.do("EXEC"); got != "*1\r\n:1\r\n" {
			t.Fatalf("%s: EXEC after SMOVE of a member dst holds: %q", addr, got)
		}
	}
}

// A key that had expired, but was not deleted yet, when WATCH was called is "stale": Redis 7.0
// counts neither its lazy deletion nor a FLUSHDB or SWAPDB that removes or keeps it stale as a
// change, nor a missing key replaced by a stale one, while a key that expires after WATCH fails
// EXEC. Each scenario below is from Redis's unit/multi, replayed on both servers with active
// expiry off and compared reply by reply.
func TestWatchStaleKeysAsRedis(t *testing.T) {
	_, addr := startServer(t, func(c *config.Config) { c.EnableDebugCommand = "yes" })
	redis := startRedisPeer(t, "--enable-debug-command", "yes")
	const pause = "pause"
	scenarios := [][][]string{
		{{"SET", "x", "foo", "PX", "1"}, {pause}, {"WATCH", "x"}, {"MULTI"}, {"PING"}, {"EXEC"}},
		{{"SET", "x", "foo", "PX", "1"}, {pause}, {"WATCH", "x"}, {"EXISTS", "x"}, {"MULTI"}, {"PING"}, {"EXEC"}},
		{{"SET", "x", "foo", "PX", "1"}, {pause}, {"WATCH", "x"}, {"FLUSHDB"}, {"MULTI"}, {"PING"}, {"EXEC"}},
		{{"SELECT", "1"}, {"SET", "x", "foo", "PX", "1"}, {pause}, {"WATCH", "x"}, {"SWAPDB", "0", "1"}, {"MULTI"}, {"PING"}, {"EXEC"}},
		{{"SET", "x", "foo", "PX", "1"}, {pause}, {"SELECT", "1"}, {"WATCH", "x"}, {"SWAPDB", "0", "1"}, {"MULTI"}, {"PING"}, {"EXEC"}},
		{{"SELECT", "1"}, {"SET", "x", "foo", "PX", "1"}, {"SELECT", "0"}, {"SET", "x", "bar", "PX", "1"}, {pause},
			{"SELECT", "1"}, {"WATCH", "x"}, {"SWAPDB", "0", "1"}, {"MULTI"}, {"PING"}, {"EXEC"}},
		{{"SET", "x", "foo", "PX", "1"}, {pause}, {"WATCH", "x"}, {"SET", "x", "new"}, {"MULTI"}, {"PING"}, {"EXEC"}},
		{{"SET", "x", "foo", "PX", "100"}, {"WATCH", "x"}, {pause}, {pause}, {"MULTI"}, {"PING"}, {"EXEC"}},
	}
	for n, sc := range scenarios {
		var got [2][]string
		for i, a := range []string{redis, addr} {
			c := dialPeer(t, a)
			c.do("FLUSHALL")
			c.do("DEBUG", "SET-ACTIVE-EXPIRE", "0")
			for _, st := range sc {
				if st[0] == pause {
					time.Sleep(60 * time.Millisecond)
					continue
				}
				got[i] = append(got[i], c.do(st...))
			}
			c.do("DEBUG", "SET-ACTIVE-EXPIRE", "1")
		}
		if !slices.Equal(got[0], got[1]) {
			t.Errorf("scenario %d %v:\n redis:   %q\n iocache: %q", n, sc, got[0], got[1])
		}
	}
}
