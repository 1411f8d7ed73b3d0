package engine

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/rdb"
)

// Debian's redis-server as a replica of iocache: it must end up with the same data set, follow
// later writes of every kind, and acknowledge them for WAIT.

// fillEveryType writes one key of each type (some with TTLs) into db 0 and db 3.
func fillEveryType(t *testing.T, c *redis.Client, prefix string) {
	t.Helper()
	ctx := ctx()
	for _, db := range []int{0, 3} {
		p := c.Pipeline()
		p.Do(ctx, "select", db)
		p.Set(ctx, prefix+"str", "value", 0)
		p.Set(ctx, prefix+"int", 12345, 0)
		p.Set(ctx, prefix+"ttl", "v", time.Hour)
		p.RPush(ctx, prefix+"list", "a", "b", "c", strings.Repeat("x", 100))
		p.SAdd(ctx, prefix+"intset", 1, 2, 3)
		p.SAdd(ctx, prefix+"set", "a", "b", "c")
		p.HSet(ctx, prefix+"hash", "f1", "v1", "f2", "v2")
		p.ZAdd(ctx, prefix+"zset", redis.Z{Score: 1.5, Member: "a"}, redis.Z{Score: 2, Member: "b"})
		p.XAdd(ctx, &redis.XAddArgs{Stream: prefix + "stream", Values: []any{"f", "v"}})
		p.Do(ctx, "pfadd", prefix+"hll", "a", "b", "c")
		p.Expire(ctx, prefix+"hash", time.Hour)
		p.Do(ctx, "select", 0)
		if _, err := p.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// keyspaceDump reads every key of every database in a type-aware form, with its absolute expiry.
func keyspaceDump(t *testing.T, addr string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for db := 0; db < 16; db++ {
		c := redis.NewClient(&redis.Options{Addr: addr, DB: db, Protocol: 2, DisableIdentity: true})
		keys, err := c.Keys(ctx(), "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			typ := c.Type(ctx(), k).Val()
			var v any
			switch typ {
			case "string":
				v = c.Get(ctx(), k).Val()
			case "list":
				v = c.LRange(ctx(), k, 0, -1).Val()
			case "set":
				m := c.SMembers(ctx(), k).Val()
				slices.Sort(m)
				v = m
			case "hash":
				v = c.HGetAll(ctx(), k).Val()
			case "zset":
				v = c.ZRangeWithScores(ctx(), k, 0, -1).Val()
			case "stream":
				v = c.XRange(ctx(), k, "-", "+").Val()
			}
			exp := c.Do(ctx(), "pexpiretime", k).Val()
			out[fmt.Sprintf("%d/%s", db, k)] = fmt.Sprintf("%s %v exp=%v", typ, v, exp)
		}
		c.Close()
	}
	return out
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 200; i++ {
		if cond() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

func TestRedisReplicaOfIocache(t *testing.T) {
	for _, threads := range []int{1, 2} {
		t.Run(fmt.Sprintf("io-threads=%d", threads), func(t *testing.T) { testRedisReplicaOfIocache(t, threads) })
	}
}

func testRedisReplicaOfIocache(t *testing.T, ioThreads int) {
	_, addr := startServer(t, func(c *config.Config) { c.IOThreads = ioThreads })
	primary := redisClient(t, addr, 2)
	fillEveryType(t, primary, "before:")
	host, port, _ := net.SplitHostPort(addr)
	replicaAddr := startRedisPeer(t, "--replicaof", host, port)
	replica := redisClient(t, replicaAddr, 2)
	defer func() {
		if t.Failed() {
			t.Logf("primary:\n%s\nreplica:\n%s", primary.Info(ctx(), "replication").Val(), replica.Info(ctx(), "replication").Val())
		}
	}()
	waitFor(t, "the replica's link", func() bool {
		return strings.Contains(replica.Info(ctx(), "replication").Val(), "master_link_status:up")
	})

	// Later writes of every kind, blocking pops served by a later push included.
	fillEveryType(t, primary, "after:")
	blocked := make(chan string, 1)
	go func() {
		c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true})
		defer c.Close()
		v, _ := c.BLPop(ctx(), 5*time.Second, "bl").Result()
		blocked <- strings.Join(v, ",")
	}()
	waitFor(t, "the blocked client", func() bool {
		return strings.Contains(primary.Info(ctx(), "clients").Val(), "blocked_clients:1")
	})
	for _, cmd := range [][]any{
		{"rpush", "bl", "x", "y"},
		{"expire", "before:str", 100},
		{"set", "f", "1.5"}, {"incrbyfloat", "f", "0.25"},
		{"getex", "before:int", "px", 100000},
		{"spop", "before:set"},
		{"srem", "before:intset", 2},
		{"xadd", "before:stream", "*", "g", "w"},
		// iocache trims exactly where Redis trims by whole nodes: the replica must be told the
		// exact trim, or it keeps entries the primary dropped.
		{"xadd", "before:stream", "MAXLEN", "~", "2", "*", "h", "x"},
		{"xadd", "after:stream", "*", "a", "1"}, {"xadd", "after:stream", "*", "b", "2"},
		{"xtrim", "after:stream", "MAXLEN", "~", "1", "LIMIT", "10"},
		{"zincrby", "before:zset", 3, "a"},
		{"hincrbyfloat", "before:hash", "f3", "1.5"},
		{"lmove", "before:list", "moved", "left", "right"},
		{"eval", "redis.call('incr','ev'); redis.call('sadd','evs', 'x'); return 1", 0},
		{"set", "short", "v", "px", 1},
		{"del", "after:hll"},
	} {
		if err := primary.Do(ctx(), cmd...).Err(); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	tx := primary.TxPipeline()
	tx.Incr(ctx(), "tx")
	tx.LPush(ctx(), "txl", "a")
	if _, err := tx.Exec(ctx()); err != nil {
		t.Fatal(err)
	}
	if got := <-blocked; got != "bl,x" {
		t.Fatalf("BLPOP: %q", got)
	}
	time.Sleep(50 * time.Millisecond) // "short" expires and propagates as DEL
	primary.Get(ctx(), "short")
	if n, err := primary.Do(ctx(), "wait", 1, 1000).Int64(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 1000: %d %v", n, err)
	}
	// One good replica: min-replicas-to-write 1 lets writes through, 2 does not.
	primary.ConfigSet(ctx(), "min-replicas-to-write", "1")
	if err := primary.Set(ctx(), "gated", "1", 0).Err(); err != nil {
		t.Fatalf("a write with one good replica: %v", err)
	}
	primary.ConfigSet(ctx(), "min-replicas-to-write", "2")
	if err := primary.Set(ctx(), "gated", "2", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOREPLICAS") {
		t.Fatalf("a write with too few good replicas: %v", err)
	}
	primary.ConfigSet(ctx(), "min-replicas-to-write", "0")
	if n, err := primary.Do(ctx(), "wait", 1, 1000).Int64(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 1000: %d %v", n, err)
	}
	want, got := keyspaceDump(t, addr), keyspaceDump(t, replicaAddr)
	if len(want) < 30 {
		t.Fatalf("only %d keys on the primary", len(want))
	}
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

	// ROLE and INFO replication on both sides.
	role := primary.Do(ctx(), "role").Val().([]any)
	if role[0] != "master" || len(role[2].([]any)) != 1 {
		t.Fatalf("ROLE on the primary: %v", role)
	}
	info := primary.Info(ctx(), "replication").Val()
	for _, field := range []string{"role:master", "connected_slaves:1", "slave0:ip=127.0.0.1,port=" + strings.Split(replicaAddr, ":")[1] + ",state=online", "repl_backlog_active:1", "repl_backlog_size:1048576", "repl_backlog_first_byte_offset:1"} {
		if !strings.Contains(info, field) {
			t.Errorf("INFO replication lacks %q:\n%s", field, info)
		}
	}
	offset := regexpFind(`master_repl_offset:(\d+)`, info)
	t.Logf("%d keys alike; stream offset %s", len(want), offset)
	if rinfo := replica.Info(ctx(), "replication").Val(); regexpFind(`master_repl_offset:(\d+)`, rinfo) != offset || regexpFind(`master_replid:(\w+)`, rinfo) != regexpFind(`master_replid:(\w+)`, info) {
		t.Errorf("replica's replication state differs from the primary's:\n%s\n%s", info, rinfo)
	}
}

// A replica killed on the primary's side reconnects with PSYNC and continues from the backlog.
func TestRedisReplicaPartialResync(t *testing.T) {
	_, addr := startServer(t, nil)
	primary := redisClient(t, addr, 2)
	fillEveryType(t, primary, "before:")
	host, port, _ := net.SplitHostPort(addr)
	replicaAddr := startRedisPeer(t, "--replicaof", host, port)
	replica := redisClient(t, replicaAddr, 2)
	waitFor(t, "the replica's link", func() bool {
		return strings.Contains(replica.Info(ctx(), "replication").Val(), "master_link_status:up")
	})
	if n, err := primary.Do(ctx(), "client", "kill", "type", "replica").Int64(); err != nil || n != 1 {
		t.Fatalf("CLIENT KILL TYPE replica: %d %v", n, err)
	}
	fillEveryType(t, primary, "during:")
	waitFor(t, "the partial resync", func() bool {
		return strings.Contains(primary.Info(ctx(), "stats").Val(), "sync_partial_ok:1")
	})
	fillEveryType(t, primary, "after:")
	if n, err := primary.Do(ctx(), "wait", 1, 2000).Int64(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 2000: %d %v", n, err)
	}
	stats := primary.Info(ctx(), "stats").Val()
	if !strings.Contains(stats, "sync_full:1\r") {
		t.Errorf("a second full sync:\n%s", stats)
	}
	want, got := keyspaceDump(t, addr), keyspaceDump(t, replicaAddr)
	if !maps.Equal(want, got) || len(want) < 60 {
		t.Fatalf("keyspaces differ (%d keys on the primary, %d on the replica)", len(want), len(got))
	}
}

// A replica without "capa eof" gets the "$<len>" payload; SYNC gets no +FULLRESYNC line. Both
// carry the whole keyspace as a valid RDB, and a PSYNC for an offset the backlog holds
// continues from there.
func TestFullSyncPayloadForms(t *testing.T) {
	_, addr := startServer(t, nil)
	primary := redisClient(t, addr, 2)
	fillEveryType(t, primary, "k:")
	keys := func(payload []byte) int {
		n := 0
		if _, err := rdb.Load(bytes.NewReader(payload), rdb.Handler{Entry: func(*rdb.Entry) error { n++; return nil }}); err != nil {
			t.Fatalf("payload: %v", err)
		}
		return n
	}
	sized := attachStreamReplica(t, addr, false)
	eof := attachStreamReplica(t, addr, true)
	if a, b := keys(sized.payload), keys(eof.payload); a != 20 || b != 20 {
		t.Fatalf("payload keys: $len form %d, EOF form %d", a, b)
	}
	raw := dialRaw(t, addr)
	raw.send("SYNC\r\n")
	if line := raw.line(); !strings.HasPrefix(line, "$") || strings.HasPrefix(line, "$EOF") {
		t.Fatalf("SYNC: %q", line)
	}

	// The stream reaches both; then one drops and continues with PSYNC.
	primary.Set(ctx(), "x", "1", 0)
	eof.drain(100 * time.Millisecond)
	if got := sized.drain(100 * time.Millisecond); len(got) != 2 || got[1][0] != "set" {
		t.Fatalf("stream: %q", got)
	}
	sized.c.Close()
	primary.Set(ctx(), "y", "2", 0)
	primary.Del(ctx(), "x")
	again := &streamReplica{t: t, br: nil}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	again.c, again.br, again.offset = c, bufio.NewReader(c), sized.offset
	again.send("PSYNC", sized.replid, strconv.FormatInt(sized.offset+1, 10))
	if line := again.line(); line != "+CONTINUE "+sized.replid {
		t.Fatalf("PSYNC: %q", line)
	}
	if got := again.drain(100 * time.Millisecond); fmt.Sprint(got) != "[[set y 2] [del x]]" {
		t.Fatalf("continued stream: %q", got)
	}
	if want := regexpFind(`master_repl_offset:(\d+)`, primary.Info(ctx(), "replication").Val()); strconv.FormatInt(again.offset, 10) != want {
		t.Fatalf("the continued replica is at offset %d, the primary at %s", again.offset, want)
	}
	// An offset the backlog no longer holds, or another ID, gets a full sync.
	other := dialRaw(t, addr)
	other.send("PSYNC " + sized.replid + " 1000000\r\n")
	if line := other.line(); !strings.HasPrefix(line, "+FULLRESYNC ") {
		t.Fatalf("PSYNC past the backlog: %q", line)
	}
}

// min-replicas-to-write refuses writes as Redis does while too few replicas acknowledge.
func TestMinReplicasToWriteMatchesRedis(t *testing.T) {
	_, addr := startServer(t, nil)
	differential(t, addr, split("CONFIG SET min-replicas-to-write 1", "CONFIG GET min-replicas-max-lag",
		"SET k v", "GET k", "MULTI", "SET k v", "EXEC", "CONFIG SET min-replicas-to-write 0", "SET k v", "WAIT 0 0",
		"REPLCONF listening-port x", "REPLCONF foo bar", "REPLCONF capa eof", "REPLCONF", "ROLE",
		"REPLICAOF 127.0.0.1 notaport", "REPLICAOF 127.0.0.1 99999", "REPLICAOF no one", "SLAVEOF NO ONE", "PSYNC", "REPLICAOF a"))
}

// The primary pings its replicas every repl-ping-replica-period seconds, drops one that has not
// acknowledged for repl-timeout seconds, and keeps repl-backlog-size bytes of stream.
func TestPrimaryPingsAndTimesOutReplicas(t *testing.T) {
	_, addr := startServer(t, func(c *config.Config) {
		c.ReplPingReplicaPeriod, c.ReplTimeout, c.ReplBacklogSize = 1, 2, 16<<10
	})
	r := attachStreamReplica(t, addr, true)
	r.ack()
	pings := 0
	deadline := time.Now().Add(2500 * time.Millisecond)
	for time.Now().Before(deadline) && pings < 2 {
		if cmd := r.next(200 * time.Millisecond); len(cmd) == 1 && cmd[0] == "PING" {
			pings++
		}
	}
	if pings < 2 {
		t.Fatalf("%d PINGs in 2.5s with repl-ping-replica-period 1", pings)
	}
	primary := redisClient(t, addr, 2)
	primary.Set(ctx(), "big", strings.Repeat("x", 40<<10), 0)
	info := primary.Info(ctx(), "replication").Val()
	if !strings.Contains(info, "repl_backlog_size:16384\r") || !strings.Contains(info, "repl_backlog_histlen:16384\r") {
		t.Fatalf("backlog:\n%s", info)
	}
	// No acknowledgement from here on: the replica is dropped after repl-timeout.
	_ = r.c.SetReadDeadline(time.Now().Add(6 * time.Second))
	if _, err := io.Copy(io.Discard, r.br); err != nil {
		t.Fatalf("the silent replica was not dropped: %v", err)
	}
	if info := primary.Info(ctx(), "replication").Val(); !strings.Contains(info, "connected_slaves:0") {
		t.Fatalf("after the timeout:\n%s", info)
	}
}

// The first PING comes a period after the first replica attaches, not at once: Redis's tests
// read the stream of a SYNC made after setting the period to an hour and expect SELECT first.
func TestNoPingRightAfterAttach(t *testing.T) {
	_, addr := startServer(t, func(c *config.Config) { c.ReplPingReplicaPeriod = 3600 })
	for round := 0; round < 2; round++ { // and again once the first replica has gone
		r := attachStreamReplica(t, addr, false)
		redisClient(t, addr, 2).Set(ctx(), "k", "v", 0)
		if cmd := r.next(2 * time.Second); len(cmd) == 0 || !strings.EqualFold(cmd[0], "SELECT") {
			t.Fatalf("round %d: the stream starts with %q, want SELECT", round, cmd)
		}
		r.c.Close()
		time.Sleep(100 * time.Millisecond)
	}
}
