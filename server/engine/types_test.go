package engine

import (
	"sort"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/iocache/iocache/server/config"
)

func TestListCommands(t *testing.T) {
	_, addr := startServer(t, nil)
	c := redisClient(t, addr, 2)
	runSteps(t, c, []step{
		{[]any{"RPUSH", "l", "a", "b", "c"}, 3},
		{[]any{"LPUSH", "l", "z"}, 4},
		{[]any{"LRANGE", "l", "0", "-1"}, []any{"z", "a", "b", "c"}},
		{[]any{"LRANGE", "l", "-2", "100"}, []any{"b", "c"}},
		{[]any{"LRANGE", "l", "5", "10"}, []any{}},
		{[]any{"LINDEX", "l", "-1"}, "c"},
		{[]any{"LINDEX", "l", "9"}, nil},
		{[]any{"LSET", "l", "1", "A"}, "OK"},
		{[]any{"LSET", "l", "9", "A"}, "ERR:ERR index out of range"},
		{[]any{"LSET", "nope", "0", "A"}, "ERR:ERR no such key"},
		{[]any{"LINSERT", "l", "BEFORE", "b", "B0"}, 5},
		{[]any{"LINSERT", "l", "AFTER", "nope", "x"}, -1},
		{[]any{"LPOS", "l", "b"}, 3},
		{[]any{"RPUSH", "r", "x", "y", "x", "z", "x"}, 5},
		{[]any{"LPOS", "r", "x", "RANK", "-1"}, 4},
		{[]any{"LPOS", "r", "x", "COUNT", "0"}, []any{int64(0), int64(2), int64(4)}},
		{[]any{"LREM", "r", "-2", "x"}, 2},
		{[]any{"LRANGE", "r", "0", "-1"}, []any{"x", "y", "z"}},
		{[]any{"LTRIM", "r", "1", "-1"}, "OK"},
		{[]any{"LRANGE", "r", "0", "-1"}, []any{"y", "z"}},
		{[]any{"LPOP", "r", "5"}, []any{"y", "z"}},
		{[]any{"EXISTS", "r"}, 0},
		{[]any{"LPOP", "r"}, nil},
		{[]any{"RPOP", "l"}, "c"},
		{[]any{"LMOVE", "l", "dst", "LEFT", "RIGHT"}, "z"},
		{[]any{"RPOPLPUSH", "l", "dst"}, "b"},
		{[]any{"LRANGE", "dst", "0", "-1"}, []any{"b", "z"}},
		{[]any{"LPUSHX", "none", "x"}, 0},
		{[]any{"RPUSHX", "dst", "q"}, 3},
		{[]any{"LLEN", "dst"}, 3},
		{[]any{"SET", "s", "x"}, "OK"},
		{[]any{"LMOVE", "dst", "s", "LEFT", "LEFT"}, "ERR:WRONGTYPE Operation against a key holding the wrong kind of value"},
		{[]any{"LLEN", "dst"}, 3},
	})
}

func TestHashCommands(t *testing.T) {
	_, addr := startServer(t, nil)
	for _, proto := range []int{2, 3} {
		c := redisClient(t, addr, proto)
		c.FlushAll(ctx())
		runSteps(t, c, []step{
			{[]any{"HSET", "h", "f1", "v1", "f2", "v2"}, 2},
			{[]any{"HSET", "h", "f1", "v1b"}, 0},
			{[]any{"HSETNX", "h", "f1", "x"}, 0},
			{[]any{"HGET", "h", "f1"}, "v1b"},
			{[]any{"HMGET", "h", "f1", "nope", "f2"}, []any{"v1b", nil, "v2"}},
			{[]any{"HLEN", "h"}, 2},
			{[]any{"HEXISTS", "h", "f2"}, 1},
			{[]any{"HSTRLEN", "h", "f2"}, 2},
			{[]any{"HINCRBY", "h", "n", "5"}, 5},
			{[]any{"HINCRBY", "h", "f1", "5"}, "ERR:ERR hash value is not an integer"},
			{[]any{"HINCRBYFLOAT", "h", "fl", "1.5"}, "1.5"},
			{[]any{"HDEL", "h", "f1", "f2", "n", "fl", "nope"}, 4},
			{[]any{"EXISTS", "h"}, 0},
			{[]any{"HSET", "h", "odd"}, "ERR:ERR wrong number of arguments for 'hset' command"},
		})
		c.HSet(ctx(), "h2", "a", "1", "b", "2")
		all := c.HGetAll(ctx(), "h2").Val()
		if len(all) != 2 || all["a"] != "1" || all["b"] != "2" {
			t.Fatalf("RESP%d HGETALL %v", proto, all)
		}
		keys := c.HKeys(ctx(), "h2").Val()
		sort.Strings(keys)
		if len(keys) != 2 || keys[0] != "a" {
			t.Fatalf("HKEYS %v", keys)
		}
		if f := c.HRandField(ctx(), "h2", 5).Val(); len(f) != 2 {
			t.Fatalf("HRANDFIELD 5 on 2 fields: %v", f)
		}
		if f := c.HRandField(ctx(), "h2", -5).Val(); len(f) != 5 {
			t.Fatalf("HRANDFIELD -5: %v", f)
		}
	}
}

