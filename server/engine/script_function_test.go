package engine

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/testpeer"
)

// FUNCTION and FCALL answer as redis-server 7.0.15 does: loading (metadata, compile and
// registration errors, the restricted top level), calling (keys and arguments, read-only
// functions, errors with the function's name and line), listing, statistics, DUMP and RESTORE.
func TestFunctionsMatchRedis(t *testing.T) {
	_, addr := startServer(t, nil)
	lib := func(lines ...string) string { return strings.Join(lines, "\n") }
	cmds := [][]string{
		{"FUNCTION", "FLUSH"},
		{"FUNCTION", "LOAD", "return 1"}, {"FUNCTION", "LOAD", "#!lua"}, {"FUNCTION", "LOAD", "#!lua name=a foo=bar\n"},
		{"FUNCTION", "LOAD", "#!js name=a\n"}, {"FUNCTION", "LOAD", "#!lua name=a-b\n"}, {"FUNCTION", "LOAD", "#!lua name=a"},
		{"FUNCTION", "LOAD", "#!lua name=\n"}, {"FUNCTION", "LOAD", "#!lua name=a name=b\n"},
		{"FUNCTION", "LOAD", lib("#!lua name=a", "redis.call('ping')")},
		{"FUNCTION", "LOAD", lib("#!lua name=a", "redis.register_function('f-1', function() return 1 end)")},
		{"FUNCTION", "LOAD", lib("#!lua name=a", "redis.register_function('f', function() return 1 end)", "redis.register_function('f', function() return 1 end)")},
		{"FUNCTION", "LOAD", lib("#!lua name=a", "redis.register_function{function_name='f', callback=function() return 1 end, flags={'bad'}}")},
		{"FUNCTION", "LOAD", lib("#!lua name=a", "redis.register_function{function_name='f', callback=function() return 1 end, foo=1}")},
		{"FUNCTION", "LOAD", lib("#!lua name=a", "redis.register_function('f')")},
		{"FUNCTION", "LOAD", lib("#!lua name=a", "error('boom')")},
		{"FUNCTION", "LOAD", lib("#!lua name=a", "x = 1")},
		{"FUNCTION", "LOAD", lib("#!lua name=a", "local s = string")},
		{"FUNCTION", "LOAD", lib("#!lua name=a", "local v = redis.sha1hex")},
		{"FUNCTION", "LOAD", lib("#!lua name=a", "local v = redis.REDIS_VERSION")},
		{"FUNCTION", "LOAD", lib("#!lua name=a", "redis.log(redis.LOG_WARNING, 'loading')", "redis.register_function('f', function(keys, args) return {keys[1], args[1]} end)")},
		{"FUNCTION", "LOAD", lib("#!lua name=a", "redis.register_function('f', function() return 1 end)")},
		{"FUNCTION", "LOAD", lib("#!lua name=b", "redis.register_function('f', function() return 1 end)")},
		{"FCALL", "f", "1", "k", "v"},
		{"FUNCTION", "LIST"}, {"FUNCTION", "LIST", "WITHCODE"}, {"FUNCTION", "LIST", "LIBRARYNAME", "a*"}, {"FUNCTION", "LIST", "LIBRARYNAME", "x"},
		{"FUNCTION", "LIST", "LIBRARYNAME"}, {"FUNCTION", "LIST", "FOO"}, {"FUNCTION", "STATS"}, {"FUNCTION", "DUMP"},
		{"FUNCTION", "LOAD", "REPLACE", lib("#!lua name=a",
			"local function helper(s) return string.len(s) end",
			"redis.register_function('f', function(keys, args) return redis.call('set', keys[1], args[1]) end)",
			"redis.register_function{function_name='g', callback=function(keys, args) return redis.call('get', keys[1]) end, flags={'no-writes'}, description='reads'}",
			"redis.register_function{function_name='w', callback=function(keys, args) return redis.call('set', 'x', 1) end, flags={'no-writes'}}",
			"redis.register_function('e', function(keys, args) return redis.call('nosuch') end)",
			"redis.register_function('e2', function(keys, args) error('oops') end)",
			"redis.register_function('glob', function(keys, args) y = 1 end)",
			"redis.register_function('h', function(keys, args) return {helper(args[1]), type(keys), #keys, redis.sha1hex('x')} end)",
			"redis.register_function('k', function(keys, args) return KEYS end)",
			"redis.register_function('t', function(keys, args) return redis.error_reply('MY bad') end)",
			"redis.register_function('p', function(keys, args) return redis.pcall('incr', keys[1]) end)")},
		{"FCALL", "f", "1", "k", "v"}, {"FCALL", "g", "1", "k"}, {"FCALL_RO", "g", "1", "k"}, {"FCALL_RO", "f", "1", "k", "v"},
		{"FCALL", "w", "0"}, {"FCALL", "e", "0"}, {"FCALL", "e2", "0"}, {"FCALL", "glob", "0"}, {"FCALL", "h", "2", "a", "b", "hello"},
		{"FCALL", "k", "0"}, {"FCALL", "t", "0"}, {"FCALL", "p", "1", "k"},
		{"FCALL", "nosuch", "0"}, {"FCALL", "f", "x"}, {"FCALL", "f", "-1"}, {"FCALL", "f", "5", "a"}, {"FCALL", "nosuch", "x"}, {"FCALL", "f"},
		{"FUNCTION", "STATS"}, {"FUNCTION", "DELETE", "nosuch"}, {"FUNCTION", "KILL"}, {"FUNCTION", "FLUSH", "FOO"},
		{"FUNCTION", "DELETE", "b"}, {"FUNCTION", "LIST", "LIBRARYNAME", "b"},
		{"FUNCTION", "LOAD", lib("#!lua name=one", "redis.register_function{function_name='only', callback=function() return 'x' end, flags={'no-writes', 'allow-oom'}, description='d'}")},
		{"FUNCTION", "LIST", "LIBRARYNAME", "one", "WITHCODE"},
		{"FUNCTION", "FLUSH", "ASYNC"}, {"FUNCTION", "LIST"}, {"FUNCTION", "STATS"}, {"FUNCTION", "DUMP"},
		{"FUNCTION", "RESTORE", "bad"}, {"FUNCTION", "RESTORE", "x", "FOO"}, {"FUNCTION", "HELP"}, {"FUNCTION", "FOO"}, {"FUNCTION"},
		{"FCALL_RO", "nosuch", "0"},
	}
	differential(t, addr, cmds)
}

