package engine

import (
	"regexp"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// do runs a command and returns its value or error text, for compact table tests.
func do(c *redis.Client, args ...any) any {
	v, err := c.Do(ctx(), args...).Result()
	if err == redis.Nil {
		return nil
	}
	if err != nil {
		return "ERR:" + err.Error()
	}
	return v
}

type step struct {
	args []any
	want any
}

func runSteps(t *testing.T, c *redis.Client, steps []step) {
	t.Helper()
	for i, s := range steps {
		got := do(c, s.args...)
		if !equalReply(got, s.want) {
			t.Errorf("step %d %v: got %#v, want %#v", i, s.args, got, s.want)
		}
	}
}

func equalReply(a, b any) bool {
	switch x := a.(type) {
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalReply(x[i], y[i]) {
				return false
			}
		}
		return true
	case int:
		return b == int64(x)
	}
	if bi, ok := b.(int); ok {
		return a == int64(bi)
	}
	return a == b
}

func TestStringCommands(t *testing.T) {
	_, addr := startServer(t, nil)
	c := redisClient(t, addr, 2)
	runSteps(t, c, []step{
		{[]any{"SET", "k", "v1"}, "OK"},
		{[]any{"SET", "k", "v2", "NX"}, nil},
		{[]any{"SET", "k", "v2", "XX", "GET"}, "v1"},
		{[]any{"SET", "missing", "x", "XX"}, nil},
		{[]any{"SET", "k", "v3", "KEEPTTL", "EX", "10"}, "ERR:ERR syntax error"},
		{[]any{"SETNX", "k", "other"}, 0},
		{[]any{"SETNX", "k2", "other"}, 1},
		{[]any{"GETSET", "k2", "new"}, "other"},
		{[]any{"GETDEL", "k2"}, "new"},
		{[]any{"GET", "k2"}, nil},
		{[]any{"APPEND", "a", "hello"}, 5},
		{[]any{"APPEND", "a", " world"}, 11},
		{[]any{"STRLEN", "a"}, 11},
		{[]any{"GETRANGE", "a", "0", "4"}, "hello"},
		{[]any{"GETRANGE", "a", "-5", "-1"}, "world"},
		{[]any{"GETRANGE", "a", "5", "1"}, ""},
		{[]any{"GETRANGE", "a", "100", "200"}, ""},
		{[]any{"SETRANGE", "a", "6", "WORLD"}, 11},
		{[]any{"GET", "a"}, "hello WORLD"},
		{[]any{"SETRANGE", "pad", "3", "x"}, 4},
		{[]any{"GET", "pad"}, "\x00\x00\x00x"},
		{[]any{"SETRANGE", "a", "-1", "x"}, "ERR:ERR offset is out of range"},
		{[]any{"INCR", "n"}, 1},
		{[]any{"INCRBY", "n", "10"}, 11},
		{[]any{"DECR", "n"}, 10},
		{[]any{"DECRBY", "n", "20"}, -10},
		{[]any{"INCR", "a"}, "ERR:ERR value is not an integer or out of range"},
		{[]any{"SET", "f", "10.5"}, "OK"},
		{[]any{"INCRBYFLOAT", "f", "0.1"}, "10.6"},
		{[]any{"INCRBYFLOAT", "f", "-5"}, "5.6"},
		{[]any{"INCRBYFLOAT", "f", "abc"}, "ERR:ERR value is not a valid float"},
		{[]any{"SET", "sp", " 1"}, "OK"},
		{[]any{"INCR", "sp"}, "ERR:ERR value is not an integer or out of range"},
		{[]any{"MSET", "m1", "1", "m2", "2"}, "OK"},
		{[]any{"MGET", "m1", "nope", "m2"}, []any{"1", nil, "2"}},
		{[]any{"MSETNX", "m2", "x", "m3", "y"}, 0},
		{[]any{"MSETNX", "m3", "x", "m4", "y"}, 1},
		{[]any{"MSET", "odd"}, "ERR:ERR wrong number of arguments for 'mset' command"},
		{[]any{"LPUSH", "list", "x"}, 1},
		{[]any{"GET", "list"}, "ERR:WRONGTYPE Operation against a key holding the wrong kind of value"},
		{[]any{"SET", "list", "now a string"}, "OK"},
		{[]any{"GET", "list"}, "now a string"},
	})
}