func TestSetCommands(t *testing.T) {
	_, addr := startServer(t, nil)
	c := redisClient(t, addr, 2)
	runSteps(t, c, []step{
		{[]any{"SADD", "s1", "a", "b", "c", "a"}, 3},
		{[]any{"SADD", "s2", "b", "c", "d"}, 3},
		{[]any{"SISMEMBER", "s1", "a"}, 1},
		{[]any{"SMISMEMBER", "s1", "a", "d"}, []any{int64(1), int64(0)}},
		{[]any{"SCARD", "s1"}, 3},
		{[]any{"SINTERSTORE", "i", "s1", "s2"}, 2},
		{[]any{"SUNIONSTORE", "u", "s1", "s2"}, 4},
		{[]any{"SDIFFSTORE", "d", "s1", "s2"}, 1},
		{[]any{"SMEMBERS", "d"}, []any{"a"}},
		{[]any{"SINTERCARD", "2", "s1", "s2", "LIMIT", "1"}, 1},
		{[]any{"SMOVE", "s1", "s2", "a"}, 1},
		{[]any{"SISMEMBER", "s2", "a"}, 1},
		{[]any{"SREM", "s1", "b", "c"}, 2},
		{[]any{"EXISTS", "s1"}, 0},
		{[]any{"SPOP", "nope"}, nil},
	})
	inter := c.SInter(ctx(), "s2", "u").Val()
	sort.Strings(inter)
	if len(inter) != 4 {
		t.Fatalf("SINTER %v", inter)
	}
	popped := c.SPopN(ctx(), "u", 10).Val()
	if len(popped) != 4 || c.Exists(ctx(), "u").Val() != 0 {
		t.Fatalf("SPOP 10 of 4: %v", popped)
	}
	for i := 0; i < 300; i++ {
		c.SAdd(ctx(), "big", i)
	}
	seen := map[string]bool{}
	var cur uint64
	for {
		m, next, err := c.SScan(ctx(), "big", cur, "", 20).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range m {
			seen[x] = true
		}
		if cur = next; cur == 0 {
			break
		}
	}
	if len(seen) != 300 {
		t.Fatalf("SSCAN saw %d of 300", len(seen))
	}
}

