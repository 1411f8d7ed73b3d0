package engine

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/iocache/iocache/server/config"
)

// Tests for issue 17's first class of failures: single commands whose work, memory or reply
// were not bounded by their inputs. Each reproduces a reported failure against a real server over
// a socket (peerConn.do fails the test when a reply does not come within 5 s) and, where Redis
// answers, compares the bytes with Debian's redis-server.

// SRANDMEMBER and HRANDFIELD range-check their counts as Redis does. Only counts that Redis
// itself refuses are sent to it: a huge negative one OOM-kills redis-server 7.0.
func TestRandomPickCountsAnswerAsRedis(t *testing.T) {
	_, addr := startServer(t, nil)
	differential(t, addr, split(
		"SADD s a", "HSET h f v", "SET str x",
		"SRANDMEMBER s -9223372036854775808", "SRANDMEMBER s x", "SRANDMEMBER s 1 2", "SRANDMEMBER s 0", "SRANDMEMBER s 1",
		"SRANDMEMBER s 9223372036854775807", "SRANDMEMBER s -3", "SRANDMEMBER nokey -9223372036854775808", "SRANDMEMBER nokey -5",
		"SRANDMEMBER str -9223372036854775808", "SRANDMEMBER str 1",
		"HRANDFIELD h -9223372036854775808", "HRANDFIELD h -9223372036854775808 WITHVALUES", "HRANDFIELD h x WITHVALUES",
		"HRANDFIELD h -4611686018427387904 WITHVALUES", "HRANDFIELD h -4611686018427387903 BAD", "HRANDFIELD h 1 WITHVALUES x",
		"HRANDFIELD h 0", "HRANDFIELD h 0 WITHVALUES", "HRANDFIELD h 9223372036854775807 WITHVALUES", "HRANDFIELD h -2 WITHVALUES",
		"HRANDFIELD h", "HRANDFIELD nokey", "HRANDFIELD nokey -4611686018427387904 WITHVALUES", "HRANDFIELD str 1",
		"HRANDFIELD str -4611686018427387904 WITHVALUES",
	))
}

// A negative count asks for a reply that grows with the count, not with the data: Redis 7.0
// builds it until the process is killed (24 GB RSS for SRANDMEMBER s -9223372036854770000).
// Here the reply is refused before anything is allocated, and the server goes on answering.
func TestHugeCountRepliesAreRefused(t *testing.T) {
	_, addr := startServer(t, nil)
	p := dialPeer(t, addr)
	p.do("SADD", "s", "a", "b")
	p.do("HSET", "h", "f", "v")
	want := "-" + errReplyTooBig + "\r\n"
	for _, cmd := range [][]string{
		{"SRANDMEMBER", "s", "-9223372036854770000"}, {"SRANDMEMBER", "s", "-9223372036854775807"},
		{"HRANDFIELD", "h", "-9223372036854770000"}, {"HRANDFIELD", "h", "-4611686018427387903", "WITHVALUES"},
		{"SRANDMEMBER", "s", "-1000000000"},
	} {
		if got := p.do(cmd...); got != want {
			t.Errorf("%q: %q, want %q", cmd, got, want)
		}
	}
	if got := p.do("HRANDFIELD", "h", "-9223372036854770000", "WITHVALUES"); got != "-ERR value is out of range\r\n" {
		t.Errorf("HRANDFIELD WITHVALUES with a huge negative count: %q", got)
	}
	// Within the limit, a negative count still repeats members as asked.
	if got := p.do("SRANDMEMBER", "s", "-1000"); !strings.HasPrefix(got, "*1000\r\n") {
		t.Errorf("SRANDMEMBER s -1000: %.40q", got)
	}
	// A client with a smaller output limit gets a smaller bound.
	p.do("CONFIG", "SET", "proto-max-bulk-len", "1mb")
	if got := p.do("SRANDMEMBER", "s", "-200000"); got != want {
		t.Errorf("over proto-max-bulk-len: %q", got)
	}
}

