package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/iocache/iocache/server/config"
)

func split(cmds ...string) [][]string {
	out := make([][]string, len(cmds))
	for i, c := range cmds {
		out[i] = strings.Fields(c)
	}
	return out
}

// Every stream command's replies and errors match redis-server's byte for byte, RESP2 and RESP3.
func TestStreamsMatchRedis(t *testing.T) {
	_, addr := startServer(t, func(c *config.Config) { c.IOThreads = 2 })
	differential(t, addr, split(
		// XADD: explicit IDs, "<ms>-*", options and every error
		"XADD s 1-1 a 1", "XADD s 1-2 b 2 c 3", "XADD s 1-* c 3", "XADD s 2-* d 4", "XADD s 2-* e 5",
		"XADD s 1-1 x y", "XADD s 2-1 x y", "XADD s 1-* x y", "XADD s 0-0 a b", "XADD t 0-0 a b", "XADD t 0-* a b",
		"XADD s abc a b", "XADD s 1-x a b", "XADD s - a b", "XADD s + a b", "XADD s 5-1 a", "XADD s 5-1 a b c", "XADD s 5-1",
		"XADD s NOMKSTREAM 6-1 a b", "XADD nostream NOMKSTREAM 1-1 a b", "EXISTS nostream",
		"XADD s MAXLEN -1 7-1 a b", "XADD s MAXLEN x 7-1 a b", "XADD s MAXLEN 2 LIMIT 5 8-1 a b", "XADD s MAXLEN ~ 2 LIMIT -1 8-1 a b",
		"XADD s MAXLEN 2 MINID 1 9-1 a b", "XADD s MINID bad 9-1 a b",
		"XADD s 18446744073709551615-18446744073709551615 z z", "XADD s * z z",
		"XADD u 10-1 f v", "XADD u 11-1 f v", "XADD u 12-1 f v", "XADD u 13-1 f v", "XADD u MAXLEN = 2 14-1 f v",
		"XRANGE u - +", "XADD u MINID 14 15-1 f v", "XRANGE u - +", "XADD u MAXLEN 0 16-1 f v", "XLEN u", "EXISTS u", "TYPE u",
		// XLEN, XRANGE, XREVRANGE
		"XLEN s", "XLEN missing", "XRANGE s - +", "XRANGE s - + COUNT 2", "XRANGE s (1-1 +", "XRANGE s 1 1", "XRANGE s 1 (2-1",
		"XRANGE s 2 1", "XREVRANGE s + -", "XREVRANGE s + - COUNT 1", "XREVRANGE s (2-2 -", "XREVRANGE s 1 2",
		"XRANGE s - + COUNT 0", "XRANGE s - + COUNT -1", "XRANGE s - + COUNT x", "XRANGE s - + FOO", "XRANGE s - + COUNT",
		"XRANGE s (18446744073709551615-18446744073709551615 +", "XRANGE s - (0-0", "XRANGE s x +", "XRANGE s - y",
		"XRANGE missing - +", "XREVRANGE missing + -", "XRANGE missing - + COUNT 0",
		// XDEL and what it leaves
		"XDEL s 1-2 1-2 9-9", "XDEL s bad", "XDEL s -", "XDEL missing 1-1", "XRANGE s - +", "XLEN s",
		// XTRIM
		"XTRIM s MAXLEN 100", "XTRIM s MAXLEN 3", "XRANGE s - +", "XTRIM s MINID 2-1", "XRANGE s - +", "XTRIM s",
		"XTRIM s FOO 1", "XTRIM s MAXLEN 1 LIMIT 1", "XTRIM s MAXLEN", "XTRIM s MAXLEN = 0", "XLEN s", "EXISTS s", "TYPE s",
		"XTRIM missing MAXLEN 0", "OBJECT ENCODING s",
		// XREAD without blocking
		"XADD r 1-1 a 1", "XADD r 2-1 b 2", "XADD r 3-1 c 3",
		"XREAD STREAMS r 0", "XREAD COUNT 2 STREAMS r 0", "XREAD COUNT 1 STREAMS r 1-1", "XREAD STREAMS r 3-1", "XREAD STREAMS r $",
		"XREAD STREAMS r missing 0 0", "XREAD STREAMS r", "XREAD STREAMS r missing 0", "XREAD COUNT x STREAMS r 0",
		"XREAD BLOCK -1 STREAMS r 0", "XREAD BLOCK x STREAMS r 0", "XREAD FOO STREAMS r 0", "XREAD COUNT 1", "XREAD STREAMS r bad",
		"XREAD BLOCK 20 STREAMS missing 0", "XREAD BLOCK 20 STREAMS r $",
		"MULTI", "XREAD BLOCK 0 STREAMS r $", "EXEC",
		// types
		"SET str x", "XADD str 1-1 a b", "XLEN str", "XRANGE str - +", "XRANGE str - + COUNT 0", "XREAD STREAMS str 0", "XDEL str 1-1", "XTRIM str MAXLEN 0",
		"LPUSH lst a", "XREAD STREAMS r lst 0 0",
		"XADD m 1-1 a b", "XADD m 2-1 a b", "XADD m 3-1 a b", "XTRIM m MAXLEN 1", "XINFO STREAM m", "XDEL m 3-1", "XINFO STREAM m",
		"XINFO STREAM missing", "XINFO STREAM str", "XINFO FOO m",
		"COPY r r2", "XRANGE r2 - +", "RENAME r2 r3", "XLEN r3",
	))
}

