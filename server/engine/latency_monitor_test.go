package engine

import (
	"regexp"
	"strings"
	"testing"

	"github.com/iocache/iocache/server/config"
)

// With the latency monitor off (Redis's default), LATENCY's subcommands and SCRIPT DEBUG answer
// as redis-server 7.0 does, byte for byte.
func TestLatencyMonitorOffMatchesRedis(t *testing.T) {
	_, addr := startServer(t, nil)
	differential(t, addr, split(
		"LATENCY DOCTOR", "LATENCY DOCTOR x", "LATENCY GRAPH", "LATENCY GRAPH command", "LATENCY LATEST",
		"LATENCY HISTORY command", "LATENCY RESET", "LATENCY RESET command", "LATENCY HELP",
		"SCRIPT DEBUG NO", "SCRIPT DEBUG no", "SCRIPT DEBUG foo", "SCRIPT DEBUG", "SCRIPT DEBUG a b", "SCRIPT HELP",
	))
}

// With latency-monitor-threshold set, a command that takes longer is recorded as Redis records
// it: LATEST, HISTORY, DOCTOR and GRAPH have Redis's shape and words (times and figures aside),
// and RESET forgets the event.
func TestLatencyMonitorMatchesRedis(t *testing.T) {
	_, addr := startServer(t, func(c *config.Config) { c.EnableDebugCommand = "yes" })
	r, i := dialPeer(t, startRedisPeer(t, "--enable-debug-command", "yes")), dialPeer(t, addr)
	digits := regexp.MustCompile(`\d+`)
	for _, p := range []*peerConn{r, i} {
		p.do("CONFIG", "SET", "latency-monitor-threshold", "20")
		p.do("DEBUG", "SLEEP", "0.03")
	}
	for _, cmd := range [][]string{
		{"LATENCY", "LATEST"}, {"LATENCY", "HISTORY", "command"}, {"LATENCY", "DOCTOR"},
		{"LATENCY", "GRAPH", "command"}, {"LATENCY", "GRAPH", "nosuch"}, {"LATENCY", "RESET", "COMMAND", "nosuch"},
		{"LATENCY", "LATEST"}, {"LATENCY", "DOCTOR"},
	} {
		want, got := r.do(cmd...), i.do(cmd...)
		if digits.ReplaceAllString(want, "N") != digits.ReplaceAllString(got, "N") {
			t.Errorf("%v:\n redis:   %q\n iocache: %q", cmd, want, got)
		}
	}
}

// SCRIPT DEBUG YES and SYNC would start Redis's Lua debugger, which iocache does not have: they
// are refused, saying so, rather than answered OK and ignored.
func TestScriptDebugRefusesTheDebugger(t *testing.T) {
	_, addr := startServer(t, nil)
	p := dialPeer(t, addr)
	for _, mode := range []string{"YES", "sync"} {
		if got := p.do("SCRIPT", "DEBUG", mode); !strings.HasPrefix(got, "-ERR SCRIPT DEBUG YES and SYNC are not supported") {
			t.Errorf("SCRIPT DEBUG %s: %q", mode, got)
		}
	}
	if got := p.do("EVAL", "return 1", "0"); got != ":1\r\n" {
		t.Errorf("EVAL after a refused SCRIPT DEBUG: %q", got)
	}
}