func TestSortedSetCommands(t *testing.T) {
	_, addr := startServer(t, nil)
	c := redisClient(t, addr, 2)
	runSteps(t, c, []step{
		{[]any{"ZADD", "z", "1", "a", "2", "b", "3", "c"}, 3},
		{[]any{"ZADD", "z", "NX", "5", "a", "4", "d"}, 1},
		{[]any{"ZADD", "z", "XX", "CH", "10", "a"}, 1},
		{[]any{"ZADD", "z", "GT", "CH", "1", "a"}, 0},
		{[]any{"ZADD", "z", "INCR", "1", "b"}, "3"},
		{[]any{"ZADD", "z", "NX", "XX", "1", "b"}, "ERR:ERR XX and NX options at the same time are not compatible"},
		{[]any{"ZADD", "z", "x", "b"}, "ERR:ERR value is not a valid float"},
		{[]any{"ZCARD", "z"}, 4},
		{[]any{"ZSCORE", "z", "a"}, "10"},
		// b and c share score 3: equal scores order by member.
		{[]any{"ZRANK", "z", "c"}, 1},
		{[]any{"ZREVRANK", "z", "c"}, 2},
		{[]any{"ZRANGE", "z", "0", "-1"}, []any{"b", "c", "d", "a"}},
		{[]any{"ZRANGE", "z", "0", "1", "WITHSCORES"}, []any{"b", "3", "c", "3"}},
		{[]any{"ZRANGE", "z", "(3", "+inf", "BYSCORE"}, []any{"d", "a"}},
		{[]any{"ZRANGE", "z", "+inf", "-inf", "BYSCORE", "REV", "LIMIT", "0", "2"}, []any{"a", "d"}},
		{[]any{"ZRANGEBYSCORE", "z", "-inf", "3"}, []any{"b", "c"}},
		{[]any{"ZREVRANGEBYSCORE", "z", "10", "4"}, []any{"a", "d"}},
		{[]any{"ZREVRANGE", "z", "0", "0"}, []any{"a"}},
		{[]any{"ZCOUNT", "z", "3", "4"}, 3},
		{[]any{"ZRANGE", "z", "0", "1", "LIMIT", "0", "1"}, "ERR:ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"},
		{[]any{"ZRANGEBYSCORE", "z", "x", "1"}, "ERR:ERR min or max is not a float"},
		{[]any{"ZINCRBY", "z", "-10", "a"}, "0"},
		{[]any{"ZPOPMIN", "z"}, []any{"a", "0"}},
		{[]any{"ZPOPMAX", "z", "2"}, []any{"d", "4", "c", "3"}},
		{[]any{"ZMSCORE", "z", "b", "nope"}, []any{"3", nil}},
		{[]any{"ZADD", "lex", "0", "a", "0", "b", "0", "c", "0", "d"}, 4},
		{[]any{"ZRANGEBYLEX", "lex", "[b", "(d"}, []any{"b", "c"}},
		{[]any{"ZREVRANGEBYLEX", "lex", "+", "(b"}, []any{"d", "c"}},
		{[]any{"ZLEXCOUNT", "lex", "-", "+"}, 4},
		{[]any{"ZREMRANGEBYRANK", "lex", "0", "1"}, 2},
		{[]any{"ZREMRANGEBYSCORE", "lex", "-inf", "+inf"}, 2},
		{[]any{"EXISTS", "lex"}, 0},
		{[]any{"ZADD", "w1", "1", "x", "2", "y"}, 2},
		{[]any{"ZADD", "w2", "10", "y", "20", "z"}, 2},
		{[]any{"ZUNIONSTORE", "out", "2", "w1", "w2", "WEIGHTS", "2", "1"}, 3},
		{[]any{"ZRANGE", "out", "0", "-1", "WITHSCORES"}, []any{"x", "2", "y", "14", "z", "20"}},
		{[]any{"ZINTERSTORE", "out", "2", "w1", "w2", "AGGREGATE", "MAX"}, 1},
		{[]any{"ZRANGE", "out", "0", "-1", "WITHSCORES"}, []any{"y", "10"}},
	})
	// Rank queries stay correct on a large set (O(log n) skip list with spans).
	members := make([]redis.Z, 10000)
	for i := range members {
		members[i] = redis.Z{Score: float64(i * 2), Member: "m" + itoa(int64(i))}
	}
	c.ZAdd(ctx(), "big", members...)
	for _, i := range []int64{0, 1, 4999, 9999} {
		if r := c.ZRank(ctx(), "big", "m"+itoa(i)).Val(); r != i {
			t.Fatalf("ZRANK m%d = %d", i, r)
		}
	}
	if r := c.ZRange(ctx(), "big", 5000, 5001).Val(); len(r) != 2 || r[0] != "m5000" {
		t.Fatalf("ZRANGE by rank in the middle: %v", r)
	}
}