// A blocked XREAD wakes for an entry after the ID it waits on ("$" meaning the last ID when it
// blocked), in RESP2 and RESP3, and times out with a null reply.
func TestXReadBlocks(t *testing.T) {
	_, addr := startServer(t, func(c *config.Config) { c.IOThreads = 2 })
	for _, proto := range []int{2, 3} {
		rc := redisClient(t, addr, proto)
		rc.FlushAll(ctx())
		rc.XAdd(ctx(), &redis.XAddArgs{Stream: "jobs", ID: "1-1", Values: []string{"n", "old"}})

		got := make(chan []redis.XStream, 1)
		errs := make(chan error, 1)
		go func() {
			res, err := rc.XRead(ctx(), &redis.XReadArgs{Streams: []string{"other", "jobs", "0", "$"}, Block: 5 * time.Second}).Result()
			if err != nil {
				errs <- err
				return
			}
			got <- res
		}()
		waitBlocked(t, rc, 1)
		// An entry that is not after the waiter's ID does not wake it for good; a write to
		// another type does not either.
		rc.Set(ctx(), "unrelated", "x", 0)
		if _, err := rc.XAdd(ctx(), &redis.XAddArgs{Stream: "jobs", ID: "2-1", Values: []string{"n", "new"}}).Result(); err != nil {
			t.Fatal(err)
		}
		select {
		case res := <-got:
			if len(res) != 1 || res[0].Stream != "jobs" || len(res[0].Messages) != 1 || res[0].Messages[0].ID != "2-1" || res[0].Messages[0].Values["n"] != "new" {
				t.Fatalf("RESP%d: XREAD woke with %+v", proto, res)
			}
		case err := <-errs:
			t.Fatalf("RESP%d: XREAD: %v", proto, err)
		case <-time.After(5 * time.Second):
			t.Fatalf("RESP%d: blocked XREAD was not woken by XADD", proto)
		}

		start := time.Now()
		_, err := rc.XRead(ctx(), &redis.XReadArgs{Streams: []string{"jobs", "$"}, Block: 150 * time.Millisecond}).Result()
		if err != redis.Nil {
			t.Fatalf("RESP%d: XREAD timeout: got %v, want redis.Nil", proto, err)
		}
		if d := time.Since(start); d < 140*time.Millisecond || d > 3*time.Second {
			t.Fatalf("RESP%d: XREAD BLOCK 150 returned after %v", proto, d)
		}
	}
}

