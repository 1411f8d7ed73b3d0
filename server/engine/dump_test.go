package engine

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// dumpFixture builds keys of every type, in compact and plain encodings, on a server.
func dumpFixture() [][]string {
	cmds := split(
		"SET s:int 12345", "SET s:neg -7", "SET s:text hello", "SET s:empty \"\"",
		"RPUSH l:small a 1 -70000 b", "HSET h:small a 1 b two", "SADD set:int 3 1 2 -100", "SADD set:str x",
		"ZADD z:small 1 a 2.5 b -inf c 0.1 d", "XADD x 1-1 a 1", "XADD x 1-2 a 2 b 3", "XGROUP CREATE x g 0",
		"XREADGROUP GROUP g alice COUNT 1 STREAMS x >",
	)
	cmds = append(cmds, []string{"SET", "s:long", strings.Repeat("abcdefgh", 100)}, []string{"HSET", "h:long", "f", strings.Repeat("v", 100)})
	for i := 0; i < 700; i++ {
		cmds = append(cmds, []string{"RPUSH", "l:big", fmt.Sprintf("element-%d", i)}, []string{"SADD", "set:bigint", fmt.Sprint(i * 7)},
			[]string{"ZADD", "z:big", fmt.Sprint(float64(i) / 3), fmt.Sprintf("m%d", i)})
	}
	return cmds
}

// readBack lists commands whose replies show a key's whole value in an order both servers
// share. Scores are compared by ZRANGEBYSCORE on exact values: iocache prints doubles in their
// shortest form, Redis 7.0 with 17 digits.
func readBack(key string) [][]string {
	return [][]string{{"TYPE", key}, {"GET", key}, {"LRANGE", key, "0", "-1"}, {"SORT", key, "ALPHA"}, {"HLEN", key}, {"HGET", key, "a"},
		{"HGET", key, "f"}, {"ZRANGE", key, "0", "-1"}, {"ZRANGEBYSCORE", key, "0.1", "0.1"}, {"ZCOUNT", key, "2.5", "2.5"}, {"SCARD", key}, {"XRANGE", key, "-", "+"},
		{"XPENDING", key, "g"}, {"PEXPIRETIME", key}, {"OBJECT", "IDLETIME", key}}
}

// sameReadBack compares two servers' replies to a readBack command. OBJECT IDLETIME may differ by
// a second: each server reads its own clock, a moment apart, and a busy machine can put a second
// boundary between them.
func sameReadBack(cmd []string, want, got string) bool {
	if want == got {
		return true
	}
	if cmd[0] != "OBJECT" || !strings.HasPrefix(want, ":") || !strings.HasPrefix(got, ":") {
		return false
	}
	a, errA := strconv.Atoi(strings.TrimSpace(want[1:]))
	b, errB := strconv.Atoi(strings.TrimSpace(got[1:]))
	return errA == nil && errB == nil && a-b <= 1 && b-a <= 1
}

var fixtureKeys = []string{"s:int", "s:neg", "s:text", "s:empty", "s:long", "l:small", "l:big", "h:small", "h:long", "set:int", "set:str", "set:bigint", "z:small", "z:big", "x"}

// TestDumpRestoreWithRedis: payloads cross between Redis and iocache in both directions, and the
// restored keys read back the same on both servers; RESTORE's errors are Redis's.
func TestDumpRestoreWithRedis(t *testing.T) {
	_, addr := startServer(t, nil)
	redisAddr := startRedisPeer(t)
	r, i := dialPeer(t, redisAddr), dialPeer(t, addr)
	for _, cmd := range dumpFixture() {
		r.do(cmd...)
		i.do(cmd...)
	}
	payload := func(p *peerConn, key string) string {
		reply := p.do("DUMP", key)
		_, body, _ := strings.Cut(reply, "\r\n")
		return strings.TrimSuffix(body, "\r\n")
	}
	for _, key := range fixtureKeys {
		fromRedis, fromIocache := payload(r, key), payload(i, key)
		for _, p := range []*peerConn{r, i} {
			if got := p.do("RESTORE", "from-redis:"+key, "4102444800000", fromRedis, "ABSTTL", "IDLETIME", "50"); got != "+OK\r\n" {
				t.Fatalf("RESTORE of Redis's %s payload: %q", key, got)
			}
			if got := p.do("RESTORE", "from-iocache:"+key, "0", fromIocache); got != "+OK\r\n" {
				t.Fatalf("RESTORE of iocache's %s payload: %q", key, got)
			}
		}
		for _, prefix := range []string{"", "from-redis:", "from-iocache:"} {
			for _, cmd := range readBack(prefix + key) {
				if want, got := r.do(cmd...), i.do(cmd...); !sameReadBack(cmd, want, got) {
					t.Errorf("%q:\n redis:   %.200q\n iocache: %.200q", cmd, want, got)
				}
			}
		}
	}
	good := payload(i, "s:text")
	corrupt := []byte(good)
	corrupt[1] ^= 1
	for _, cmd := range [][]string{
		{"RESTORE", "s:text", "0", good}, {"RESTORE", "s:text", "0", good, "REPLACE"}, {"RESTORE", "n1", "-1", good},
		{"RESTORE", "n2", "x", good}, {"RESTORE", "n3", "0", string(corrupt)}, {"RESTORE", "n4", "0", "short"},
		{"RESTORE", "n5", "0", good, "IDLETIME", "-1"}, {"RESTORE", "n6", "0", good, "FREQ", "256"},
		{"RESTORE", "n7", "0", good, "IDLETIME", "1", "FREQ", "1"}, {"RESTORE", "n8", "0", good, "BOGUS"},
		{"RESTORE", "n9", "0", good, "IDLETIME"}, {"RESTORE", "s:int", "1", good, "REPLACE", "ABSTTL"}, {"EXISTS", "s:int"},
		{"RESTORE", "n10", "0", "\x00\x03abc\x0b\x00\x00\x00\x00\x00\x00\x00\x00\x00"}, {"DUMP", "nokey"},
	} {
		if want, got := r.do(cmd...), i.do(cmd...); want != got {
			t.Errorf("%.60q:\n redis:   %q\n iocache: %q", cmd, want, got)
		}
	}
}