// FUNCTION DUMP's payload restores on the other server: a library dumped by redis-server loads
// here and the other way round, and RESTORE's policies apply.
func TestFunctionDumpCrossesWithRedis(t *testing.T) {
	_, addr := startServer(t, nil)
	r, i := dialPeer(t, startRedisPeer(t)), dialPeer(t, addr)
	code := "#!lua name=lib\nredis.register_function('hello', function(keys, args) return 'hi ' .. args[1] end) -- " + strings.Repeat("padding ", 20)
	for _, p := range []*peerConn{r, i} {
		if got := p.do("FUNCTION", "LOAD", code); got != "$3\r\nlib\r\n" {
			t.Fatalf("FUNCTION LOAD: %q", got)
		}
	}
	payload := func(p *peerConn) string {
		reply := p.do("FUNCTION", "DUMP")
		_, body, _ := strings.Cut(reply, "\r\n")
		return strings.TrimSuffix(body, "\r\n")
	}
	// (The bytes may differ where the two LZF compressors pick different matches.)
	fromRedis, fromUs := payload(r), payload(i)
	for _, step := range []struct {
		p       *peerConn
		payload string
	}{{i, fromRedis}, {r, fromUs}} {
		want := "-ERR Library lib already exists\r\n"
		if got := step.p.do("FUNCTION", "RESTORE", step.payload); got != want {
			t.Errorf("RESTORE over an existing library: %q", got)
		}
		for _, policy := range []string{"REPLACE", "FLUSH"} {
			if got := step.p.do("FUNCTION", "RESTORE", step.payload, policy); got != "+OK\r\n" {
				t.Errorf("RESTORE %s: %q", policy, got)
			}
		}
		if got := step.p.do("FCALL", "hello", "0", "you"); got != "$6\r\nhi you\r\n" {
			t.Errorf("FCALL after RESTORE: %q", got)
		}
	}
}

