package engine

import (
	"testing"
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
