package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/netio"
)

// TestIdleServerKeepsSocketsOnMainThread: with io-threads 3 and the default activation, a lightly
// loaded server serves its clients from the main thread and INFO threads says why; switching to
// "always" hands them to the I/O threads at once, and back.
func TestIdleServerKeepsSocketsOnMainThread(t *testing.T) {
	_, addr := startServer(t, func(c *config.Config) { c.IOThreads, c.IOThreadsActivation = 3, "load" })
	c := redisClient(t, addr, 2)
	for i := 0; i < 50; i++ {
		c.Incr(ctx(), "n")
	}
	time.Sleep(3 * netio.PolicyWindow)
	info := c.Info(ctx(), "threads").Val()
	th := parseInfoThreads(t, info)
	if regexpFind(`io_threads_active:(\d+)`, info) != "0" || th[0].clients != 1 || th[1].clients+th[2].clients != 0 ||
		!strings.Contains(info, "io_threads_activation_reason:the main thread has headroom") {
		t.Fatalf("idle server with io-threads 3:\n%s", info)
	}
	if err := c.ConfigSet(ctx(), "io-threads-activation", "always").Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		info = c.Info(ctx(), "threads").Val()
		th = parseInfoThreads(t, info)
		if regexpFind(`io_threads_active:(\d+)`, info) == "2" && th[0].clients == 0 && th[1].clients+th[2].clients == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("io-threads-activation always not in effect:\n%s", info)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := c.ConfigSet(ctx(), "io-threads-activation", "load").Err(); err != nil {
		t.Fatal(err)
	}
	if v := c.Incr(ctx(), "n").Val(); v != 51 {
		t.Fatalf("INCR after switching back: %d", v)
	}
}