// Function libraries are saved in RDB files as Redis saves them: iocache's file passes
// redis-check-rdb and restores the library in redis-server, Redis's file restores it here, and
// BGSAVE and DEBUG RELOAD keep them.
func TestFunctionsPersistAcrossWithRedis(t *testing.T) {
	check := testpeer.Require(t, "redis-check-rdb")
	ioDir, redisDir := t.TempDir(), t.TempDir()
	_, addr := startServer(t, func(c *config.Config) { c.Dir = ioDir; c.EnableDebugCommand = "yes" })
	redisAddr := redisPeerIn(t, redisDir)
	i, r := dialPeer(t, addr), dialPeer(t, redisAddr)
	code := "#!lua name=lib\nredis.register_function('hello', function(keys, args) return 'hi ' .. args[1] end)"
	for _, p := range []*peerConn{i, r} {
		p.do("FUNCTION", "LOAD", code)
		p.do("SET", "k", "v")
		if got := p.do("SAVE"); got != "+OK\r\n" {
			t.Fatalf("SAVE: %q", got)
		}
	}
	if out, err := exec.Command(check, filepath.Join(ioDir, "dump.rdb")).CombinedOutput(); err != nil || !strings.Contains(string(out), "RDB looks OK!") {
		t.Fatalf("redis-check-rdb: %v\n%s", err, out)
	}
	_, ioOnRedis := startServer(t, func(c *config.Config) { c.Dir = redisDir })
	redisOnIO := redisPeerIn(t, ioDir)
	for _, a := range []string{ioOnRedis, redisOnIO} {
		p := dialPeer(t, a)
		if got := p.do("FCALL", "hello", "0", "there"); got != "$8\r\nhi there\r\n" {
			t.Errorf("FCALL on the other server's file: %q", got)
		}
		if got := p.do("GET", "k"); got != "$1\r\nv\r\n" {
			t.Errorf("GET on the other server's file: %q", got)
		}
	}
	if got := i.do("DEBUG", "RELOAD"); got != "+OK\r\n" {
		t.Fatalf("DEBUG RELOAD: %q", got)
	}
	if got := i.do("FCALL", "hello", "0", "again"); got != "$8\r\nhi again\r\n" {
		t.Errorf("FCALL after DEBUG RELOAD: %q", got)
	}
}

// Over maxmemory, a function that may write and does not allow OOM is refused as a whole, as a
// script with a shebang is; no-writes and allow-oom functions run.
func TestFunctionsUnderMaxmemoryMatchRedis(t *testing.T) {
	_, addr := startServer(t, nil)
	code := strings.Join([]string{"#!lua name=m",
		"redis.register_function('w', function(keys, args) return redis.call('set', keys[1], 'v') end)",
		"redis.register_function{function_name='r', callback=function(keys, args) return redis.call('get', keys[1]) end, flags={'no-writes'}}",
		"redis.register_function{function_name='o', callback=function(keys, args) return redis.call('set', keys[1], 'o') end, flags={'allow-oom'}}"}, "\n")
	differential(t, addr, [][]string{
		{"FUNCTION", "FLUSH"}, {"FUNCTION", "LOAD", code}, {"SET", "k", "1"}, {"CONFIG", "SET", "maxmemory", "1"},
		{"FCALL", "w", "1", "k"}, {"FCALL", "r", "1", "k"}, {"FCALL_RO", "r", "1", "k"}, {"FCALL", "o", "1", "k"}, {"GET", "k"},
		{"CONFIG", "SET", "maxmemory", "0"}, {"FCALL", "w", "1", "k"}, {"GET", "k"},
	})
}

