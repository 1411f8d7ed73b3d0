package engine

import (
	"strings"
	"testing"
)

// Issue 18: commands of Redis 7.0 that iocache lacked, each compared byte for byte with Debian's
// redis-server in RESP2 and RESP3 (differential), errors and edge cases included. Random replies
// are compared where Redis's answer is determined: a count covering the whole set, or a set of
// one member.

func TestZRandMemberMatchesRedis(t *testing.T) {
	_, addr := startServer(t, nil)
	differential(t, addr, split(
		"ZADD z 1 a 2 b 3.5 c -4 d", "ZADD one 7 only", "SET str x", "ZADD e 1 \"\"",
		"ZRANDMEMBER z 4", "ZRANDMEMBER z 10 WITHSCORES", "ZRANDMEMBER z 9223372036854775807", "ZRANDMEMBER z 0",
		"ZRANDMEMBER z 0 WITHSCORES", "ZRANDMEMBER one", "ZRANDMEMBER one -3", "ZRANDMEMBER one -3 WITHSCORES",
		"ZRANDMEMBER one 1 withscores", "ZRANDMEMBER e -2 WITHSCORES", "ZRANDMEMBER nokey", "ZRANDMEMBER nokey 5",
		"ZRANDMEMBER nokey -5 WITHSCORES", "ZRANDMEMBER str", "ZRANDMEMBER str 1", "ZRANDMEMBER str -1 WITHSCORES",
		"ZRANDMEMBER z -9223372036854775808", "ZRANDMEMBER z -9223372036854775808 WITHSCORES", "ZRANDMEMBER z x",
		"ZRANDMEMBER z 1.5", "ZRANDMEMBER z 1 WITHSCORE", "ZRANDMEMBER z 1 WITHSCORES x", "ZRANDMEMBER z -4611686018427387904 WITHSCORES",
		"ZRANDMEMBER z 4611686018427387904 WITHSCORES", "ZRANDMEMBER z 4611686018427387903 WITHSCORES", "ZRANDMEMBER",
		"ZRANDMEMBER nokey x", "ZRANDMEMBER str x",
	))
}

// A huge negative count is refused before anything is allocated; redis-server 7.0 would build
// the reply until it is killed, so it is not asked.
func TestZRandMemberHugeCountIsRefused(t *testing.T) {
	_, addr := startServer(t, nil)
	p := dialPeer(t, addr)
	p.do("ZADD", "z", "1", "a", "2", "b")
	want := "-" + errReplyTooBig + "\r\n"
	for _, cmd := range [][]string{
		{"ZRANDMEMBER", "z", "-9223372036854775807"}, {"ZRANDMEMBER", "z", "-4611686018427387903", "WITHSCORES"},
		{"ZRANDMEMBER", "z", "-1000000000"},
	} {
		if got := p.do(cmd...); got != want {
			t.Errorf("%q: %q, want %q", cmd, got, want)
		}
	}
	if got := p.do("ZRANDMEMBER", "z", "-1000", "WITHSCORES"); !strings.HasPrefix(got, "*2000\r\n") {
		t.Errorf("ZRANDMEMBER z -1000 WITHSCORES: %.40q", got)
	}
	// Distinct members for a positive count smaller than the set.
	got := p.do("ZRANDMEMBER", "z", "1")
	if got != "*1\r\n$1\r\na\r\n" && got != "*1\r\n$1\r\nb\r\n" {
		t.Errorf("ZRANDMEMBER z 1: %q", got)
	}
}
