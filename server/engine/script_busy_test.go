package engine

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/iocache/iocache/server/config"
)

// Scripts past busy-reply-threshold, against redis-server: the same scenario runs on both, and
// every reply of every client must be the same bytes (a running function's duration_ms aside).
// A script keeps running past the threshold; other clients are answered BUSY, with the script's
// or the function's text, except the allow_busy commands, which run (MULTI, WATCH, FUNCTION
// STATS, SCRIPT KILL...); EXEC aborts its transaction; SCRIPT KILL ends a read-only script,
// FUNCTION KILL a function, each refusing the other's; a script that wrote is UNKILLABLE, and
// SHUTDOWN NOSAVE ends it with the server. iocache runs each scenario with the main thread
// serving every socket, and with an I/O thread serving them.

// busyScenario is one scenario: it drives the clients of the server at addr and returns what
// each reply was, in order.
type busyScenario func(t *testing.T, addr string) []string

func TestBusyScriptsMatchRedis(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  busyScenario
	}{
		{"read-only script, SCRIPT KILL", busyReadOnlyScript},
		{"function, FUNCTION KILL", busyFunction},
		{"script that wrote, SHUTDOWN NOSAVE", busyWritingScript},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.run(t, startRedisPeer(t))
			for _, threads := range []int{1, 2} {
				_, addr := startServer(t, func(c *config.Config) { c.IOThreads = threads })
				if got := tc.run(t, addr); !slices.Equal(got, want) {
					t.Errorf("io-threads %d:\n got %q\nwant %q", threads, got, want)
				}
			}
		})
	}
}

// busyClient is a client of a busy-script scenario; its transcript is shared with the others'.
type busyClient struct {
	*peerConn
	log *[]string
}

// do sends a command and records its reply.
func (c busyClient) do(args ...string) {
	c.t.Helper()
	*c.log = append(*c.log, strings.Join(args, " ")+" -> "+c.peerConn.do(args...))
}

// send sends a command without reading its reply.
func (c busyClient) send(args ...string) {
	c.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(c.c, b.String()); err != nil {
		c.t.Fatal(err)
	}
}

// read records the reply to what send sent, or that the connection closed without one.
func (c busyClient) read(what string) {
	c.t.Helper()
	_ = c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var r strings.Builder
	err := readRawReply(c.br, &r)
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || err != nil && strings.Contains(err.Error(), "reset by peer"):
		*c.log = append(*c.log, what+" -> closed")
	case err != nil:
		c.t.Fatalf("%s: %v", what, err)
	default:
		*c.log = append(*c.log, what+" -> "+r.String())
	}
}

