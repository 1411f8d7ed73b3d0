package engine

import (
	"regexp"
	"strings"
	"testing"
)

// monitorPrefix is the time and client part of a MONITOR line, which differs between servers.
var monitorPrefix = regexp.MustCompile(`(?m)^\+[0-9.]+ \[[0-9]+ [^\]]*\] `)

// Passwords never reach MONITOR or SLOWLOG, and administrative commands are not monitored: the
// lines are redis-server's.
func TestSecretsRedactedLikeRedis(t *testing.T) {
	redisAddr := startRedisPeer(t)
	_, addr := startServer(t, nil)
	cmds := [][]string{
		{"ACL", "SETUSER", "zed", "on", ">secretpw", "~*", "+@all"},
		{"AUTH", "zed", "secretpw"},
		{"HELLO", "2", "AUTH", "zed", "secretpw", "SETNAME", "n"},
		{"CONFIG", "SET", "requirepass", "sekrit"},
		{"AUTH", "sekrit"},
		{"CONFIG", "SET", "requirepass", ""},
		{"ACL", "WHOAMI"},
		{"SET", "k", "v"},
		{"PING", "last"},
	}
	run := func(a string) (string, string) {
		m := dialPeer(t, a)
		if got := m.do("MONITOR"); got != "+OK\r\n" {
			t.Fatalf("MONITOR: %q", got)
		}
		c := dialPeer(t, a)
		c.do("CONFIG", "SET", "slowlog-log-slower-than", "0")
		c.do("SLOWLOG", "RESET")
		for _, cmd := range cmds {
			c.do(cmd...)
		}
		var lines strings.Builder
		for !strings.HasSuffix(lines.String(), "\"PING\" \"last\"\r\n") {
			if err := readRawReply(m.br, &lines); err != nil {
				t.Fatalf("MONITOR: %v (so far %q)", err, lines.String())
			}
		}
		mon := monitorPrefix.ReplaceAllString(lines.String(), "")
		slow := c.do("SLOWLOG", "GET", "20")
		c.do("CONFIG", "SET", "slowlog-log-slower-than", "10000")
		var args []string
		for _, l := range strings.Split(slow, "\r\n") {
			if !strings.HasPrefix(l, "$") && !strings.HasPrefix(l, "*") && !strings.HasPrefix(l, ":") && !strings.Contains(l, "127.0.0.1") {
				args = append(args, l)
			}
		}
		return mon, strings.Join(args, " ")
	}
	wantMon, wantSlow := run(redisAddr)
	gotMon, gotSlow := run(addr)
	if wantMon != gotMon {
		t.Errorf("MONITOR:\n redis:   %q\n iocache: %q", wantMon, gotMon)
	}
	if wantSlow != gotSlow {
		t.Errorf("SLOWLOG:\n redis:   %q\n iocache: %q", wantSlow, gotSlow)
	}
	for _, out := range []string{gotMon, gotSlow} {
		if strings.Contains(out, "secretpw") || strings.Contains(out, "sekrit") {
			t.Errorf("a password reached MONITOR or SLOWLOG: %q", out)
		}
	}
}
