package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/iocache/iocache/server/config"
)

// TestBenchSpaceIsApartFromUserData checks each way a guest's work could reach the user: keys,
// DBSIZE, hit/miss counters, keyspace events, WATCH, and the commands a guest may not send.
func TestBenchSpaceIsApartFromUserData(t *testing.T) {
	_, addr := startServer(t, func(c *config.Config) {
		c.NotifyKeyspaceEvents = "KEA"
		c.BenchSpaceMaxMemory = 1 << 20
	})
	user := redisClient(t, addr, 2)
	if err := user.Set(ctx(), "key:000000000001", "user's", 0).Err(); err != nil {
		t.Fatal(err)
	}
	events := user.PSubscribe(ctx(), "__key*__:*")
	defer events.Close()
	if _, err := events.Receive(ctx()); err != nil {
		t.Fatal(err)
	}
	watcher := dialRaw(t, addr)
	watcher.send("WATCH key:000000000001\r\n")
	expectLine(t, watcher, "+OK")
	statsBefore := user.Info(ctx(), "stats").Val()

	guest := dialRaw(t, addr)
	guest.send("BENCHSPACE ENTER\r\n")
	expectLine(t, guest, "+OK")
	guest.send("GET key:000000000001\r\n")
	expectLine(t, guest, "$-1") // the user's key is not in the bench space
	guest.send("SET key:000000000001 guest\r\nGET key:000000000001\r\nINCR n\r\nLPUSH l a b\r\nDBSIZE\r\n")
	for _, want := range []string{"+OK", "$5", "guest", ":1", ":2", ":3"} {
		expectLine(t, guest, want)
	}
	// A list written again, in other commands: its length grows (the write must survive the
	// bench space's own memory check in the middle of the command).
	guest.send("LPUSH l c\r\nLPUSH l d e\r\n")
	for _, want := range []string{":3", ":5"} {
		expectLine(t, guest, want)
	}
	for _, cmd := range []string{"SELECT 0", "KEYS *", "FLUSHALL", "MULTI", "CONFIG GET maxmemory"} {
		guest.send(cmd + "\r\n")
		if got := guest.line(); !strings.HasPrefix(got, "-ERR '") || !strings.Contains(got, "not available in the bench space") {
			t.Errorf("%s from a guest: %q", cmd, got)
		}
	}

	if v := user.Get(ctx(), "key:000000000001").Val(); v != "user's" {
		t.Errorf("user's key is %q after the guest's SET", v)
	}
	if n := user.DBSize(ctx()).Val(); n != 1 {
		t.Errorf("DBSIZE %d for the user, want 1: guest keys leaked in", n)
	}
	if ks := user.Info(ctx(), "keyspace").Val(); !strings.Contains(ks, "db0:keys=1,") || strings.Count(ks, "keys=") != 1 {
		t.Errorf("INFO keyspace shows the bench space: %q", ks)
	}
	statsAfter := user.Info(ctx(), "stats").Val()
	for _, f := range []string{"keyspace_hits", "keyspace_misses", "evicted_keys"} {
		// The user's GET and DBSIZE above read the user's key once: one hit more, nothing else.
		want := infoField(statsBefore, f)
		if f == "keyspace_hits" {
			want++
		}
		if got := infoField(statsAfter, f); got != want {
			t.Errorf("%s: %d, want %d: the guest's reads leaked into the user's statistics", f, got, want)
		}
	}
	stats := user.Do(ctx(), "BENCHSPACE", "STATS").String()
	for _, want := range []string{"benchspace_guests:1", "benchspace_keys:3", "benchspace_hits:1", "benchspace_misses:1"} {
		if !strings.Contains(stats, want) {
			t.Errorf("BENCHSPACE STATS lacks %s: %s", want, stats)
		}
	}
	// The WATCHed key was not touched: EXEC succeeds.
	watcher.send("MULTI\r\nPING\r\nEXEC\r\n")
	for _, want := range []string{"+OK", "+QUEUED", "*1", "+PONG"} {
		expectLine(t, watcher, want)
	}
	if msg, err := events.ReceiveTimeout(ctx(), 200*time.Millisecond); err == nil {
		t.Errorf("a guest's write fired a keyspace event: %v", msg)
	}

	// Over its bound the space evicts its own keys; a value that cannot fit is refused.
	big := strings.Repeat("x", 2<<20)
	guest.send("*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$" + itoa(int64(len(big))) + "\r\n" + big + "\r\n")
	if got := guest.line(); !strings.HasPrefix(got, "-OOM the value does not fit the bench space") {
		t.Errorf("a value larger than the bench space: %q", got)
	}
	for i := range 3000 {
		guest.send("SET k" + strings.Repeat("0", 4) + itoa(int64(i)) + " " + strings.Repeat("v", 1000) + "\r\n")
		expectLine(t, guest, "+OK")
	}
	stats = user.Do(ctx(), "BENCHSPACE", "STATS").String()
	if infoField(stats, "benchspace_evicted_keys") == 0 || infoField(stats, "benchspace_used_memory") > 1<<20 {
		t.Errorf("3 MB of writes into a 1 MB bench space: %s", stats)
	}
	if n := user.DBSize(ctx()).Val(); n != 1 {
		t.Errorf("the user's DBSIZE is %d after the guest filled its space", n)
	}

	// The last guest leaving drops the space.
	guest.c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(user.Do(ctx(), "BENCHSPACE", "STATS").String(), "benchspace_keys:0") {
		if time.Now().After(deadline) {
			t.Fatalf("bench space not dropped after its last guest left: %s", user.Do(ctx(), "BENCHSPACE", "STATS").String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestBenchSpaceDisabledAndErrors(t *testing.T) {
	_, addr := startServer(t, func(c *config.Config) { c.BenchSpaceMaxMemory = 0 })
	c := dialRaw(t, addr)
	c.send("BENCHSPACE ENTER\r\n")
	expectLine(t, c, "-ERR the bench space is disabled (benchspace-maxmemory is 0)")
	c.send("BENCHSPACE NOPE\r\n")
	if got := c.line(); !strings.HasPrefix(got, "-ERR unknown subcommand 'nope'") {
		t.Errorf("unknown subcommand: %q", got)
	}
	c.send("MULTI\r\nBENCHSPACE ENTER\r\n")
	expectLine(t, c, "+OK")
	if got := c.line(); !strings.Contains(got, "not allowed") && !strings.Contains(got, "MULTI") {
		t.Errorf("BENCHSPACE ENTER inside MULTI: %q", got)
	}
}

func expectLine(t *testing.T, c *rawConn, want string) {
	t.Helper()
	if got := c.line(); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func infoField(info, name string) int64 {
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimRight(line, "\r"), ":"); ok && k == name {
			n, _ := parseInt([]byte(v))
			return n
		}
	}
	return -1
}