// waitBusy sends PING until it is answered BUSY, and records that once.
func (c busyClient) waitBusy() {
	c.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := c.peerConn.do("PING")
		if strings.HasPrefix(got, "-BUSY ") {
			*c.log = append(*c.log, "PING -> "+got)
			return
		}
		if got != "+PONG\r\n" || time.Now().After(deadline) {
			c.t.Fatalf("PING while waiting for a busy script: %q", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func busyClients(t *testing.T, addr string, log *[]string, n int) []busyClient {
	out := make([]busyClient, n)
	for i := range out {
		out[i] = busyClient{dialPeer(t, addr), log}
	}
	return out
}

// busyReadOnlyScript: a read-only EVAL runs past the threshold; PING and GET get BUSY, as do
// FUNCTION STATS and FUNCTION KILL (a script, not a function, runs) and SHUTDOWN without NOSAVE;
// MULTI and WATCH run, a command queued then is refused and EXEC aborts; SCRIPT KILL ends the
// script, whose client gets the killed error, then its pipelined PING's PONG; the others are
// served again.
func busyReadOnlyScript(t *testing.T, addr string) []string {
	var log []string
	cl := busyClients(t, addr, &log, 3)
	a, b, c := cl[0], cl[1], cl[2]
	b.do("SET", "k", "v")
	b.do("CONFIG", "SET", "busy-reply-threshold", "200")
	a.send("EVAL", "local i = 0 while true do i = i + 1 end", "0")
	a.send("PING")
	b.waitBusy()
	b.do("GET", "k")
	b.do("FUNCTION", "STATS")
	b.do("FUNCTION", "KILL")
	b.do("SHUTDOWN")
	b.do("CLIENT", "SETNAME", "x")
	c.do("MULTI")
	c.do("INCR", "k")
	c.do("EXEC")
	c.do("PING")
	b.do("WATCH", "k")
	b.do("UNWATCH")
	b.do("SCRIPT", "KILL")
	a.read("EVAL")
	a.read("PING")
	b.do("SCRIPT", "KILL")
	b.do("PING")
	c.do("GET", "k")
	b.do("FUNCTION", "STATS")
	return log
}

var durationMs = regexp.MustCompile(`duration_ms\r\n:\d+\r\n`)

// busyFunction: a function runs past the threshold; FUNCTION STATS shows it running, SCRIPT KILL
// refuses it, FUNCTION KILL ends it.
func busyFunction(t *testing.T, addr string) []string {
	var log []string
	cl := busyClients(t, addr, &log, 2)
	a, b := cl[0], cl[1]
	b.do("CONFIG", "SET", "busy-reply-threshold", "200")
	b.do("FUNCTION", "LOAD", "#!lua name=lib\nredis.register_function('spin', function(keys, args)\n  local i = 0\n  while true do i = i + 1 end\nend)")
	a.send("FCALL", "spin", "0")
	b.waitBusy()
	b.do("FUNCTION", "STATS")
	log[len(log)-1] = durationMs.ReplaceAllString(log[len(log)-1], "duration_ms\r\n:N\r\n")
	b.do("SCRIPT", "KILL")
	b.do("FUNCTION", "KILL")
	a.read("FCALL")
	b.do("PING")
	b.do("FUNCTION", "KILL")
	b.do("FUNCTION", "STATS")
	return log
}

// busyWritingScript: a script that wrote cannot be killed; SHUTDOWN NOSAVE ends it, with the
// server: its client's connection closes without a reply, and no new connection is accepted.
func busyWritingScript(t *testing.T, addr string) []string {
	var log []string
	cl := busyClients(t, addr, &log, 2)
	a, b := cl[0], cl[1]
	b.do("CONFIG", "SET", "busy-reply-threshold", "200")
	a.send("EVAL", "redis.call('set', KEYS[1], 'y') while true do end", "1", "x")
	b.waitBusy()
	b.do("SCRIPT", "KILL")
	b.do("PING")
	b.do("SHUTDOWN")
	b.send("SHUTDOWN", "NOSAVE")
	b.read("SHUTDOWN NOSAVE")
	a.read("EVAL")
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		log = append(log, "connect after SHUTDOWN NOSAVE -> accepted")
	} else {
		log = append(log, "connect after SHUTDOWN NOSAVE -> refused")
	}
	return log
}

// What a busy script propagates, against redis-server: a read-only script killed by SCRIPT KILL
// nothing; a script that wrote, ran past the threshold while other clients were served, and
// ended, its writes as one MULTI/EXEC once it ended, with nothing of the others' commands in
// between; the commands around them as usual.
func TestBusyScriptPropagationMatchesRedis(t *testing.T) {
	stream := func(addr string) []string {
		r := attachStreamReplica(t, addr, true)
		time.Sleep(300 * time.Millisecond) // Redis starts the stream at an acknowledgement after the transfer
		r.drain(50 * time.Millisecond)
		var log []string
		cl := busyClients(t, addr, &log, 2)
		a, b := cl[0], cl[1]
		b.do("CONFIG", "SET", "busy-reply-threshold", "100")
		b.do("SET", "before", "1")
		a.send("EVAL", "local n = 0 while true do n = n + redis.call('EXISTS', KEYS[1]) end", "1", "before")
		b.waitBusy()
		b.do("SCRIPT", "KILL")
		a.read("EVAL read-only")
		a.send("EVAL", `redis.call('SET', KEYS[1], 'x')
local t = redis.call('TIME')
local start = t[1] * 1000000 + t[2]
repeat t = redis.call('TIME') until t[1] * 1000000 + t[2] - start > 400000
redis.call('INCR', KEYS[2])
return 'done'`, "2", "a", "b")
		b.waitBusy()
		b.do("WATCH", "a")
		b.do("SET", "c", "1")
		b.do("SCRIPT", "KILL")
		a.read("EVAL that wrote")
		b.do("SET", "after", "1")
		for _, c := range r.drain(200 * time.Millisecond) {
			log = append(log, "stream: "+normaliseCommand(c))
		}
		return log
	}
	want := stream(startRedisPeer(t, "--repl-diskless-sync-delay", "0"))
	_, addr := startServer(t, nil)
	if got := stream(addr); !slices.Equal(got, want) {
		t.Errorf("\n got %q\nwant %q", got, want)
	}
}

// A script that wrote and is ended by SHUTDOWN NOSAVE leaves nothing of itself in the AOF, as
// Redis exits in the middle of it: what was written before it is there, its own write is not.
func TestBusyScriptShutdownLeavesAOFWhole(t *testing.T) {
	aofOf := func(addr string) string {
		var log []string
		cl := busyClients(t, addr, &log, 2)
		a, b := cl[0], cl[1]
		dir := b.peerConn.do("CONFIG", "GET", "dir")
		dir = strings.Split(dir, "\r\n")[4]
		b.do("CONFIG", "SET", "appendonly", "yes")
		waitInfo(t, b.peerConn, "aof_rewrite_in_progress", "0")
		time.Sleep(100 * time.Millisecond)
		b.do("CONFIG", "SET", "busy-reply-threshold", "100")
		b.do("SET", "before", "1")
		a.send("EVAL", "redis.call('SET', KEYS[1], 'half') while true do end", "1", "script-key")
		b.waitBusy()
		b.send("SHUTDOWN", "NOSAVE")
		b.read("SHUTDOWN NOSAVE")
		a.read("EVAL")
		time.Sleep(100 * time.Millisecond)
		var all strings.Builder
		files, _ := filepath.Glob(filepath.Join(dir, "appendonlydir", "*"))
		for _, f := range files {
			data, _ := os.ReadFile(f)
			all.Write(data)
		}
		aof := all.String()
		return fmt.Sprintf("%q before:%v script-key:%v", log, strings.Contains(aof, "before"), strings.Contains(aof, "script-key"))
	}
	want := aofOf(startRedisPeer(t))
	_, addr := startServer(t, nil)
	if got := aofOf(addr); got != want {
		t.Errorf("\n got %s\nwant %s", got, want)
	}
	if !strings.HasSuffix(want, "before:true script-key:false") {
		t.Errorf("redis-server: %s", want)
	}
}

// On a replica, the primary's stream waits for a busy script rather than be answered BUSY (which
// the replica would drop, losing the writes), as in Redis: once SCRIPT KILL ends the script, the
// writes that arrived meanwhile are applied, and the link stays up.
func TestReplicaStreamWaitsForBusyScript(t *testing.T) {
	_, primaryAddr := startServer(t, nil)
	primary := redisClient(t, primaryAddr, 2)
	host, port, _ := net.SplitHostPort(primaryAddr)
	_, addr := startServer(t, func(c *config.Config) {
		c.ReplicaOf = host + " " + port
		c.BusyReplyThreshold = 100
	})
	replica := redisClient(t, addr, 2)
	waitFor(t, "the replica's link", func() bool {
		return strings.Contains(replica.Info(ctx(), "replication").Val(), "master_link_status:up")
	})
	var log []string
	cl := busyClients(t, addr, &log, 2)
	a, b := cl[0], cl[1]
	a.send("EVAL", "local n = 0 while true do n = n + 1 end", "0")
	b.waitBusy()
	if err := primary.Set(ctx(), "x", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the SET reaches the replica while its script is busy
	b.do("GET", "x")
	b.do("SCRIPT", "KILL")
	a.read("EVAL")
	waitFor(t, "the write to reach the replica", func() bool { return replica.Get(ctx(), "x").Val() == "1" })
	if !strings.Contains(replica.Info(ctx(), "replication").Val(), "master_link_status:up") {
		t.Error("the link went down")
	}
	if !strings.HasPrefix(log[1], "GET x -> -BUSY") || log[2] != "SCRIPT KILL -> +OK\r\n" || !strings.Contains(log[3], "Script killed by user") {
		t.Errorf("%q", log)
	}
}

// Redis's "Timedout scripts and unblocked command", which its suite skips against an external
// server: a command allowed while a script is busy (HELLO) does not serve the clients blocked on
// keys the script pushed to; the blocked BLPOP gets the element the script pushed last, once it
// ended, with the AOF on.
func TestBusyScriptDoesNotServeBlockedClients(t *testing.T) {
	scenario := func(addr string) []string {
		var log []string
		cl := busyClients(t, addr, &log, 4)
		a, blocked, hello, b := cl[0], cl[1], cl[2], cl[3]
		b.do("CONFIG", "SET", "appendonly", "yes")
		blocked.send("BLPOP", "x", "0")
		time.Sleep(100 * time.Millisecond)
		b.do("DEBUG", "SET-DISABLE-DENY-SCRIPTS", "1")
		b.do("CONFIG", "SET", "busy-reply-threshold", "100")
		a.send("EVAL", `local clients
redis.call('lpush', KEYS[1], 'y')
while true do
  clients = redis.call('client', 'list')
  if string.find(clients, 'abortscript') ~= nil then break end
end
redis.call('lpush', KEYS[1], 'z')
return 'ended'`, "1", "x")
		b.waitBusy()
		hello.send("HELLO", "2", "SETNAME", "abortscript")
		_ = hello.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		line, err := hello.br.ReadString('\n')
		log = append(log, "HELLO -> "+line+fmt.Sprint(err))
		blocked.read("BLPOP")
		a.read("EVAL")
		b.do("DEBUG", "SET-DISABLE-DENY-SCRIPTS", "0")
		b.do("LRANGE", "x", "0", "-1")
		return log
	}
	want := scenario(startRedisPeer(t, "--enable-debug-command", "yes"))
	_, addr := startServer(t, func(c *config.Config) { c.EnableDebugCommand = "yes" })
	if got := scenario(addr); !slices.Equal(got, want) {
		t.Errorf("\n got %q\nwant %q", got, want)
	}
}
