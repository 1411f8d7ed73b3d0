package engine

import (
	"fmt"
	"maps"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/testpeer"
)

// iocache as a replica of Debian's redis-server: the full sync in both payload forms, the
// stream of later writes, WAIT on the primary counting iocache's acknowledgements, a dropped
// link continued with a partial resync, read-only refusals, ROLE and INFO on both sides, and
// REPLICAOF NO ONE.
func TestIocacheReplicaOfRedis(t *testing.T) {
	for _, diskless := range []string{"yes", "no"} {
		t.Run("repl-diskless-sync="+diskless, func(t *testing.T) { testIocacheReplicaOfRedis(t, diskless) })
	}
}

func testIocacheReplicaOfRedis(t *testing.T, diskless string) {
	primaryAddr := startRedisPeer(t, "--repl-diskless-sync", diskless, "--repl-diskless-sync-delay", "0")
	primary := redisClient(t, primaryAddr, 2)
	fillEveryType(t, primary, "before:")
	host, port, _ := net.SplitHostPort(primaryAddr)
	var addr string
	if diskless == "yes" {
		_, addr = startServer(t, func(c *config.Config) { c.IOThreads = 2 })
		if err := redisClient(t, addr, 2).Do(ctx(), "replicaof", host, port).Err(); err != nil {
			t.Fatal(err)
		}
	} else {
		_, addr = startServer(t, func(c *config.Config) { c.ReplicaOf = host + " " + port })
	}
	replica := redisClient(t, addr, 2)
	defer func() {
		if t.Failed() {
			t.Logf("primary:\n%s\nreplica:\n%s", primary.Info(ctx(), "replication").Val(), replica.Info(ctx(), "replication").Val())
		}
	}()
	linkUp := func() bool {
		return strings.Contains(replica.Info(ctx(), "replication").Val(), "master_link_status:up")
	}
	waitFor(t, "the replica's link", linkUp)

	db5 := redis.NewClient(&redis.Options{Addr: primaryAddr, DB: 5, PoolSize: 1, Protocol: 2, DisableIdentity: true})
	defer db5.Close()
	writeMore := func(prefix string) {
		fillEveryType(t, primary, prefix)
		blocked := make(chan error, 1)
		go func() {
			c := redis.NewClient(&redis.Options{Addr: primaryAddr, Protocol: 2, DisableIdentity: true})
			defer c.Close()
			blocked <- c.BLPop(ctx(), 5*time.Second, prefix+"bl").Err()
		}()
		waitFor(t, "the blocked client", func() bool {
			return strings.Contains(primary.Info(ctx(), "clients").Val(), "blocked_clients:1")
		})
		for _, cmd := range [][]any{
			{"rpush", prefix + "bl", "x", "y"},
			{"expire", prefix + "str", 100},
			{"incrbyfloat", prefix + "f", "0.25"},
			{"spop", prefix + "set"},
			{"xadd", prefix + "stream", "*", "g", "w"},
			{"eval", "redis.call('incr',KEYS[1]); redis.call('sadd',KEYS[2], 'x'); return 1", 2, prefix + "ev", prefix + "evs"},
			{"set", prefix + "short", "v", "px", 1},
		} {
			if err := primary.Do(ctx(), cmd...).Err(); err != nil {
				t.Fatalf("%v: %v", cmd, err)
			}
		}
		tx := primary.TxPipeline()
		tx.Incr(ctx(), prefix+"tx")
		tx.LPush(ctx(), prefix+"txl", "a")
		if _, err := tx.Exec(ctx()); err != nil {
			t.Fatal(err)
		}
		if err := <-blocked; err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
		primary.Get(ctx(), prefix+"short") // expired: the primary propagates its DEL
		// The stream ends in database 5.
		if err := db5.Set(ctx(), prefix+"db5", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	same := func() {
		t.Helper()
		if n, err := primary.Do(ctx(), "wait", 1, 2000).Int64(); err != nil || n != 1 {
			t.Fatalf("WAIT 1 2000 on the primary: %d %v", n, err)
		}
		want, got := keyspaceDump(t, primaryAddr), keyspaceDump(t, addr)
		if !maps.Equal(want, got) {
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s:\n primary: %s\n replica: %s", k, v, got[k])
				}
			}
			for k := range got {
				if _, ok := want[k]; !ok {
					t.Errorf("%s only on the replica: %s", k, got[k])
				}
			}
			t.FailNow()
		}
	}
	writeMore("after:")
	same()

	// Writes from clients are refused; reads work.
	if err := replica.Set(ctx(), "x", "1", 0).Err(); err == nil || err.Error() != "READONLY You can't write against a read only replica." {
		t.Fatalf("SET on the replica: %v", err)
	}
	if role := replica.Do(ctx(), "role").Val().([]any); fmt.Sprint(role[:4]) != fmt.Sprintf("[slave %s %s connected]", host, port) {
		t.Fatalf("ROLE on the replica: %v", role)
	}
	info := replica.Info(ctx(), "replication").Val()
	if regexpFind(`master_repl_offset:(\d+)`, info) != regexpFind(`master_repl_offset:(\d+)`, primary.Info(ctx(), "replication").Val()) {
		t.Errorf("offsets differ")
	}

	// A dropped link continues with a partial resync.
	if n := primary.Do(ctx(), "client", "kill", "type", "replica").Val(); n != int64(1) {
		t.Fatalf("CLIENT KILL on the primary: %v", n)
	}
	// The continued stream has no SELECT before this: the replica keeps the database its
	// primary's stream was in, as Redis's cached master does.
	if err := db5.Set(ctx(), "during:first", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	writeMore("during:")
	waitFor(t, "the partial resync", func() bool {
		return strings.Contains(primary.Info(ctx(), "stats").Val(), "sync_partial_ok:1") && linkUp()
	})
	writeMore("later:")
	same()

	// REPLICAOF NO ONE: a primary again, with the data, writable.
	if err := replica.Do(ctx(), "replicaof", "no", "one").Err(); err != nil {
		t.Fatal(err)
	}
	if err := replica.Set(ctx(), "x", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if role := replica.Do(ctx(), "role").Val().([]any); role[0] != "master" {
		t.Fatalf("ROLE after REPLICAOF NO ONE: %v", role)
	}
}

// iocache replicating iocache: both sides of this package meet, with a link dropped from the
// replica's side (CLIENT KILL TYPE master) and continued from the primary's backlog.
func TestIocacheReplicaOfIocache(t *testing.T) {
	ps, primaryAddr := startServer(t, func(c *config.Config) { c.IOThreads = 2; c.MetricsPort = testpeer.FreePort(t) })
	primary := redisClient(t, primaryAddr, 2)
	fillEveryType(t, primary, "before:")
	host, port, _ := net.SplitHostPort(primaryAddr)
	rs, addr := startServer(t, func(c *config.Config) {
		c.ReplicaOf = host + " " + port
		c.IOThreads = 2
		c.MetricsPort = testpeer.FreePort(t)
	})
	replica := redisClient(t, addr, 2)
	linkUp := func() bool {
		return strings.Contains(replica.Info(ctx(), "replication").Val(), "master_link_status:up")
	}
	waitFor(t, "the replica's link", linkUp)
	same := func() {
		t.Helper()
		if n, err := primary.Do(ctx(), "wait", 1, 2000).Int64(); err != nil || n != 1 {
			t.Fatalf("WAIT 1 2000 on the primary: %d %v", n, err)
		}
		if want, got := keyspaceDump(t, primaryAddr), keyspaceDump(t, addr); !maps.Equal(want, got) {
			t.Fatalf("keyspaces differ:\n%v\n%v", want, got)
		}
	}
	fillEveryType(t, primary, "after:")
	primary.Do(ctx(), "spop", "after:set")
	primary.Do(ctx(), "incrbyfloat", "after:int", "1.5")
	same()
	if n := replica.Do(ctx(), "client", "kill", "type", "master").Val(); n != int64(1) {
		t.Fatalf("CLIENT KILL TYPE master: %v", n)
	}
	fillEveryType(t, primary, "during:")
	waitFor(t, "the partial resync", func() bool {
		return strings.Contains(primary.Info(ctx(), "stats").Val(), "sync_partial_ok:1") && linkUp()
	})
	same()
	if !strings.Contains(primary.Info(ctx(), "stats").Val(), "sync_full:1\r") {
		t.Fatal("a second full sync")
	}

	// Replication metrics under redis_exporter's names, on both sides.
	offset := float64(0)
	fmt.Sscan(regexpFind(`master_repl_offset:(\d+)`, primary.Info(ctx(), "replication").Val()), &offset)
	pm, rm := scrape(t, ps.MetricsAddr()), scrape(t, rs.MetricsAddr())
	for _, c := range []struct {
		body   []byte
		name   string
		labels map[string]string
		want   float64
	}{
		{pm, "redis_connected_slaves", nil, 1},
		{pm, "redis_master_repl_offset", nil, offset},
		{pm, "redis_repl_backlog_is_active", nil, 1},
		{pm, "redis_replica_partial_resync_accepted", nil, 1},
		{pm, "redis_connected_slave_offset_bytes", map[string]string{"slave_state": "online"}, offset},
		{rm, "redis_master_link_up", map[string]string{"master_host": host, "master_port": port}, 1},
		{rm, "redis_slave_repl_offset", nil, offset},
		{rm, "redis_master_repl_offset", nil, offset},
	} {
		if got, ok := metricValue(t, c.body, c.name, c.labels); !ok || got != c.want {
			t.Errorf("%s%v = %v (found %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
}

// A switchover, as the operator will run it: an iocache replica is promoted (REPLICAOF NO ONE)
// and the other replicas — Debian's redis-server and another iocache — are repointed to it. They
// continue with partial resyncs from its backlog under the old primary's ID (PSYNC2), and
// follow its writes.
func TestSwitchoverContinuesReplicas(t *testing.T) {
	_, pAddr := startServer(t, nil)
	p := redisClient(t, pAddr, 2)
	fillEveryType(t, p, "before:")
	pHost, pPort, _ := net.SplitHostPort(pAddr)
	_, aAddr := startServer(t, func(c *config.Config) { c.ReplicaOf = pHost + " " + pPort })
	_, cAddr := startServer(t, func(c *config.Config) { c.ReplicaOf = pHost + " " + pPort })
	bAddr := startRedisPeer(t, "--replicaof", pHost, pPort)
	a, b, c := redisClient(t, aAddr, 2), redisClient(t, bAddr, 2), redisClient(t, cAddr, 2)
	up := func(r *redis.Client) func() bool {
		return func() bool { return strings.Contains(r.Info(ctx(), "replication").Val(), "master_link_status:up") }
	}
	for _, r := range []*redis.Client{a, b, c} {
		waitFor(t, "a replica's link", up(r))
	}
	fillEveryType(t, p, "after:")
	// The old primary's stream ends in database 3; the new one's goes on from there.
	p3 := redis.NewClient(&redis.Options{Addr: pAddr, DB: 3, DisableIdentity: true})
	defer p3.Close()
	if err := p3.Set(ctx(), "last", "db3", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := p.Do(ctx(), "wait", 3, 2000).Int64(); err != nil || n != 3 {
		t.Fatalf("WAIT 3 on the old primary: %d %v", n, err)
	}

	if err := a.Do(ctx(), "replicaof", "no", "one").Err(); err != nil {
		t.Fatal(err)
	}
	aHost, aPort, _ := net.SplitHostPort(aAddr)
	for _, r := range []*redis.Client{b, c} {
		if err := r.Do(ctx(), "replicaof", aHost, aPort).Err(); err != nil {
			t.Fatal(err)
		}
	}
	info := a.Info(ctx(), "replication").Val()
	if regexpFind(`master_replid2:(\w+)`, info) != regexpFind(`master_replid:(\w+)`, p.Info(ctx(), "replication").Val()) {
		t.Fatalf("the promoted replica does not keep the old ID:\n%s", info)
	}
	waitFor(t, "both partial resyncs", func() bool {
		return strings.Contains(a.Info(ctx(), "stats").Val(), "sync_partial_ok:2")
	})
	fillEveryType(t, a, "promoted:")
	if n, err := a.Do(ctx(), "wait", 2, 2000).Int64(); err != nil || n != 2 {
		t.Fatalf("WAIT 2 on the new primary: %d %v", n, err)
	}
	want := keyspaceDump(t, aAddr)
	for _, addr := range []string{bAddr, cAddr} {
		if got := keyspaceDump(t, addr); !maps.Equal(want, got) {
			t.Fatalf("%s differs from the new primary:\n%v\n%v", addr, want, got)
		}
	}
	if stats := a.Info(ctx(), "stats").Val(); !strings.Contains(stats, "sync_full:0\r") {
		t.Fatalf("a full sync after the switchover:\n%s", stats)
	}
}

// A replica whose primary is unreachable answers as redis-server does: READONLY for writes,
// MASTERDOWN under replica-serve-stale-data no for all but the stale-flagged commands, and its
// stale data otherwise.
func TestDetachedReplicaMatchesRedis(t *testing.T) {
	_, addr := startServer(t, nil)
	dead := strconv.Itoa(testpeer.FreePort(t))
	differential(t, addr, split("SET k v", "REPLICAOF 127.0.0.1 "+dead, "GET k", "SET k w", "PING",
		"CONFIG SET replica-serve-stale-data no", "GET k", "SET k w", "PING", "ECHO x", "DBSIZE",
		"CONFIG SET slave-serve-stale-data yes", "GET k", "CONFIG GET replica-priority",
		"REPLICAOF NO ONE", "SET k w", "GET k"))
}

// masterauth (and masteruser with it) authenticate the replica to a primary that requires it.
func TestReplicaAuthenticates(t *testing.T) {
	for _, tc := range []struct {
		name    string
		primary []string
		user    string
	}{
		// Redis's default repl-diskless-sync-delay of 5 s: newlines come before +FULLRESYNC.
		{"requirepass", []string{"--requirepass", "s3cret"}, ""},
		{"ACL user", []string{"--user", "repl", "on", ">s3cret", "+@all", "~*", "--user", "default", "off", "--repl-diskless-sync-delay", "0"}, "repl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			primaryAddr := startRedisPeer(t, tc.primary...)
			host, port, _ := net.SplitHostPort(primaryAddr)
			_, addr := startServer(t, func(c *config.Config) {
				c.ReplicaOf = host + " " + port
				c.MasterAuth, c.MasterUser = "s3cret", tc.user
				c.ReplicaPriority = 7
			})
			replica := redisClient(t, addr, 2)
			waitFor(t, "the authenticated link", func() bool {
				return strings.Contains(replica.Info(ctx(), "replication").Val(), "master_link_status:up")
			})
			if info := replica.Info(ctx(), "replication").Val(); !strings.Contains(info, "slave_priority:7\r") {
				t.Fatalf("replica-priority not reported:\n%s", info)
			}
		})
	}
}

// start-as-replica: the server comes up as a replica with no primary — writes refused, a replica
// that connects gets no sync (so a primary restarted empty cannot empty its replicas), reads
// served — until REPLICAOF NO ONE makes it a primary or REPLICAOF names one.
func TestStartAsReplicaWaitsForReplicaof(t *testing.T) {
	_, addr := startServer(t, func(c *config.Config) { c.StartAsReplica = true })
	s := redisClient(t, addr, 2)
	if role := s.Do(ctx(), "role").Val(); fmt.Sprint(role) != "[slave  0 none 0]" {
		t.Fatalf("ROLE of a server started as a replica: %v", role)
	}
	if err := s.Set(ctx(), "k", "v", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "READONLY ") {
		t.Fatalf("a write before REPLICAOF: %v", err)
	}
	if info := s.Info(ctx(), "replication").Val(); !strings.Contains(info, "role:slave\r") || !strings.Contains(info, "master_link_status:down\r") {
		t.Fatalf("INFO replication:\n%s", info)
	}

	// A replica pointed at it (as at a primary that restarted) keeps its own data.
	_, rAddr := startServer(t, nil)
	r := redisClient(t, rAddr, 2)
	if err := r.Set(ctx(), "kept", "yes", 0).Err(); err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(addr)
	if err := r.Do(ctx(), "replicaof", host, port).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // a handshake or two
	if v := r.Get(ctx(), "kept").Val(); v != "yes" {
		t.Fatalf("a replica of a server started as a replica lost its data: GET kept = %q", v)
	}

	// The operator's choice: this server becomes the primary, and the replica syncs from it.
	if err := s.Do(ctx(), "replicaof", "no", "one").Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Set(ctx(), "k", "v", 0).Err(); err != nil {
		t.Fatalf("a write after REPLICAOF NO ONE: %v", err)
	}
	waitFor(t, "the replica's link", func() bool {
		return strings.Contains(r.Info(ctx(), "replication").Val(), "master_link_status:up")
	})
	waitFor(t, "the write to reach the replica", func() bool { return r.Get(ctx(), "k").Val() == "v" })
}
