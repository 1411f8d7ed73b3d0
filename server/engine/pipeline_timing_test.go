package engine

import (
	"strconv"
	"strings"
	"testing"
)

// A pipeline reads the clock once per command: each command starts where the one before it in
// the same batch ended (commands.go). These tests check that the short cuts change nothing a
// client can see: which command a name means, and how long each command is said to take.

// TestLookupForFollowsEveryName sends, in one pipeline, names that share the cached one's
// length or letters in another case, an unknown name, and names too long to remember.
func TestLookupForFollowsEveryName(t *testing.T) {
	_, addr := startServer(t, nil)
	r := dialRaw(t, addr)
	names := []struct{ name, want string }{
		{"SET k v", "+OK"},
		{"GET k", "$1"},
		{"get k", "$1"},
		{"gEt k", "$1"},
		{"DEL k", ":1"}, // same length as GET, another command
		{"GEX k", "-ERR unknown command 'GEX', with args beginning with: 'k' "},
		{"GET k", "$-1"}, // after an unknown name of the same length
		{"PING", "+PONG"},
		{"CLIENT NO-EVICT off", "+OK"},
		{"COMMAND COUNT", ":"},
		{"ZRANGEBYSCORE z 0 1", "*0"}, // 13 bytes
		{"GEORADIUSBYMEMBER_RO g m 1 km", "*0"},
		{"GEORADIUSBYMEMBER_RO g m 1 km", "*0"}, // 20 bytes: longer than the cache, looked up each time
		{"PING", "+PONG"},
	}
	var req strings.Builder
	for _, n := range names {
		args := strings.Fields(n.name)
		req.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
		for _, a := range args {
			req.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
		}
	}
	r.send(req.String())
	for _, n := range names {
		got := r.line()
		if !strings.HasPrefix(got, n.want) {
			t.Fatalf("%s: got %q, want %q…", n.name, got, n.want)
		}
		if strings.HasPrefix(got, "$") && got != "$-1" {
			r.line() // the value
		}
	}
}

// TestPipelinedCommandTimeIsItsOwn runs a slow script and a PING in one pipeline: the PING's
// time in INFO commandstats must not include the script's, though it starts where the script
// ended; and the commands the script runs time themselves.
func TestPipelinedCommandTimeIsItsOwn(t *testing.T) {
	_, addr := startServer(t, nil)
	c := redisClient(t, addr, 2)
	const busy = `local i = 0 while i < 3000000 do i = i + 1 end redis.call('SET', 'k', i) return i`
	pipe := c.Pipeline()
	pipe.Echo(ctx(), "first") // so that the script's start is chained from it
	pipe.Eval(ctx(), busy, nil)
	pipe.Ping(ctx())
	pipe.Get(ctx(), "k")
	if _, err := pipe.Exec(ctx()); err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(ctx(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	usec := func(cmd string) int {
		v, err := strconv.Atoi(regexpFind(`cmdstat_`+cmd+`:calls=\d+,usec=(\d+),`, info))
		if err != nil {
			t.Fatalf("no %s in %s", cmd, info)
		}
		return v
	}
	eval, ping, get, set := usec("eval"), usec("ping"), usec("get"), usec("set")
	if eval < 5000 {
		t.Fatalf("the script took %d µs: too short to tell its time from the PING's", eval)
	}
	// A PING takes a few microseconds; a clock chained wrongly would give it the script's time.
	if ping > eval/10 || get > eval/10 || set > eval/10 {
		t.Errorf("eval %d µs, then ping %d µs, get %d µs, set (inside the script) %d µs: "+
			"a command after the script, or in it, was given the script's time", eval, ping, get, set)
	}
}
