package engine

import (
	"net"
	"strings"
	"testing"

	"github.com/iocache/iocache/server/config"
)

// FAILOVER's argument checks and refusals are redis-server's, byte for byte.
func TestFailoverErrorsMatchRedis(t *testing.T) {
	_, addr := startServer(t, nil)
	differential(t, addr, split(
		"FAILOVER", "FAILOVER ABORT", "FAILOVER TIMEOUT 0", "FAILOVER TIMEOUT x", "FAILOVER FORCE",
		"FAILOVER TO 1.2.3.4 5 FORCE", "FAILOVER TO h x", "FAILOVER TO h", "FAILOVER foo", "FAILOVER ABORT TIMEOUT 5",
		"FAILOVER TIMEOUT 5 TIMEOUT 5", "FAILOVER FORCE FORCE", "FAILOVER TO a 1 TO b 2",
	))
}

// waitRole waits until the server at addr reports role (master or slave) in INFO replication.
func waitRole(t *testing.T, p *peerConn, role string) {
	t.Helper()
	waitFor(t, "role:"+role, func() bool { return strings.Contains(p.do("INFO", "replication"), "role:"+role+"\r\n") })
}

// An iocache primary fails over to a redis-server replica, and a redis-server primary to an
// iocache replica: the roles swap, no write is lost, the new primary continued the old one's
// history (a partial resync, not a full one), and the old primary's held writes then fail as a
// replica's do.
func TestFailoverWithRedis(t *testing.T) {
	for _, iocachePrimary := range []bool{true, false} {
		var primaryAddr, replicaAddr string
		if iocachePrimary {
			_, primaryAddr = startServer(t, nil)
			host, port, _ := net.SplitHostPort(primaryAddr)
			replicaAddr = startRedisPeer(t, "--replicaof", host, port)
		} else {
			primaryAddr = startRedisPeer(t)
			host, port, _ := net.SplitHostPort(primaryAddr)
			_, replicaAddr = startServer(t, func(c *config.Config) { c.ReplicaOf = host + " " + port })
		}
		primary, replica := dialPeer(t, primaryAddr), dialPeer(t, replicaAddr)
		waitFor(t, "the replica's link", func() bool {
			return strings.Contains(replica.do("INFO", "replication"), "master_link_status:up")
		})
		primary.do("SET", "before", "1")
		if got := primary.do("WAIT", "1", "2000"); got != ":1\r\n" {
			t.Fatalf("WAIT: %q", got)
		}
		rhost, rport, _ := net.SplitHostPort(replicaAddr)
		if got := primary.do("FAILOVER", "TO", rhost, rport, "TIMEOUT", "5000"); got != "+OK\r\n" {
			t.Fatalf("iocache primary %v: FAILOVER: %q", iocachePrimary, got)
		}
		waitRole(t, replica, "master")
		waitRole(t, primary, "slave")
		waitFor(t, "the failover's end", func() bool {
			return strings.Contains(primary.do("INFO", "replication"), "master_failover_state:no-failover")
		})
		if got := primary.do("SET", "after", "1"); !strings.HasPrefix(got, "-READONLY") {
			t.Errorf("iocache primary %v: a write to the old primary: %q", iocachePrimary, got)
		}
		replica.do("SET", "after", "2")
		waitFor(t, "the new primary's write on the old one", func() bool { return primary.do("GET", "after") == "$1\r\n2\r\n" })
		if got := replica.do("GET", "before"); got != "$1\r\n1\r\n" {
			t.Errorf("iocache primary %v: the new primary lost a write: %q", iocachePrimary, got)
		}
		if info := replica.do("INFO", "stats"); !strings.Contains(info, "sync_partial_ok:1\r\n") {
			t.Errorf("iocache primary %v: the old primary did not continue with a partial resync: %q", iocachePrimary, info)
		}
	}
}

// A FAILOVER that cannot complete gives the primary back: at its timeout without FORCE, or with
// ABORT; the writes it held then run.
func TestFailoverAborts(t *testing.T) {
	_, addr := startServer(t, nil)
	primary, writer := dialPeer(t, addr), dialPeer(t, addr)
	// A replica that never acknowledges anything: it asks for a sync and reads nothing.
	stuck := dialPeer(t, addr)
	stuck.do("REPLCONF", "listening-port", "1234")
	stuck.send("SYNC")
	waitFor(t, "the replica", func() bool { return strings.Contains(primary.do("INFO", "replication"), "connected_slaves:1") })
	if got := primary.do("FAILOVER", "TO", "127.0.0.1", "1"); got != "-ERR FAILOVER target HOST and PORT is not a replica.\r\n" {
		t.Errorf("FAILOVER TO a wrong port: %q", got)
	}
	if got := primary.do("FAILOVER", "TIMEOUT", "300"); got != "+OK\r\n" {
		t.Fatalf("FAILOVER: %q", got)
	}
	if got := primary.do("FAILOVER"); got != "-ERR FAILOVER already in progress.\r\n" {
		t.Errorf("a second FAILOVER: %q", got)
	}
	if info := primary.do("INFO", "replication"); !strings.Contains(info, "master_failover_state:waiting-for-sync\r\n") {
		t.Errorf("while waiting: %q", info)
	}
	writer.send("SET", "k", "v") // held until the failover gives up
	if got := writer.readUntil("+OK\r\n"); got != "+OK\r\n" {
		t.Errorf("the held write: %q", got)
	}
	if info := primary.do("INFO", "replication"); !strings.Contains(info, "role:master\r\n") || !strings.Contains(info, "master_failover_state:no-failover\r\n") {
		t.Errorf("after the timeout: %q", info)
	}
	if got := primary.do("FAILOVER", "TIMEOUT", "60000"); got != "+OK\r\n" {
		t.Fatalf("FAILOVER: %q", got)
	}
	if got := primary.do("FAILOVER", "ABORT"); got != "+OK\r\n" {
		t.Errorf("FAILOVER ABORT: %q", got)
	}
	if got := writer.do("SET", "k", "w"); got != "+OK\r\n" {
		t.Errorf("a write after ABORT: %q", got)
	}
}