func TestExpiry(t *testing.T) {
	_, addr := startServer(t, nil)
	c := redisClient(t, addr, 2)
	runSteps(t, c, []step{
		{[]any{"SET", "k", "v", "EX", "100"}, "OK"},
		{[]any{"TTL", "k"}, 100},
		{[]any{"EXPIRE", "k", "50", "GT"}, 0},
		{[]any{"EXPIRE", "k", "200", "GT"}, 1},
		{[]any{"EXPIRE", "k", "300", "NX"}, 0},
		{[]any{"EXPIRE", "k", "10", "LT"}, 1},
		{[]any{"TTL", "k"}, 10},
		{[]any{"EXPIRE", "k", "10", "NX", "XX"}, "ERR:ERR NX and XX, GT or LT options at the same time are not compatible"},
		{[]any{"PERSIST", "k"}, 1},
		{[]any{"TTL", "k"}, -1},
		{[]any{"EXPIRE", "k", "10", "XX"}, 0},
		{[]any{"TTL", "nope"}, -2},
		{[]any{"PEXPIRE", "k", "100000"}, 1},
		{[]any{"SET", "k", "v2", "KEEPTTL"}, "OK"},
		{[]any{"TTL", "k"}, 100},
		{[]any{"SET", "k", "v3"}, "OK"},
		{[]any{"TTL", "k"}, -1},
		{[]any{"EXPIREAT", "k", "1"}, 1},
		{[]any{"EXISTS", "k"}, 0},
		{[]any{"SET", "g", "v", "PX", "100000"}, "OK"},
		{[]any{"GETEX", "g", "PERSIST"}, "v"},
		{[]any{"TTL", "g"}, -1},
		{[]any{"GETEX", "g", "EX", "5"}, "v"},
		{[]any{"TTL", "g"}, 5},
		{[]any{"SETEX", "se", "0", "v"}, "ERR:ERR invalid expire time in 'setex' command"},
	})
	// PTTL drifts by the time the test takes; check the remaining range rather than the value.
	if pttl := c.PTTL(ctx(), "k").Val(); pttl != -2*time.Nanosecond && pttl > 0 {
		t.Fatalf("k should be gone, PTTL %v", pttl)
	}
	// Expired keys are invisible to every command, and the active cycle removes them unaccessed.
	for i := 0; i < 100; i++ {
		c.Set(ctx(), "short:"+itoa(int64(i)), "v", 50*time.Millisecond)
	}
	c.Set(ctx(), "lst", "x", 0)
	c.Del(ctx(), "lst")
	c.RPush(ctx(), "lst", "a")
	c.PExpire(ctx(), "lst", 50*time.Millisecond)
	time.Sleep(120 * time.Millisecond)
	if n := c.LLen(ctx(), "lst").Val(); n != 0 {
		t.Errorf("LLEN of an expired list = %d", n)
	}
	if v := c.Keys(ctx(), "short:*").Val(); len(v) != 0 {
		t.Errorf("KEYS returned %d expired keys", len(v))
	}
	c.Del(ctx(), "g")
	// DBSIZE counts keys that expired but were not removed yet, so it shows the active cycle.
	deadline := time.Now().Add(3 * time.Second)
	for c.DBSize(ctx()).Val() != 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := c.DBSize(ctx()).Val(); n != 0 {
		t.Errorf("active expiry left %d keys", n)
	}
	if info := c.Info(ctx(), "stats").Val(); !regexp.MustCompile(`expired_keys:(1\d\d|[2-9]\d\d)\r`).MatchString(info) {
		t.Errorf("INFO stats does not count 100+ expired keys:\n%s", info)
	}
}

func TestKeyCommands(t *testing.T) {
	_, addr := startServer(t, nil)
	c := redisClient(t, addr, 2)
	runSteps(t, c, []step{
		{[]any{"SET", "a", "1"}, "OK"},
		{[]any{"RPUSH", "l", "x", "y"}, 2},
		{[]any{"EXISTS", "a", "a", "l", "nope"}, 3},
		{[]any{"TYPE", "a"}, "string"},
		{[]any{"TYPE", "l"}, "list"},
		{[]any{"TYPE", "nope"}, "none"},
		{[]any{"RENAME", "a", "b"}, "OK"},
		{[]any{"GET", "b"}, "1"},
		{[]any{"RENAME", "nope", "x"}, "ERR:ERR no such key"},
		{[]any{"RENAMENX", "b", "l"}, 0},
		{[]any{"COPY", "l", "l2"}, 1},
		{[]any{"LRANGE", "l2", "0", "-1"}, []any{"x", "y"}},
		{[]any{"COPY", "l", "l2"}, 0},
		{[]any{"COPY", "b", "b", "REPLACE"}, "ERR:ERR source and destination objects are the same"},
		{[]any{"MOVE", "b", "1"}, 1},
		{[]any{"EXISTS", "b"}, 0},
		{[]any{"SELECT", "1"}, "OK"},
	})
	// SELECT above ran on one pooled connection; use a dedicated one for the per-DB checks.
	conn := c.Conn()
	defer conn.Close()
	conn.Select(ctx(), 1)
	if v := conn.Get(ctx(), "b").Val(); v != "1" {
		t.Fatalf("MOVE target DB has %q", v)
	}
	conn.Select(ctx(), 0)
	runSteps(t, c, []step{
		{[]any{"DEL", "l", "l2", "nope"}, 2},
		{[]any{"UNLINK", "nope"}, 0},
		{[]any{"OBJECT", "ENCODING", "nope"}, nil},
		{[]any{"SET", "i", "12345"}, "OK"},
		{[]any{"OBJECT", "ENCODING", "i"}, "int"},
		{[]any{"TOUCH", "i", "nope"}, 1},
	})
	for i := 0; i < 250; i++ {
		c.Set(ctx(), "scan:"+itoa(int64(i)), i, 0)
	}
	seen := map[string]bool{}
	var cursor uint64
	for {
		keys, next, err := c.Scan(ctx(), cursor, "scan:*", 17).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			seen[k] = true
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	if len(seen) != 250 {
		t.Fatalf("SCAN MATCH saw %d of 250 keys", len(seen))
	}
	if keys, _, _ := c.ScanType(ctx(), 0, "*", 1000, "list").Result(); len(keys) != 0 {
		t.Fatalf("SCAN TYPE list returned %v", keys)
	}
	if k := c.RandomKey(ctx()).Val(); k == "" {
		t.Fatal("RANDOMKEY returned nothing")
	}
	if err := c.Do(ctx(), "SCAN", "abc").Err(); err == nil || err.Error() != "ERR invalid cursor" {
		t.Fatalf("SCAN abc: %v", err)
	}
}
