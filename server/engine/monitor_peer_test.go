package engine

import (
	"bufio"
	"regexp"
	"strings"
	"testing"
	"time"
)

// MONITOR shows what Redis 7.0 shows, in its order: EXEC after the commands it ran (whatever
// its outcome), EVAL before its script's commands, queued commands only when they run, blocked
// commands once, administrative commands never, and passwords redacted. The same session runs
// on Debian's redis-server and on iocache; the normalized monitor streams must be equal.
func TestMonitorStreamMatchesRedis(t *testing.T) {
	_, iocacheAddr := startServer(t, nil)
	redisAddr := startRedisPeer(t)
	want := monitorSession(t, redisAddr)
	got := monitorSession(t, iocacheAddr)
	if want != got {
		t.Errorf("monitor streams differ:\n--- redis\n%s\n--- iocache\n%s", want, got)
	}
	for _, secret := range []string{"secretpw", "secretpw2"} {
		if strings.Contains(got, secret) {
			t.Errorf("a password reached MONITOR:\n%s", got)
		}
	}
}

// monitorSession runs the session and returns the monitor's lines with times and client
// addresses removed.
func monitorSession(t *testing.T, addr string) string {
	t.Helper()
	mon := dialPeer(t, addr)
	mon.do("MONITOR")
	a, b := dialPeer(t, addr), dialPeer(t, addr)
	a.do("FLUSHALL")
	for _, step := range [][]string{
		{"SET", "k", "1"},
		{"EXEC"},
		{"MULTI"}, {"SET", "x", "2"}, {"INCR", "k"}, {"EXEC"},
		{"MULTI"}, {"GET", "k"}, {"DISCARD"},
		{"MULTI"}, {"NOSUCH"}, {"EXEC"},
		{"MULTI"}, {"GET"}, {"EXEC"},
		{"WATCH", "k"}, {"MULTI"}, {"PING"}, {"EXEC"},
		{"EVAL", "redis.call('set','y','1') return 1", "0"},
		{"EVAL", "return 1", "x"},
		{"EVAL", "error('x')", "0"},
		{"EVALSHA", "abc", "0"},
		{"SCRIPT", "LOAD", "return 1"},
		{"EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "0"},
		{"EVAL_RO", "return redis.call('get','k')", "0"},
		{"MULTI"}, {"EVAL", "return redis.call('get','k')", "0"}, {"EXEC"},
		{"FUNCTION", "LOAD", "#!lua name=mon\nredis.register_function('mf', function() return redis.call('set','foo','bar') end)"},
		{"FCALL", "mf", "0"}, {"FCALL", "nosuch", "0"}, {"FUNCTION", "DELETE", "mon"},
		{"CONFIG", "GET", "maxmemory"}, {"CONFIG", "HELP"},
		{"SLOWLOG", "LEN"}, {"SLOWLOG", "HELP"}, {"LATENCY", "LATEST"},
		{"CLIENT", "LIST"}, {"CLIENT", "ID"},
		{"AUTH", "secretpw"},
		{"AUTH", "someone", "secretpw2"},
		{"HELLO", "2", "AUTH", "default", "secretpw"},
		{"DEBUG", "SLEEP", "0"},
	} {
		a.do(step...)
	}
	// A blocked command is shown once, when it first runs, not again when it is served.
	sendRaw(t, a, "BLPOP", "list", "0")
	waitPeerBlocked(t, b, 1)
	b.do("RPUSH", "list", "v")
	if r := replyWithin(a, 2*time.Second); !strings.Contains(r, "list") {
		t.Fatalf("BLPOP was not served: %q", r)
	}
	sendRaw(t, a, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
	waitPeerBlocked(t, b, 1)
	b.do("XADD", "s", "1-1", "f", "v")
	replyWithin(a, 2*time.Second)
	b.do("ECHO", "end-of-session")

	ts := regexp.MustCompile(`^\+\d+\.\d+ \[0 [^\]]*\] `)
	var lines []string
	br := bufio.NewReader(mon.c)
	_ = mon.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		l, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading MONITOR: %v (so far %q)", err, lines)
		}
		l = strings.TrimRight(l, "\r\n")
		l = ts.ReplaceAllString(l, "")
		if strings.Contains(l, "end-of-session") {
			break
		}
		if strings.HasPrefix(l, `"FLUSHALL"`) || strings.HasPrefix(l, `"INFO"`) {
			continue // set-up, and waitPeerBlocked's polls, whose number varies
		}
		lines = append(lines, l)
	}
	return strings.Join(lines, "\n")
}

// The slow log keeps commands as Redis does: passwords of AUTH, HELLO AUTH and MIGRATE
// AUTH/AUTH2 redacted.
func TestSlowlogRedactsPasswordsLikeRedis(t *testing.T) {
	_, iocacheAddr := startServer(t, nil)
	redisAddr := startRedisPeer(t)
	entries := func(addr string) string {
		p := dialPeer(t, addr)
		p.do("CONFIG", "SET", "slowlog-log-slower-than", "0")
		p.do("SLOWLOG", "RESET")
		p.do("AUTH", "secretpw")
		p.do("AUTH", "someone", "secretpw")
		p.do("HELLO", "2", "AUTH", "default", "secretpw")
		p.do("CONFIG", "SET", "slowlog-log-slower-than", "-1")
		var args []string
		for _, l := range strings.Split(p.do("SLOWLOG", "GET", "10"), "\r\n") {
			// Keep the logged arguments: bulk strings that are neither addresses nor names.
			if l != "" && !strings.HasPrefix(l, "$") && !strings.HasPrefix(l, "*") && !strings.HasPrefix(l, ":") && !strings.Contains(l, "127.0.0.1") {
				args = append(args, l)
			}
		}
		return strings.Join(args, " ")
	}
	want, got := entries(redisAddr), entries(iocacheAddr)
	if want != got {
		t.Errorf("SLOWLOG GET:\n redis:   %s\n iocache: %s", want, got)
	}
	if strings.Contains(got, "secretpw") {
		t.Errorf("a password reached the slow log: %s", got)
	}
}

// EXEC is not in the slow log, the commands it ran are (Redis flags EXEC skip_slowlog).
func TestSlowlogSkipsExecLikeRedis(t *testing.T) {
	_, iocacheAddr := startServer(t, nil)
	redisAddr := startRedisPeer(t)
	logged := func(addr string) string {
		p := dialPeer(t, addr)
		p.do("CONFIG", "SET", "slowlog-log-slower-than", "0")
		p.do("SLOWLOG", "RESET")
		p.do("MULTI")
		p.do("SET", "k", "v")
		p.do("EXEC")
		p.do("CONFIG", "SET", "slowlog-log-slower-than", "-1")
		var names []string
		for _, l := range strings.Split(p.do("SLOWLOG", "GET", "10"), "\r\n") {
			if l == "SET" || l == "EXEC" || l == "MULTI" || l == "CONFIG" || l == "SLOWLOG" {
				names = append(names, l)
			}
		}
		return strings.Join(names, " ")
	}
	want, got := logged(redisAddr), logged(iocacheAddr)
	if want != got || !strings.Contains(want, "SET") {
		t.Errorf("SLOWLOG GET:\n redis:   %s\n iocache: %s", want, got)
	}
}
