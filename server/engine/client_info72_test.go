package engine

import (
	"strings"
	"testing"

	"github.com/iocache/iocache/server/config"
)

// TestClientSetInfoAndNoTouch: what iocache's version (7.2.5) promises clients that choose
// features by it. CLIENT SETINFO's lib-name and lib-ver are shown by CLIENT LIST and CLIENT
// INFO, and CLIENT NO-TOUCH keeps a client's reads from counting for LRU/LFU, TOUCH excepted
// (with allkeys-lfu, the first access of a new key always raises its counter from 5 to 6).
func TestClientSetInfoAndNoTouch(t *testing.T) {
	_, addr := startServer(t, func(c *config.Config) { c.MaxMemoryPolicy = "allkeys-lfu" })
	c := dialPeer(t, addr)
	c.do("CLIENT", "SETINFO", "lib-name", "go-redis(test)")
	c.do("CLIENT", "SETINFO", "lib-ver", "9.7.0")
	if info := c.do("CLIENT", "INFO"); !strings.Contains(info, " lib-name=go-redis(test) lib-ver=9.7.0") {
		t.Errorf("CLIENT INFO: %q", info)
	}
	if got := c.do("CLIENT", "SETINFO", "lib-name", "has space"); !strings.HasPrefix(got, "-ERR lib-name cannot contain spaces") {
		t.Errorf("SETINFO with a space: %q", got)
	}
	c.do("SET", "k", "v")
	freq := func() string { return c.do("OBJECT", "FREQ", "k") }
	start := freq()
	if got := c.do("CLIENT", "NO-TOUCH", "ON"); got != "+OK\r\n" {
		t.Fatalf("CLIENT NO-TOUCH ON: %q", got)
	}
	if info := c.do("CLIENT", "INFO"); !strings.Contains(info, " flags=T ") {
		t.Errorf("no T flag: %q", info)
	}
	c.do("GET", "k")
	if got := freq(); got != start {
		t.Errorf("a GET under NO-TOUCH moved the LFU counter: %s -> %s", start, got)
	}
	c.do("TOUCH", "k")
	touched := freq()
	if touched == start {
		t.Errorf("TOUCH under NO-TOUCH did not count: %s", touched)
	}
	c.do("CLIENT", "NO-TOUCH", "OFF")
	if got := c.do("CLIENT", "NO-TOUCH", "MAYBE"); !strings.HasPrefix(got, "-ERR syntax error") {
		t.Errorf("NO-TOUCH MAYBE: %q", got)
	}
}
