package engine

import (
	"strings"
	"testing"
	"time"
)

// Scripts declare flags in a "#!lua flags=..." first line as in Redis 7.0: invalid shebangs get
// Redis's errors, no-writes scripts are read-only, and over maxmemory a flagged script without
// allow-oom or no-writes is refused whole while compatibility-mode scripts fail on their first
// write. Compared byte for byte with Debian's redis-server.
func TestScriptShebangMatchesRedis(t *testing.T) {
	_, addr := startServer(t, nil)
	differential(t, addr, [][]string{
		{"EVAL", "#!lua\nreturn 1", "0"},
		{"EVAL", "#!lua flags=no-writes\nreturn redis.call('set','k','1')", "0"},
		{"EVAL", "#!lua flags=no-writes\nreturn redis.call('get','k')", "0"},
		{"EVAL", "#!lua flags=no-writes,allow-oom,allow-stale,no-cluster,allow-cross-slot-keys\nreturn 3", "0"},
		{"EVAL", "#!lua flags=allow-oom\nreturn redis.call('set','k','2')", "0"},
		{"EVAL", "#!lua", "0"},
		{"EVAL", "#!notlua\nreturn 1", "0"},
		{"EVAL", "#!LUA\nreturn 1", "0"},
		{"EVAL", "#!\nreturn 1", "0"},
		{"EVAL", "#!notlua flags=bogus\nreturn 1", "0"},
		{"EVAL", "#!lua name=x\nreturn 1", "0"},
		{"EVAL", "#!lua Flags=no-writes\nreturn 1", "0"},
		{"EVAL", "#!lua flags=bogus\nreturn 1", "0"},
		{"EVAL", "#!lua flags=No-writes\nreturn 1", "0"},
		{"EVAL", "#!lua flags=no-writes,\nreturn 1", "0"},
		{"EVAL", "#!lua flags=\nreturn 1", "0"},
		{"EVAL", "#!lua\nerror('on line two')", "0"},
		{"EVAL", "#!lua\nreturn redis.call('nosuch')", "0"},
		{"SCRIPT", "LOAD", "#!lua flags=bogus\nreturn 1"},
		{"SCRIPT", "LOAD", "#!lua flags=no-writes\nreturn redis.call('set','k','3')"},
		{"EVALSHA", "c39f2a6b4e6d0e8a1cb6b5ed3b6a1e7f7d5d31a2", "0"},
		{"CONFIG", "SET", "maxmemory-policy", "noeviction"},
		{"CONFIG", "SET", "maxmemory", "1"},
		{"EVAL", "#!lua\nreturn 1", "0"},
		{"EVAL", "#!lua flags=allow-oom\nreturn redis.call('set','k','4')", "0"},
		{"EVAL", "#!lua flags=no-writes\nreturn 5", "0"},
		{"EVAL", "return redis.call('set','k','6')", "0"},
		{"EVAL", "return 7", "0"},
		{"CONFIG", "SET", "maxmemory", "0"},
		{"GET", "k"},
	})
}

// CLIENT PAUSE WRITE holds scripts that may write and lets no-writes scripts (EVAL and
// EVALSHA) and EVAL_RO through, as Redis 7.0 does.
func TestPauseWriteLetsReadOnlyScriptsThroughLikeRedis(t *testing.T) {
	_, iocacheAddr := startServer(t, nil)
	redisAddr := startRedisPeer(t)
	session := func(addr string) string {
		admin, ro, rw := dialPeer(t, addr), dialPeer(t, addr), dialPeer(t, addr)
		admin.do("SET", "k", "v")
		sha := strings.TrimSpace(strings.Split(admin.do("SCRIPT", "LOAD", "#!lua flags=no-writes\nreturn redis.call('get',KEYS[1])"), "\r\n")[1])
		admin.do("CLIENT", "PAUSE", "10000", "WRITE")
		var out strings.Builder
		for _, cmd := range [][]string{
			{"EVAL", "#!lua flags=no-writes\nreturn redis.call('get',KEYS[1])", "1", "k"},
			{"EVALSHA", sha, "1", "k"},
			{"EVAL_RO", "return redis.call('get',KEYS[1])", "1", "k"},
		} {
			sendRaw(t, ro, cmd...)
			out.WriteString(replyWithin(ro, time.Second) + "|")
		}
		sendRaw(t, rw, "EVAL", "return redis.call('get',KEYS[1])", "1", "k")
		out.WriteString("plain EVAL while paused: " + replyWithin(rw, 300*time.Millisecond) + "|")
		sendRaw(t, ro, "EVAL", "#!lua\nreturn 1", "0")
		out.WriteString("flagged EVAL without no-writes while paused: " + replyWithin(ro, 300*time.Millisecond) + "|")
		admin.do("CLIENT", "UNPAUSE")
		out.WriteString("after unpause: " + replyWithin(rw, time.Second) + replyWithin(ro, time.Second))
		return out.String()
	}
	want, got := session(redisAddr), session(iocacheAddr)
	if want != got {
		t.Errorf("\n redis:   %q\n iocache: %q", want, got)
	}
	if !strings.Contains(want, "while paused: still blocked") {
		t.Errorf("redis-server did not hold a plain EVAL during CLIENT PAUSE WRITE: %q", want)
	}
}