func TestTransactions(t *testing.T) {
	_, addr := startServer(t, func(c *config.Config) { c.IOThreads = 2 })
	c := redisClient(t, addr, 2)
	c.Set(ctx(), "balance", 100, 0)
	// A WATCHed key changed by another client aborts EXEC.
	err := c.Watch(ctx(), func(tx *redis.Tx) error {
		other := redisClient(t, addr, 2)
		other.IncrBy(ctx(), "balance", 1)
		_, err := tx.TxPipelined(ctx(), func(p redis.Pipeliner) error {
			p.DecrBy(ctx(), "balance", 10)
			return nil
		})
		return err
	}, "balance")
	if err != redis.TxFailedErr {
		t.Fatalf("EXEC after a WATCHed change: %v", err)
	}
	if v := c.Get(ctx(), "balance").Val(); v != "101" {
		t.Fatalf("balance %s", v)
	}
	// Without interference it commits.
	err = c.Watch(ctx(), func(tx *redis.Tx) error {
		_, err := tx.TxPipelined(ctx(), func(p redis.Pipeliner) error {
			p.DecrBy(ctx(), "balance", 10)
			p.Incr(ctx(), "ops")
			return nil
		})
		return err
	}, "balance")
	if err != nil || c.Get(ctx(), "balance").Val() != "91" {
		t.Fatalf("EXEC: %v", err)
	}
	// A queued error aborts the whole transaction with EXECABORT.
	r := dialRaw(t, addr)
	r.send("MULTI\r\nSET a 1\r\nNOSUCH\r\nEXEC\r\nGET a\r\n")
	want := []string{"+OK", "+QUEUED", "-ERR unknown command 'NOSUCH', with args beginning with: ", "-EXECABORT Transaction discarded because of previous errors.", "$-1"}
	for _, w := range want {
		if got := r.line(); got != w {
			t.Fatalf("got %q, want %q", got, w)
		}
	}
	runSteps(t, c, []step{
		{[]any{"EXEC"}, "ERR:ERR EXEC without MULTI"},
		{[]any{"DISCARD"}, "ERR:ERR DISCARD without MULTI"},
	})
}

func TestPubSub(t *testing.T) {
	for _, threads := range []int{1, 2} {
		for _, proto := range []int{2, 3} {
			_, addr := startServer(t, func(c *config.Config) { c.IOThreads = threads })
			sub := redisClient(t, addr, proto)
			ps := sub.Subscribe(ctx(), "news")
			if _, err := ps.Receive(ctx()); err != nil {
				t.Fatal(err)
			}
			if err := ps.PSubscribe(ctx(), "ne*"); err != nil {
				t.Fatal(err)
			}
			pub := redisClient(t, addr, 2)
			// Wait until both subscriptions are registered.
			deadline := time.Now().Add(2 * time.Second)
			for pub.PubSubNumPat(ctx()).Val() != 1 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if n := pub.Publish(ctx(), "news", "hello").Val(); n != 2 {
				t.Fatalf("io-threads %d RESP%d: PUBLISH reached %d subscribers, want 2", threads, proto, n)
			}
			got := map[string]bool{}
			for len(got) < 2 {
				msg, err := ps.ReceiveTimeout(ctx(), 2*time.Second)
				if err != nil {
					t.Fatalf("receive: %v (got %v)", err, got)
				}
				if m, ok := msg.(*redis.Message); ok {
					got[m.Pattern+"|"+m.Channel+"|"+m.Payload] = true
				}
			}
			if !got["|news|hello"] || !got["ne*|news|hello"] {
				t.Fatalf("messages %v", got)
			}
			if ch := pub.PubSubChannels(ctx(), "*").Val(); len(ch) != 1 || ch[0] != "news" {
				t.Fatalf("PUBSUB CHANNELS %v", ch)
			}
			if n := pub.PubSubNumSub(ctx(), "news").Val(); n["news"] != 1 {
				t.Fatalf("PUBSUB NUMSUB %v", n)
			}
			ps.Close()
		}
	}
	// RESP2 subscribed clients may only run (un)subscribe commands, PING, QUIT, RESET.
	_, addr := startServer(t, nil)
	r := dialRaw(t, addr)
	r.send("SUBSCRIBE ch\r\nGET x\r\nPING\r\n")
	for _, w := range []string{"*3", "$9", "subscribe", "$2", "ch", ":1",
		"-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
		"*2", "$4", "pong", "$0", ""} {
		if got := r.line(); got != w {
			t.Fatalf("got %q, want %q", got, w)
		}
	}
}