// SRANDMEMBER and HRANDFIELD with a positive count pick distinct members uniformly without
// copying the collection: every member comes up, none twice in one reply.
func TestRandomPicksAreDistinctAndCoverTheCollection(t *testing.T) {
	_, addr := startServer(t, nil)
	c := redisClient(t, addr, 2)
	var members []any
	for i := 0; i < 200; i++ {
		members = append(members, fmt.Sprint("m", i))
	}
	c.SAdd(ctx(), "s", members...)
	fields := []any{}
	for i := 0; i < 200; i++ {
		fields = append(fields, fmt.Sprint("f", i), fmt.Sprint("v", i))
	}
	c.HSet(ctx(), "h", fields...)
	seenS, seenH := map[string]bool{}, map[string]bool{}
	for round := 0; round < 1000; round++ { // a member is missed with probability 200·e^-25
		got, err := c.SRandMemberN(ctx(), "s", 7).Result()
		if err != nil || len(got) != 7 {
			t.Fatalf("SRANDMEMBER s 7: %v %v", got, err)
		}
		kv, err := c.HRandFieldWithValues(ctx(), "h", 5).Result()
		if err != nil || len(kv) != 5 {
			t.Fatalf("HRANDFIELD h 5 WITHVALUES: %v %v", kv, err)
		}
		once := map[string]bool{}
		for _, m := range got {
			if once[m] {
				t.Fatalf("SRANDMEMBER repeated %q in %v", m, got)
			}
			once[m], seenS[m] = true, true
		}
		for _, p := range kv {
			if once[p.Key] || "v"+p.Key[1:] != p.Value {
				t.Fatalf("HRANDFIELD pair %v in %v", p, kv)
			}
			once[p.Key], seenH[p.Key] = true, true
		}
	}
	if len(seenS) != 200 || len(seenH) != 200 {
		t.Fatalf("1000 rounds reached %d set members and %d hash fields of 200", len(seenS), len(seenH))
	}
}

// KEYS with a pattern of many stars against a long key kept the main thread busy forever (the
// matcher backtracked exponentially). It must answer at once, and agree with Redis.
func TestKeysAdversarialPatternAnswers(t *testing.T) {
	_, addr := startServer(t, nil)
	differential(t, addr, [][]string{
		{"SET", strings.Repeat("a", 40), "v"}, {"SET", "", "empty"},
		{"KEYS", strings.Repeat("a*", 20) + "b"}, {"KEYS", strings.Repeat("*a", 30) + "*"},
		{"SCAN", "0", "MATCH", strings.Repeat("a*", 20) + "b", "COUNT", "100"}, {"KEYS", "**"}, {"SCAN", "0", "MATCH", "**"},
		{"HSET", "h", strings.Repeat("a", 40), "v"}, {"HSCAN", "h", "0", "MATCH", strings.Repeat("a*", 20) + "b"},
		{"HSET", "h", "", "e"}, {"HSCAN", "h", "0", "MATCH", "*"}, {"PUBSUB", "CHANNELS", strings.Repeat("a*", 20) + "b"},
	})
}

