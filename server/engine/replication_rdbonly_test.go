package engine

import (
	"crypto/rand"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/rdb"
	"github.com/iocache/iocache/server/replication"
)

// rdbOnlySnapshot takes a snapshot as redis-cli --rdb and iocache-server backup do (REPLCONF
// rdb-only 1, then PSYNC ? -1) and returns the +FULLRESYNC line and the payload's key count;
func rdbOnlySnapshot(t *testing.T, addr string, eof bool) (fullresync string, keys int64) {
	t.Helper()
	raw := dialRaw(t, addr)
	if eof {
		raw.send("REPLCONF capa eof\r\n")
		if l := raw.line(); l != "+OK" {
			t.Fatalf("REPLCONF capa eof: %q", l)
		}
	}
	raw.send("REPLCONF rdb-only 1\r\n")
	if l := raw.line(); l != "+OK" {
		t.Fatalf("REPLCONF rdb-only 1: %q", l)
	}
	raw.send("PSYNC ? -1\r\n")
	fullresync = raw.line()
	payload, err := replication.OpenPayload(raw.br)
	if err != nil {
		t.Fatalf("after %q: %v", fullresync, err)
	}
	st, err := rdb.Load(payload, rdb.Handler{Entry: func(*rdb.Entry) error { return nil }})
	if err != nil {
		t.Fatalf("payload: %v", err)
	}
	raw.c.Close()
	return fullresync, st.Keys
}

// A replica serves rdb-only snapshots (a backup taken there costs the primary nothing), in both
// payload forms, at the primary's replication ID and the offset it has applied; the link holds
// no stream, and the replica keeps its offset equal to the primary's
// (it does not PING into its own stream for a link that is not a replica). A replica still
// refuses a replica of its own, and a primary serves rdb-only snapshots as well.
func TestRDBOnlySnapshots(t *testing.T) {
	_, primaryAddr := startServer(t, func(c *config.Config) { c.IOThreads = 2 })
	primary := redisClient(t, primaryAddr, 2)
	fillEveryType(t, primary, "k:")
	// More than the snapshot sink queues (4 MB): the payload must flow while it is cut.
	fillIncompressible(t, primary, 12<<20)
	host, port, _ := net.SplitHostPort(primaryAddr)
	_, addr := startServer(t, func(c *config.Config) {
		c.ReplicaOf = host + " " + port
		c.IOThreads = 2
		c.ReplPingReplicaPeriod = 1
	})
	replica := redisClient(t, addr, 2)
	waitFor(t, "the replica's link", func() bool {
		return strings.Contains(replica.Info(ctx(), "replication").Val(), "master_link_status:up")
	})
	primary.Set(ctx(), "after", "1", 0)
	if n, err := primary.Do(ctx(), "wait", 1, 2000).Int64(); err != nil || n != 1 {
		t.Fatalf("WAIT: %d %v", n, err)
	}
	replid := regexpFind(`master_replid:(\w+)`, primary.Info(ctx(), "replication").Val())
	want := keysInAllDBs(t, primaryAddr)
	for _, eof := range []bool{true, false} {
		line, keys := rdbOnlySnapshot(t, addr, eof)
		offset := regexpFind(`master_repl_offset:(\d+)`, replica.Info(ctx(), "replication").Val())
		if line != "+FULLRESYNC "+replid+" "+offset {
			t.Fatalf("eof=%v: %q, want the primary's ID %s at the replica's offset %s", eof, line, replid, offset)
		}
		if keys != want {
			t.Fatalf("eof=%v: %d keys in the snapshot, %d on the primary", eof, keys, want)
		}
	}
	// Past a ping period the replica is still at the primary's offset, and has no replicas.
	primary.Set(ctx(), "later", "1", 0)
	waitFor(t, "equal offsets after the snapshots", func() bool {
		p := regexpFind(`master_repl_offset:(\d+)`, primary.Info(ctx(), "replication").Val())
		r := regexpFind(`master_repl_offset:(\d+)`, replica.Info(ctx(), "replication").Val())
		return p == r && p != ""
	})
	if info := replica.Info(ctx(), "replication").Val(); !strings.Contains(info, "connected_slaves:0") {
		t.Fatalf("the replica lists a replica after the snapshots:\n%s", info)
	}
	// A replica in the stream is still refused on a replica.
	raw := dialRaw(t, addr)
	raw.send("PSYNC ? -1\r\n")
	if l := raw.line(); l != "-NOMASTERLINK Can't SYNC while not connected with my master" {
		t.Fatalf("PSYNC on a replica: %q", l)
	}
	// The primary serves them too, and creates no backlog for them.
	_, solo := startServer(t, nil)
	fillEveryType(t, redisClient(t, solo, 2), "s:")
	fillIncompressible(t, redisClient(t, solo, 2), 12<<20)
	if _, keys := rdbOnlySnapshot(t, solo, true); keys != keysInAllDBs(t, solo) {
		t.Fatalf("primary snapshot: %d keys", keys)
	}
	if info := redisClient(t, solo, 2).Info(ctx(), "replication").Val(); !strings.Contains(info, "repl_backlog_active:0") {
		t.Fatalf("an rdb-only snapshot created a backlog:\n%s", info)
	}
}

// REPLCONF rdb-only takes 0 or 1, with Redis's errors.
func TestReplconfRDBOnlyMatchesRedis(t *testing.T) {
	_, addr := startServer(t, nil)
	peer := startRedisPeer(t)
	for _, v := range []string{"0", "1", "2", "-1", "x"} {
		ours := redisClient(t, addr, 2).Do(ctx(), "replconf", "rdb-only", v).Err()
		theirs := redisClient(t, peer, 2).Do(ctx(), "replconf", "rdb-only", v).Err()
		if strconv.Quote(errText(ours)) != strconv.Quote(errText(theirs)) {
			t.Errorf("REPLCONF rdb-only %s: %v, redis-server: %v", v, ours, theirs)
		}
	}
}

// fillIncompressible writes about n bytes of random values, which no RDB compression shrinks.
func fillIncompressible(t *testing.T, c *redis.Client, n int) {
	t.Helper()
	val := make([]byte, 256<<10)
	for i := 0; i*len(val) < n; i++ {
		_, _ = rand.Read(val)
		if err := c.Set(ctx(), "blob:"+strconv.Itoa(i), val, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// keysInAllDBs sums INFO keyspace's keys= counts.
func keysInAllDBs(t *testing.T, addr string) int64 {
	t.Helper()
	var n int64
	for _, m := range regexp.MustCompile(`keys=(\d+)`).FindAllStringSubmatch(redisClient(t, addr, 2).Info(ctx(), "keyspace").Val(), -1) {
		k, _ := strconv.ParseInt(m[1], 10, 64)
		n += k
	}
	return n
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
