package engine

import (
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/iocache/iocache/server/config"
)

// TestGarbageArgumentsNeverCrash sends every command in the table with random arguments (numbers
// of every sign and size, keywords of other commands, IDs, patterns, binary junk) over keys of
// every type, and requires a well-formed reply to each and a server that still answers. Commands
// that would end the test's session (SHUTDOWN, QUIT, RESET, MONITOR, SUBSCRIBE, CLIENT, CONFIG,
// HELLO, AUTH, DEBUG; SYNC and PSYNC, which turn it into a replica link; REPLICAOF, which makes
// the server a replica of a random address) or block it (blocking commands) are left out; EVAL
// gets random text, which cannot make a loop out of this pool.
func TestGarbageArgumentsNeverCrash(t *testing.T) {
	s, addr := startServer(t, func(c *config.Config) { c.IOThreads = 2 })
	p := dialPeer(t, addr)
	skip := map[string]bool{
		"shutdown": true, "quit": true, "reset": true, "monitor": true, "subscribe": true, "psubscribe": true,
		"unsubscribe": true, "punsubscribe": true, "ssubscribe": true, "sunsubscribe": true, "client": true, "config": true, "hello": true, "auth": true,
		"debug": true, "sync": true, "psync": true, "replicaof": true, "slaveof": true,
	}
	var names []string
	for name, cmd := range s.commands {
		if !skip[name] && cmd.flags&cmdBlocking == 0 {
			names = append(names, name)
		}
	}
	if len(names) < 150 {
		t.Fatalf("only %d commands to try", len(names))
	}
	pool := []string{
		"0", "1", "-1", "2", "-2", "100", "-100", "9223372036854775807", "-9223372036854775808", "9223372036854775808",
		"4294967296", "1.5", "-0.5", "inf", "-inf", "nan", "1e308", "x", "", " ", "k0", "k1", "k2", "k3", "k4",
		"COUNT", "LIMIT", "BY", "GET", "SET", "STORE", "WITHSCORES", "BLOCK", "STREAMS", "GROUP", "MATCH", "TYPE",
		"NX", "XX", "GT", "LT", "CH", "INCR", "EX", "PX", "KEEPTTL", "REV", "BYSCORE", "BYLEX", "ALPHA", "DESC",
		"LEFT", "RIGHT", "BEFORE", "AFTER", "MIN", "MAX", "WEIGHTS", "AGGREGATE", "SUM", "RANK", "MAXLEN", "MINID",
		"OVERFLOW", "FAIL", "SAT", "WRAP", "INCRBY", "i8", "u63", "i64", "#3", "~", "=", ">", "$", "*", "-", "+",
		"(1", "[a", "(", "[", "0-1", "1-*", "18446744073709551615-18446744073709551615", "w_*", "h_*->f", "#",
		"IDLE", "FORCE", "JUSTID", "MKSTREAM", "ENTRIESREAD", "NOACK", "RETRYCOUNT", "LASTID", "BIT", "BYTE",
		"\x00\xff\r\n", strings.Repeat("z", 300), "return 1", "return redis.call('get', KEYS[1])", "return {1,{2}}",
	}
	seedKeys := [][]string{
		{"SET", "k0", "10"}, {"RPUSH", "k1", "a", "b", "3"}, {"HSET", "k2", "f", "1", "g", "x"},
		{"ZADD", "k3", "1", "a", "2", "b"}, {"SADD", "k4", "1", "2", "x"}, {"XADD", "k5", "1-1", "f", "v"},
		{"XGROUP", "CREATE", "k5", "g", "0"},
	}
	seed := uint64(11)
	if n, err := strconv.ParseUint(os.Getenv("IOCACHE_GARBAGE_SEED"), 10, 64); err == nil {
		seed = n
	}
	rng := rand.New(rand.NewPCG(seed, 12))
	iterations := 30000
	if n, err := strconv.Atoi(os.Getenv("IOCACHE_GARBAGE_ITERATIONS")); err == nil && n > 0 {
		iterations = n
	}
	for i := 0; i < iterations; i++ {
		if i%500 == 0 {
			p.do("DISCARD") // leave any MULTI the random commands opened
			for _, cmd := range seedKeys {
				p.do(cmd...)
			}
		}
		name := names[rng.IntN(len(names))]
		args := []string{name}
		if rng.IntN(4) == 0 && strings.Contains("getbit setbit bitfield bitcount", name) {
			args = append(args, "k0")
		}
		for n := rng.IntN(7); n > 0; n-- {
			args = append(args, pool[rng.IntN(len(pool))])
		}
		reply := p.do(args...) // fails the test on a closed connection or a malformed reply
		if reply == "" {
			t.Fatalf("%q: empty reply", args)
		}
		if i%1000 == 999 {
			p.do("DISCARD")
			if pong := p.do("PING"); pong != "+PONG\r\n" {
				t.Fatalf("after %q: PING answered %q", args, pong)
			}
		}
	}
}