// Glob patterns over every token kind select the same keys as Redis's matcher.
func TestGlobPatternsSelectTheSameKeysAsRedis(t *testing.T) {
	_, addr := startServer(t, nil)
	keys := []string{"", "a", "b", "A", "ab", "aB", "abc", "a*c", "a?c", "[a]", "a]b", `a\b`, "a-b", "^a", "hello", "hallo", "h llo", "aaaa"}
	cmds := [][]string{}
	for _, k := range keys {
		cmds = append(cmds, []string{"SET", k, "1"})
	}
	rng := rand.New(rand.NewPCG(17, 17))
	tokens := []string{"a", "b", "*", "?", "[", "]", "^", "-", `\`, "c", "[a-b]", "[^a]", "h"}
	for i := 0; i < 300; i++ {
		var p strings.Builder
		for n := 1 + rng.IntN(5); n > 0; n-- {
			p.WriteString(tokens[rng.IntN(len(tokens))])
		}
		cmds = append(cmds, []string{"KEYS", p.String()})
	}
	redisAddr := startRedisPeer(t)
	r, i := dialPeer(t, redisAddr), dialPeer(t, addr)
	for _, cmd := range cmds {
		want, got := normalizeReply(r.do(cmd...)), normalizeReply(i.do(cmd...))
		if want != got {
			t.Errorf("%q:\n redis:   %q\n iocache: %q", cmd, want, got)
		}
	}
}

// A script that returns a table containing itself crashed the process (a Go stack overflow in
// the conversion). Redis nests it until Lua's stack limit and answers an error there: the same
// bytes here. Deep but finite tables convert in full.
func TestLuaSelfReferencingTableAnswersAsRedis(t *testing.T) {
	_, addr := startServer(t, nil)
	differential(t, addr, [][]string{
		{"EVAL", "local a = {}; local b = {a}; a[1] = b; return a", "0"},
		{"EVAL", "local t = {} for i=1,100 do t = {t, i} end return t", "0"},
		{"EVAL", "local t = {} t[1] = t t[2] = 'x' return t", "0"},
		{"PING"},
	})
}

// A table that holds itself many times over would expand into an exponentially large reply; it
// is cut at the reply bound with an error instead of growing the server.
func TestLuaExplodingTableIsRefused(t *testing.T) {
	_, addr := startServer(t, func(c *config.Config) { c.ProtoMaxBulkLen = 1 << 20 })
	p := dialPeer(t, addr)
	got := p.do("EVAL", "local t = {} for i=1,8 do t[i] = t end return t", "0")
	if got != "-"+errReplyTooBig+"\r\n" {
		t.Fatalf("EVAL of a self-multiplying table: %.80q", got)
	}
	if pong := p.do("PING"); pong != "+PONG\r\n" {
		t.Fatalf("PING after: %q", pong)
	}
}

// DEBUG is refused unless enable-debug-command allows it, with Redis 7's text.
func TestDebugIsDisabledByDefault(t *testing.T) {
	_, addr := startServer(t, nil)
	differential(t, addr, split("DEBUG SLEEP 0", "DEBUG", "DEBUG OBJECT x", "CONFIG GET enable-debug-command",
		"CONFIG SET enable-debug-command yes", "MULTI", "DEBUG SLEEP 0", "EXEC"))
	for _, mode := range []string{"yes", "local"} {
		_, addr := startServer(t, func(c *config.Config) { c.EnableDebugCommand = mode })
		if got := dialPeer(t, addr).do("DEBUG", "SLEEP", "0"); got != "+OK\r\n" {
			t.Errorf("enable-debug-command %s, from loopback: %q", mode, got)
		}
	}
}

// LREM on 200,000 equal elements held the main thread for 100 s (each removal shifted the rest of
// the list). It is one pass now; the results match Redis on every count and direction.
func TestLremIsLinear(t *testing.T) {
	_, addr := startServer(t, nil)
	p := dialPeer(t, addr)
	args := []string{"RPUSH", "l"}
	for i := 0; i < 200000; i++ {
		args = append(args, "a")
	}
	p.do(args...)
	if got := p.do("LREM", "l", "0", "a"); got != ":200000\r\n" {
		t.Fatalf("LREM l 0 a: %q", got)
	}
	cmds := split("RPUSH l a b a c a a d a", "LREM l 2 a", "LRANGE l 0 -1", "LREM l -2 a", "LRANGE l 0 -1",
		"RPUSH l a x a", "LREM l -9223372036854775808 a", "LRANGE l 0 -1", "LPUSH l y a y", "LREM l 9223372036854775807 y",
		"LRANGE l 0 -1", "LREM l 0 nothere", "LREM l 1 b", "LREM l -1 c", "LREM l 0 d", "EXISTS l", "LPUSH l a", "LREM l 0 a", "EXISTS l")
	for i := 0; i < 70; i++ { // past the ring buffer's first growths, with the head moved
		cmds = append(cmds, []string{"LPUSH", "m", "a", "b"}, []string{"RPUSH", "m", "c", "a"})
	}
	cmds = append(cmds, split("LREM m -30 a", "LRANGE m 0 -1", "LREM m 25 b", "LRANGE m 0 -1", "LREM m 0 a", "LRANGE m 0 -1")...)
	differential(t, addr, cmds)
}

// A client can WATCH as many keys as one command carries. Each WATCH key, each touch and each
// FLUSHDB or SWAPDB over them costs O(1) per watched key: WATCH finds a duplicate among the key's
// watchers, not among the client's keys, and a touch finds the client's stale flag by index.
// With 200,000 keys a scan of the client's keys per key (as before) is 2·10^10 steps, far past
// the 5 s every reply below is given.
func TestWatchManyKeysIsLinear(t *testing.T) {
	_, addr := startServer(t, nil)
	p, other := dialPeer(t, addr), dialPeer(t, addr)
	const n = 200000
	mset, watch := []string{"MSET"}, []string{"WATCH"}
	for i := 0; i < n; i++ {
		k := "k" + strconv.Itoa(i)
		mset, watch = append(mset, k, "v"), append(watch, k)
	}
	p.send(mset...)
	p.readUntil("+OK\r\n")
	watch = append(watch, watch[1:1001]...) // duplicates are watched once
	p.send(watch...)                        // send and readUntil keep 200,000 names out of a failure's text
	p.readUntil("+OK\r\n")
	other.do("SET", "k7", "w")
	other.do("FLUSHDB")
	p.do("MULTI")
	p.do("PING")
	if got := p.do("EXEC"); got != "*-1\r\n" {
		t.Fatalf("EXEC after the watched keys changed: %q", got)
	}
	p.send(watch...)
	p.readUntil("+OK\r\n")
	p.do("MULTI")
	p.do("PING")
	if got := p.do("EXEC"); got != "*1\r\n+PONG\r\n" {
		t.Fatalf("EXEC with %d untouched watched keys: %q", n, got)
	}
}