// A blocked XREAD that a deletion wakes with nothing new blocks again and keeps its deadline.
func TestXReadReblocksKeepingDeadline(t *testing.T) {
	_, addr := startServer(t, nil)
	rc := redisClient(t, addr, 2)
	rc.XAdd(ctx(), &redis.XAddArgs{Stream: "s", ID: "5-1", Values: []string{"a", "b"}})
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := rc.XRead(ctx(), &redis.XReadArgs{Streams: []string{"s", "10-0"}, Block: 400 * time.Millisecond}).Result()
		done <- err
	}()
	waitBlocked(t, rc, 1)
	rc.XAdd(ctx(), &redis.XAddArgs{Stream: "s", ID: "9-1", Values: []string{"a", "b"}}) // not after 10-0
	select {
	case err := <-done:
		if err != redis.Nil {
			t.Fatalf("got %v, want a timeout (redis.Nil)", err)
		}
		if d := time.Since(start); d < 390*time.Millisecond || d > 3*time.Second {
			t.Fatalf("timed out after %v, want the original 400ms", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("XREAD did not time out")
	}
}

// Go clients use streams through their typed helpers: XADD with auto IDs and trimming, XRANGE,
// XINFO STREAM.
func TestStreamsWithGoClient(t *testing.T) {
	_, addr := startServer(t, nil)
	for _, proto := range []int{2, 3} {
		rc := redisClient(t, addr, proto)
		rc.Del(ctx(), "events")
		var last string
		for i := 0; i < 50; i++ {
			id, err := rc.XAdd(ctx(), &redis.XAddArgs{Stream: "events", MaxLen: 20, Approx: true, Values: map[string]any{"i": i}}).Result()
			if err != nil {
				t.Fatal(err)
			}
			if last != "" && !idLess(last, id) {
				t.Fatalf("auto ID %s not after %s", id, last)
			}
			last = id
		}
		if n := rc.XLen(ctx(), "events").Val(); n < 20 || n > 50 {
			t.Fatalf("XLEN after MAXLEN ~ 20: %d", n)
		}
		msgs, err := rc.XRevRangeN(ctx(), "events", "+", "-", 1).Result()
		if err != nil || len(msgs) != 1 || msgs[0].ID != last || msgs[0].Values["i"] != "49" {
			t.Fatalf("XREVRANGE: %+v %v", msgs, err)
		}
		info, err := rc.XInfoStream(ctx(), "events").Result()
		if err != nil {
			t.Fatalf("RESP%d XINFO STREAM: %v", proto, err)
		}
		if info.Length != rc.XLen(ctx(), "events").Val() || info.LastGeneratedID != last || info.EntriesAdded != 50 || info.LastEntry.ID != last {
			t.Fatalf("RESP%d XINFO STREAM: %+v", proto, info)
		}
	}
}

func idLess(a, b string) bool {
	am, as, _ := strings.Cut(a, "-")
	bm, bs, _ := strings.Cut(b, "-")
	if len(am) != len(bm) {
		return len(am) < len(bm)
	}
	if am != bm {
		return am < bm
	}
	if len(as) != len(bs) {
		return len(as) < len(bs)
	}
	return as < bs
}

// Consumer groups reply as redis-server does, byte for byte (XINFO CONSUMERS and XPENDING's
// extended form report idle times, which differ by the milliseconds between the two servers:
// TestConsumerGroupWorkers covers them).
func TestConsumerGroupsMatchRedis(t *testing.T) {
	_, addr := startServer(t, func(c *config.Config) { c.IOThreads = 2 })
	differential(t, addr, split(
		"XGROUP CREATE s g $", "XGROUP CREATE s g $ MKSTREAM", "XGROUP CREATE s g $ MKSTREAM", "TYPE s", "XINFO GROUPS s",
		"XGROUP CREATE s g2 0 FOO", "XGROUP CREATE s g3 0 ENTRIESREAD -5", "XGROUP CREATE s g3 bad", "XGROUP CREATE s",
		"XGROUP SETID s nog 0", "XGROUP SETID nokey g 0", "XGROUP DESTROY nokey g", "XGROUP DESTROY s nog",
		"XGROUP CREATECONSUMER s nog c", "XGROUP FOO",
		"XADD s 1-1 a 1", "XADD s 2-1 b 2", "XADD s 3-1 c 3", "XINFO GROUPS s", "XINFO STREAM s",
		"XREADGROUP GROUP g c COUNT 1 STREAMS s >", "XINFO GROUPS s",
		"XREADGROUP GROUP g c STREAMS s 0", "XREADGROUP GROUP g c STREAMS s 1-1", "XREADGROUP GROUP g nobody STREAMS s 0",
		"XREADGROUP GROUP g c2 STREAMS s >", "XREADGROUP GROUP g c2 STREAMS s >", "XREADGROUP GROUP g c2 BLOCK 10 STREAMS s >",
		"XPENDING s g", "XPENDING s nog", "XPENDING nokey g", "XPENDING s g - + 0", "XPENDING s g IDLE x - + 10", "XPENDING s g - + x", "XPENDING s g - +", "XPENDING s g IDLE 10 - +", "XPENDING s g bad + 10", "XPENDING s g - + 10 nobody", "XPENDING s g - + 10 a b", "XINFO CONSUMERS s nog", "XINFO CONSUMERS nokey g",
		"XACK s g 1-1 9-9", "XACK s g bad", "XACK s nog bad", "XACK nokey g 1-1", "XPENDING s g",
		"XDEL s 2-1", "XREADGROUP GROUP g c2 STREAMS s 0", "XINFO GROUPS s",
		"XCLAIM s g c3 0 3-1 JUSTID", "XPENDING s g", "XCLAIM s g c3 0 2-1", "XPENDING s g",
		"XCLAIM s g c3 0 1-1 FORCE", "XPENDING s g", "XCLAIM s g c3 0 1-1", "XCLAIM s g c3 0 9-9 FORCE",
		"XCLAIM s nog c 0 1-1", "XCLAIM s g c x 1-1", "XCLAIM s g c 0 1-1 BOGUS", "XCLAIM s g c 0 1-1 RETRYCOUNT x", "XCLAIM s g c 0 1-1 IDLE x", "XCLAIM s g c 0 1-1 TIME x", "XCLAIM s g c 0 1-1 RETRYCOUNT 5 JUSTID", "XPENDING s g", "XCLAIM s g c 0 1-1 LASTID bad",
		"XADD s 4-1 d 4", "XADD s 5-1 e 5", "XREADGROUP GROUP g c5 STREAMS s >", "XDEL s 4-1",
		"XAUTOCLAIM s g c4 0 0 COUNT 1", "XAUTOCLAIM s g c4 0 0", "XAUTOCLAIM s g c4 0 0 JUSTID", "XAUTOCLAIM s g c4 0 0 COUNT 0",
		"XAUTOCLAIM s g c4 0 bad", "XAUTOCLAIM s g c4 x 0", "XAUTOCLAIM s nog c 0 0", "XAUTOCLAIM s g c4 0 (5-1", "XPENDING s g",
		"XINFO STREAM s", "COPY s s2", "XINFO GROUPS s2", "XPENDING s2 g",
		"XGROUP CREATECONSUMER s g c6", "XGROUP CREATECONSUMER s g c6", "XGROUP DELCONSUMER s g c4", "XGROUP DELCONSUMER s g nobody",
		"XGROUP SETID s g 0", "XINFO GROUPS s", "XGROUP SETID s g $ ENTRIESREAD 3", "XINFO GROUPS s", "XGROUP SETID s g bad",
		"XREADGROUP GROUP g c STREAMS s $", "XREADGROUP GROUP g c STREAMS s", "XREADGROUP GROUP g STREAMS s >",
		"XREADGROUP COUNT 1 NOACK STREAMS s >", "XREAD GROUP g c STREAMS s 0", "XREAD STREAMS s >", "XREAD NOACK STREAMS s 0",
		"XADD s 6-1 f 6", "XREADGROUP GROUP g c NOACK STREAMS s >", "XPENDING s g",
		"MULTI", "XREADGROUP GROUP g c BLOCK 0 STREAMS s >", "EXEC",
		"XGROUP DESTROY s g", "XGROUP DESTROY s g", "XINFO GROUPS s", "XREADGROUP GROUP g c STREAMS s >",
		"SET str x", "XGROUP CREATE str g $", "XREADGROUP GROUP g c STREAMS str >", "XACK str g 1-1", "XPENDING str g", "XINFO GROUPS str",
		"XCLAIM str g c 0 1-1", "XAUTOCLAIM str g c 0 0",
	))
}

// A work queue the way applications build one with go-redis: producers XADD, workers block in
// XREADGROUP, acknowledge, and a sweeper claims what a dead worker left pending.
func TestConsumerGroupWorkers(t *testing.T) {
	_, addr := startServer(t, func(c *config.Config) { c.IOThreads = 2 })
	rc := redisClient(t, addr, 3)
	if err := rc.XGroupCreateMkStream(ctx(), "jobs", "workers", "$").Err(); err != nil {
		t.Fatal(err)
	}
	got := make(chan []redis.XStream, 1)
	go func() {
		res, err := rc.XReadGroup(ctx(), &redis.XReadGroupArgs{Group: "workers", Consumer: "w1", Streams: []string{"jobs", ">"}, Block: 5 * time.Second}).Result()
		if err != nil {
			t.Errorf("blocked XREADGROUP: %v", err)
		}
		got <- res
	}()
	waitBlocked(t, rc, 1)
	id := rc.XAdd(ctx(), &redis.XAddArgs{Stream: "jobs", Values: []string{"task", "resize"}}).Val()
	select {
	case res := <-got:
		if len(res) != 1 || len(res[0].Messages) != 1 || res[0].Messages[0].ID != id {
			t.Fatalf("woken XREADGROUP got %+v, want %s", res, id)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("blocked XREADGROUP was not woken by XADD")
	}
	// w1 dies holding the job; after it idles 50 ms a sweeper claims it.
	time.Sleep(60 * time.Millisecond)
	pending, err := rc.XPendingExt(ctx(), &redis.XPendingExtArgs{Stream: "jobs", Group: "workers", Start: "-", End: "+", Count: 10, Idle: 50 * time.Millisecond}).Result()
	if err != nil || len(pending) != 1 || pending[0].Consumer != "w1" || pending[0].RetryCount != 1 || pending[0].Idle < 50*time.Millisecond {
		t.Fatalf("XPENDING IDLE: %+v %v", pending, err)
	}
	claimed, next, err := rc.XAutoClaim(ctx(), &redis.XAutoClaimArgs{Stream: "jobs", Group: "workers", Consumer: "sweeper", MinIdle: 50 * time.Millisecond, Start: "0"}).Result()
	if err != nil || len(claimed) != 1 || claimed[0].ID != id || next != "0-0" {
		t.Fatalf("XAUTOCLAIM: %+v %q %v", claimed, next, err)
	}
	consumers, err := rc.XInfoConsumers(ctx(), "jobs", "workers").Result()
	if err != nil || len(consumers) != 2 || consumers[0].Name != "sweeper" || consumers[0].Pending != 1 || consumers[1].Name != "w1" || consumers[1].Pending != 0 {
		t.Fatalf("XINFO CONSUMERS: %+v %v", consumers, err)
	}
	if n := rc.XAck(ctx(), "jobs", "workers", id).Val(); n != 1 {
		t.Fatalf("XACK: %d", n)
	}
	groups, err := rc.XInfoGroups(ctx(), "jobs").Result()
	if err != nil || len(groups) != 1 || groups[0].Pending != 0 || groups[0].LastDeliveredID != id || groups[0].Lag != 0 {
		t.Fatalf("XINFO GROUPS: %+v %v", groups, err)
	}
}

// BLMPOP and BZMPOP block until one of their keys gets data, and pop up to COUNT from it.
func TestBlockingMPop(t *testing.T) {
	_, addr := startServer(t, func(c *config.Config) { c.IOThreads = 2 })
	rc := redisClient(t, addr, 3)
	type popped struct {
		key  string
		vals []string
		err  error
	}
	got := make(chan popped, 1)
	go func() {
		k, v, err := rc.BLMPop(ctx(), 5*time.Second, "right", 2, "q1", "q2").Result()
		got <- popped{k, v, err}
	}()
	waitBlocked(t, rc, 1)
	rc.RPush(ctx(), "q2", "a", "b", "c")
	if p := <-got; p.err != nil || p.key != "q2" || len(p.vals) != 2 || p.vals[0] != "c" || p.vals[1] != "b" {
		t.Fatalf("BLMPOP: %+v", p)
	}
	zgot := make(chan []redis.Z, 1)
	go func() {
		_, zs, err := rc.BZMPop(ctx(), 5*time.Second, "min", 5, "z").Result()
		if err != nil {
			t.Errorf("BZMPOP: %v", err)
		}
		zgot <- zs
	}()
	waitBlocked(t, rc, 1)
	rc.ZAdd(ctx(), "z", redis.Z{Score: 2, Member: "b"}, redis.Z{Score: 1, Member: "a"})
	if zs := <-zgot; len(zs) != 2 || zs[0].Member != "a" || zs[1].Score != 2 {
		t.Fatalf("BZMPOP: %+v", zs)
	}
}

// WAIT: no replicas, so WAIT 0 answers 0 at once and WAIT 1 answers 0 when its timeout ends.
func TestWaitWithoutReplicas(t *testing.T) {
	_, addr := startServer(t, nil)
	differential(t, addr, split("SET k v", "WAIT 0 0", "WAIT 1 20", "WAIT x 0", "WAIT 1 -1", "WAIT 1 x", "MULTI", "WAIT 1 0", "EXEC"))
	rc := redisClient(t, addr, 2)
	start := time.Now()
	if n, err := rc.Wait(ctx(), 1, 150*time.Millisecond).Result(); err != nil || n != 0 {
		t.Fatalf("WAIT 1 150: %d %v", n, err)
	}
	if d := time.Since(start); d < 140*time.Millisecond || d > 3*time.Second {
		t.Fatalf("WAIT 1 150 returned after %v", d)
	}
}