// TestGarbageAdminArgumentsNeverCrash does the same for the administrative containers: CONFIG SET
// of every directive to random values (except those that would lock the test out), and CLIENT
// and DEBUG subcommands that do not end, pause or silence the session.
func TestGarbageAdminArgumentsNeverCrash(t *testing.T) {
	_, addr := startServer(t, func(c *config.Config) { c.IOThreads = 2 })
	p := dialPeer(t, addr)
	raw := p.do("CONFIG", "GET", "*")
	var directives []string
	lines := strings.Split(raw, "\r\n")
	for i := 2; i < len(lines); i += 4 { // *N, then $len, name, $len, value
		// The cpulists would pin this test process's threads; a test of its own changes them live.
		if name := lines[i]; name != "" && name != "requirepass" && name != "requirepass-file" && name != "maxclients" && !strings.HasSuffix(name, "cpulist") {
			directives = append(directives, name)
		}
	}
	if len(directives) < 30 {
		t.Fatalf("CONFIG GET * listed only %d directives", len(directives))
	}
	values := []string{"0", "1", "-1", "yes", "no", "x", "", "100", "9223372036854775807", "-9223372036854775808",
		"1gb", "10mb", "0-1", "auto", "1,2", "normal 0 0 0", "pubsub 1mb 1kb 60", "allkeys-lru", "noeviction",
		"warning", "4294967296", "1 2 3", "nan", "inf"}
	clientSubs := [][]string{{"SETNAME"}, {"GETNAME"}, {"ID"}, {"INFO"}, {"LIST"}, {"LIST", "TYPE"}, {"LIST", "ID"},
		{"NO-EVICT"}, {"UNBLOCK"}, {"TRACKING"}, {"CACHING"}, {"GETREDIR"}, {"TRACKINGINFO"}, {"UNPAUSE"}, {"HELP"}, {"FOO"}}
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 5000; i++ {
		var args []string
		switch rng.IntN(3) {
		case 0:
			args = []string{"CONFIG", "SET", directives[rng.IntN(len(directives))], values[rng.IntN(len(values))]}
			if rng.IntN(4) == 0 {
				args = append(args, directives[rng.IntN(len(directives))], values[rng.IntN(len(values))])
			}
		case 1:
			args = append([]string{"CLIENT"}, clientSubs[rng.IntN(len(clientSubs))]...)
			for n := rng.IntN(4); n > 0; n-- {
				args = append(args, pick(rng, "ON", "OFF", "BCAST", "PREFIX", "OPTIN", "YES", "NO", "x", "-1", "0", "normal", "pubsub", "ERROR"))
			}
		default:
			args = []string{"DEBUG", pick(rng, "OBJECT", "SET-ACTIVE-EXPIRE", "HELP", "FOO"), pick(rng, "k0", "0", "1", "x")}
		}
		p.do(args...)
		if i%250 == 249 {
			if pong := p.do("PING"); pong != "+PONG\r\n" {
				t.Fatalf("after %q: PING answered %q", args, pong)
			}
		}
	}
}
