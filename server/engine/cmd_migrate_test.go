package engine

import (
	"net"
	"strings"
	"testing"

	"github.com/iocache/iocache/server/config"
)

// MIGRATE from iocache behaves as MIGRATE from redis-server: each source sends to a target of its
// own (a redis-server, and an iocache), and the replies of source and target, errors included,
// are the same byte for byte.
func TestMigrateMatchesRedis(t *testing.T) {
	_, iocacheTarget := startServer(t, nil)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := strings.Split(closed.Addr().String(), ":")[1]
	closed.Close()
	type step struct {
		target bool // sent to the target instead of the source
		args   []string
	}
	src := func(args ...string) step { return step{args: args} }
	dst := func(args ...string) step { return step{target: true, args: args} }
	steps := []step{
		src("MIGRATE", "{host}", "{port}", "nosuch", "0", "1000"),
		src("SET", "a", "1"), src("MIGRATE", "{host}", "{port}", "a", "0", "1000"), src("EXISTS", "a"), dst("GET", "a"),
		src("SET", "a", "2"), src("MIGRATE", "{host}", "{port}", "a", "0", "1000"), src("EXISTS", "a"),
		src("MIGRATE", "{host}", "{port}", "a", "0", "1000", "REPLACE"), src("EXISTS", "a"), dst("GET", "a"),
		src("SET", "b", "x", "EX", "100"), src("MIGRATE", "{host}", "{port}", "b", "0", "1000", "COPY"), src("EXISTS", "b"),
		dst("EXPIRETIME", "b"), dst("TTL", "b"),
		src("RPUSH", "l", "x", "y", "z"), src("HSET", "h", "f", "v"), src("ZADD", "z", "1", "m"),
		src("MIGRATE", "{host}", "{port}", "", "0", "1000", "KEYS", "l", "h", "nosuch", "z"),
		dst("LRANGE", "l", "0", "-1"), dst("HGETALL", "h"), dst("ZRANGE", "z", "0", "-1", "WITHSCORES"), src("EXISTS", "l", "h", "z"),
		src("MIGRATE", "{host}", "{port}", "", "0", "1000", "KEYS", "nosuch"),
		src("SET", "c", "1"), src("MIGRATE", "{host}", "{port}", "c", "3", "1000"), dst("SELECT", "3"), dst("GET", "c"), dst("SELECT", "0"),
		src("SET", "d", "1"),
		src("MIGRATE", "{host}", "{port}", "d", "99", "1000"), src("EXISTS", "d"),
		src("MIGRATE", "{host}", "{port}", "d", "0", "1000", "AUTH", "wrong"), src("EXISTS", "d"),
		src("MIGRATE", "{host}", "{port}", "d", "0", "1000", "AUTH2", "u", "wrong"),
		src("MIGRATE", "{host}", "{port}", "d", "0", "1000", "FOO"), src("MIGRATE", "{host}", "{port}", "d", "0", "1000", "AUTH"),
		src("MIGRATE", "{host}", "{port}", "d", "0", "1000", "KEYS", "d"), src("MIGRATE", "{host}", "{port}", "d", "x", "1000"),
		src("MIGRATE", "{host}", "{port}", "d", "0", "x"), src("MIGRATE", "{host}", "{port}", "d"),
		src("MIGRATE", "127.0.0.1", closedPort, "d", "0", "1000"), src("EXISTS", "d"),
	}
	run := func(srcAddr, dstAddr string) []string {
		s, d := dialPeer(t, srcAddr), dialPeer(t, dstAddr)
		host, port, _ := net.SplitHostPort(dstAddr)
		var out []string
		for _, st := range steps {
			args := make([]string, len(st.args))
			for i, a := range st.args {
				args[i] = strings.NewReplacer("{host}", host, "{port}", port).Replace(a)
			}
			p := s
			if st.target {
				p = d
			}
			out = append(out, p.do(args...))
		}
		return out
	}
	want := run(startRedisPeer(t), startRedisPeer(t))
	for name, target := range map[string]string{"redis-server": startRedisPeer(t), "iocache": iocacheTarget} {
		_, fresh := startServer(t, nil)
		got := run(fresh, target)
		for i := range want {
			w, g := want[i], got[i]
			if steps[i].args[0] == "TTL" || steps[i].args[0] == "EXPIRETIME" { // seconds may tick between the runs
				w, g = w[:1], g[:1]
			}
			if w != g {
				t.Errorf("to %s, %v:\n redis:   %q\n iocache: %q", name, steps[i].args, w, g)
			}
		}
	}
}

// A key MIGRATE moved away is deleted on the primary's replicas too (as DEL), and one it copied
// stays.
func TestMigrateReplicatesDeletions(t *testing.T) {
	_, primaryAddr := startServer(t, nil)
	host, port, _ := net.SplitHostPort(primaryAddr)
	_, replicaAddr := startServer(t, func(c *config.Config) { c.ReplicaOf = host + " " + port })
	primary, replica := dialPeer(t, primaryAddr), dialPeer(t, replicaAddr)
	waitFor(t, "the replica's link", func() bool {
		return strings.Contains(replica.do("INFO", "replication"), "master_link_status:up")
	})
	targetHost, targetPort, _ := net.SplitHostPort(startRedisPeer(t))
	primary.do("MSET", "moved", "1", "copied", "2")
	if got := primary.do("MIGRATE", targetHost, targetPort, "", "0", "1000", "KEYS", "moved"); got != "+OK\r\n" {
		t.Fatalf("MIGRATE: %q", got)
	}
	if got := primary.do("MIGRATE", targetHost, targetPort, "copied", "0", "1000", "COPY"); got != "+OK\r\n" {
		t.Fatalf("MIGRATE COPY: %q", got)
	}
	primary.do("WAIT", "1", "2000")
	if got := replica.do("EXISTS", "moved", "copied"); got != ":1\r\n" {
		t.Errorf("the replica has %q of moved and copied, want only copied", got)
	}
}