// CLIENT PAUSE WRITE holds FCALL of a function that may write, not of a no-writes one.
func TestFunctionsUnderClientPauseWrite(t *testing.T) {
	_, addr := startServer(t, nil)
	p, q := dialPeer(t, addr), dialPeer(t, addr)
	p.do("FUNCTION", "LOAD", strings.Join([]string{"#!lua name=p",
		"redis.register_function('w', function(keys, args) return redis.call('set', keys[1], 'v') end)",
		"redis.register_function{function_name='r', callback=function(keys, args) return redis.call('get', keys[1]) end, flags={'no-writes'}}"}, "\n"))
	p.do("SET", "k", "before")
	p.do("CLIENT", "PAUSE", "300", "WRITE")
	start := time.Now()
	if got := q.do("FCALL", "r", "1", "k"); got != "$6\r\nbefore\r\n" || time.Since(start) > 200*time.Millisecond {
		t.Errorf("no-writes FCALL during the pause: %q after %v", got, time.Since(start))
	}
	if got := q.do("FCALL", "w", "1", "k"); got != "+OK\r\n" || time.Since(start) < 250*time.Millisecond {
		t.Errorf("writing FCALL answered %q after %v, before the pause ended", got, time.Since(start))
	}
}

// Function names are case-insensitive, as in Redis 7.0; library names are not.
func TestFunctionNamesIgnoreCaseAsRedis(t *testing.T) {
	_, addr := startServer(t, nil)
	lib := "#!lua name=mylib\nredis.register_function('TeSt', function() return 'hello1' end)"
	other := "#!lua name=other\nredis.register_function('test', function() return 'hello2' end)"
	upper := "#!lua name=MYLIB\nredis.register_function('x', function() return 'x' end)"
	differential(t, addr, [][]string{
		{"FUNCTION", "LOAD", lib}, {"FCALL", "TEST", "0"}, {"FCALL", "test", "0"}, {"FCALL", "TeSt", "0"},
		{"FUNCTION", "LOAD", other}, {"FUNCTION", "LOAD", upper}, {"FCALL", "X", "0"},
		{"FUNCTION", "DELETE", "mylib"}, {"FCALL", "test", "0"}, {"FUNCTION", "LOAD", other}, {"FCALL", "TEST", "0"},
	})
}

// FUNCTION LOAD and RESTORE, XGROUP CREATE and CREATECONSUMER are refused over maxmemory as in
// Redis, whose commands flag them deny-oom. iocache loaded the library, so Redis 7.0's
// unit/functions failed "verify OOM on function load and function restore" and, with the
// library and maxmemory 1 left behind, aborted on the next test's "Function f1 already exists".
func TestDenyOOMSubcommandsAsRedis(t *testing.T) {
	_, addr := startServer(t, nil)
	lib := "#!lua name=test\nredis.register_function('f1', function() return 1 end)"
	differential(t, addr, [][]string{
		{"FUNCTION", "FLUSH"}, {"FUNCTION", "LOAD", "REPLACE", lib}, {"XADD", "s", "1-1", "f", "v"},
		{"XGROUP", "CREATE", "s", "g", "$"}, {"CONFIG", "SET", "maxmemory", "1"},
		{"FUNCTION", "FLUSH"}, {"FUNCTION", "LOAD", "REPLACE", lib}, {"FUNCTION", "LIST"},
		{"XGROUP", "CREATE", "s", "g2", "$"}, {"XGROUP", "CREATECONSUMER", "s", "g", "c"},
		{"XGROUP", "SETID", "s", "g", "0"}, {"MULTI"}, {"FUNCTION", "LOAD", lib}, {"EXEC"},
		{"CONFIG", "SET", "maxmemory", "0"}, {"FUNCTION", "LOAD", lib},
	})
}

// A library's "#!lua" line is split as Redis splits it (sdssplitargs): quotes are taken off a
// name, "NAME=" is a name too, unbalanced quotes are invalid metadata (unit/functions "function
// test name with quotes" aborted the file on iocache).
func TestLibraryHeaderSplitAsRedis(t *testing.T) {
	_, addr := startServer(t, nil)
	body := "\nredis.register_function('foo', function() return 1 end)"
	var cmds [][]string
	for _, header := range []string{`#!lua name="foo"`, `#!lua NAME=foo`, `#!lua name="fo o"`, `#!lua name="foo`,
		`#!lua "name=foo"`, `#!"lua" name=foo`, `#!lua name=foo x="a b"`, `#!lua   name=foo  `, `#!lua name='foo'`} {
		cmds = append(cmds, []string{"FUNCTION", "FLUSH"}, []string{"FUNCTION", "LOAD", header + body})
	}
	differential(t, addr, cmds)
}