func TestBlockingCommands(t *testing.T) {
	for _, threads := range []int{1, 2} {
		_, addr := startServer(t, func(c *config.Config) { c.IOThreads = threads })
		c := redisClient(t, addr, 2)
		// Timeout.
		start := time.Now()
		if v := do(c, "BLPOP", "q", "0.1"); v != nil {
			t.Fatalf("BLPOP timeout: %v", v)
		}
		if d := time.Since(start); d < 90*time.Millisecond || d > time.Second {
			t.Fatalf("BLPOP q 0.1 returned after %v", d)
		}
		// Waiters are served in arrival order.
		results := make(chan string, 3)
		for i := 0; i < 3; i++ {
			w := redisClient(t, addr, 2)
			name := "w" + itoa(int64(i))
			go func() {
				v, err := w.BRPop(ctx(), 5*time.Second, "q").Result()
				if err != nil {
					results <- name + ":" + err.Error()
					return
				}
				results <- name + ":" + v[1]
			}()
			waitBlocked(t, c, i+1)
		}
		// The key changing type or disappearing does not wake or break the waiters.
		c.Set(ctx(), "q", "string now", 0)
		c.Del(ctx(), "q")
		for _, v := range []string{"one", "two", "three"} {
			c.LPush(ctx(), "q", v)
		}
		// Each push serves the longest-waiting client: w0 gets the first value, and so on. (The
		// goroutines report in any order, so compare sets.)
		got := map[string]bool{}
		for i := 0; i < 3; i++ {
			select {
			case r := <-results:
				got[r] = true
			case <-time.After(3 * time.Second):
				t.Fatalf("io-threads %d: waiter not served", threads)
			}
		}
		for _, want := range []string{"w0:one", "w1:two", "w2:three"} {
			if !got[want] {
				t.Fatalf("io-threads %d: results %v, want %s (arrival order)", threads, got, want)
			}
		}
		// BLMOVE and BZPOPMIN.
		go func() {
			time.Sleep(50 * time.Millisecond)
			c2 := redisClient(t, addr, 2)
			c2.RPush(ctx(), "src", "item")
			c2.ZAdd(ctx(), "zs", redis.Z{Score: 1, Member: "m"})
		}()
		if v, err := c.BLMove(ctx(), "src", "dst", "LEFT", "RIGHT", 2*time.Second).Result(); err != nil || v != "item" {
			t.Fatalf("BLMOVE: %v %v", v, err)
		}
		if v, err := c.BZPopMin(ctx(), 2*time.Second, "zs").Result(); err != nil || v.Member != "m" {
			t.Fatalf("BZPOPMIN: %v %v", v, err)
		}
		// Inside MULTI a blocking command does not block.
		r := dialRaw(t, addr)
		r.send("MULTI\r\nBLPOP empty 0\r\nEXEC\r\n")
		for _, w := range []string{"+OK", "+QUEUED", "*1", "*-1"} {
			if got := r.line(); got != w {
				t.Fatalf("BLPOP in MULTI: got %q, want %q", got, w)
			}
		}
	}
}

// waitBlocked waits until n clients are blocked.
func waitBlocked(t *testing.T, c *redis.Client, n int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		info := c.Info(ctx(), "clients").Val()
		if regexpFind(`blocked_clients:(\d+)`, info) == itoa(int64(n)) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%d clients never blocked", n)
}

func TestClientPause(t *testing.T) {
	for _, threads := range []int{1, 2} {
		_, addr := startServer(t, func(c *config.Config) { c.IOThreads = threads })
		admin := redisClient(t, addr, 2)
		writer := redisClient(t, addr, 2)
		if err := admin.Do(ctx(), "CLIENT", "PAUSE", "10000", "WRITE").Err(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- writer.Set(ctx(), "k", "v", 0).Err() }()
		// Reads go through during a WRITE pause; the write waits.
		if err := writer.Get(ctx(), "other").Err(); err != redis.Nil {
			t.Fatalf("GET during WRITE pause: %v", err)
		}
		select {
		case err := <-done:
			t.Fatalf("io-threads %d: SET ran during CLIENT PAUSE WRITE (%v)", threads, err)
		case <-time.After(200 * time.Millisecond):
		}
		if err := admin.Do(ctx(), "CLIENT", "UNPAUSE").Err(); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(3 * time.Second):
			t.Fatalf("io-threads %d: SET not resumed after CLIENT UNPAUSE", threads)
		}
		if v := admin.Get(ctx(), "k").Val(); v != "v" {
			t.Fatalf("value after the pause: %q", v)
		}
		// A pause ends by itself at its timeout.
		admin.Do(ctx(), "CLIENT", "PAUSE", "100", "ALL")
		start := time.Now()
		if err := writer.Set(ctx(), "k2", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < 80*time.Millisecond {
			t.Fatalf("ALL pause held a write for only %v", d)
		}
	}
}
