package scripting

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iocache/iocache/server/resp"
)

// eval loads body and runs it on st, and returns its reply as a RESP2 caller would read it.
func eval(t *testing.T, st *State, body string, keys, args []string) string {
	t.Helper()
	return evalTo(t, &resp.Writer{}, st, body, keys, args)
}

// evalTo is eval with the reply written to w.
func evalTo(t *testing.T, w *resp.Writer, st *State, body string, keys, args []string) string {
	t.Helper()
	s, errReply := st.Load([]byte(body), true)
	if errReply != "" {
		return "-" + errReply + "\r\n"
	}
	ret, errReply := st.Eval(s, bytesOf(keys), bytesOf(args))
	if errReply != "" {
		return "-" + errReply + "\r\n"
	}
	if !st.WriteReply(w, ret, 1<<20) {
		t.Fatalf("%q: reply past the bound", body)
	}
	return string(w.Buf)
}

func bytesOf(s []string) [][]byte {
	out := make([][]byte, len(s))
	for i, a := range s {
		out[i] = []byte(a)
	}
	return out
}

// redis.call hands its arguments to the host and reads the host's reply; a command the host
// refuses raises its error, with the script's SHA and line, or is pcall's error table.
func TestRedisCallGoesThroughHost(t *testing.T) {
	st, h := newTestState(t)
	h.call = func(argv []string, resp3 bool) (string, string) {
		switch argv[0] {
		case "get":
			return "$1\r\nv\r\n", ""
		case "list":
			return "*3\r\n:1\r\n$-1\r\n+OK\r\n", ""
		case "fail":
			return "-WRONGTYPE bad\r\n", ""
		}
		return "", "ERR Unknown Redis command called from script"
	}
	sha := sha1Hex([]byte("\nreturn redis.call('nosuch')"))
	for _, tc := range []struct{ body, want string }{
		{"return redis.call('get', KEYS[1], ARGV[1], 7)", "$1\r\nv\r\n"},
		{"local r = redis.call('list') return {r[1], type(r[2]), r[3].ok}", "*3\r\n:1\r\n$7\r\nboolean\r\n$2\r\nOK\r\n"},
		{"\nreturn redis.call('nosuch')", "-ERR Unknown Redis command called from script script: " + sha + ", on @user_script:2.\r\n"},
		{"return redis.pcall('nosuch')", "-ERR Unknown Redis command called from script\r\n"},
		{"return redis.pcall('fail')", "-WRONGTYPE bad\r\n"},
		{"return redis.call({})", "-ERR Lua redis lib command arguments must be strings or integers script: " + sha1Hex([]byte("return redis.call({})")) + ", on @user_script:1.\r\n"},
	} {
		if got := eval(t, st, tc.body, []string{"k"}, []string{"a"}); got != tc.want {
			t.Errorf("%q:\n got %q\nwant %q", tc.body, got, tc.want)
		}
	}
	if want := []string{"get", "k", "a", "7"}; !slices.Equal(h.calls[0], want) {
		t.Errorf("the host got %q, want %q", h.calls[0], want)
	}
}

// redis.setresp(3) asks the host for RESP3 replies, converts RESP3's types, and makes the
// script's booleans RESP3's (for a RESP3 caller); the next script starts in RESP2 again.
func TestSetRespThree(t *testing.T) {
	st, h := newTestState(t)
	var asked []bool
	h.call = func(argv []string, resp3 bool) (string, string) {
		asked = append(asked, resp3)
		return "%1\r\n$1\r\na\r\n,1.5\r\n", ""
	}
	got := evalTo(t, &resp.Writer{RESP3: true}, st, "redis.call('x') redis.setresp(3) local r = redis.call('x') return {r.map.a.double, true}", nil, nil)
	if want := "*2\r\n:1\r\n#t\r\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if !slices.Equal(asked, []bool{false, true}) {
		t.Errorf("the host was asked for RESP3 %v, want [false true]", asked)
	}
	if got := evalTo(t, &resp.Writer{RESP3: true}, st, "return true", nil, nil); got != ":1\r\n" {
		t.Errorf("the next script's true: %q, want :1", got)
	}
}

// Every error a script's reply holds, nested ones included, is written and counted by the host.
func TestWriteReplyCountsErrors(t *testing.T) {
	st, h := newTestState(t)
	got := eval(t, st, "return {1, redis.error_reply('MY bad'), {err='ERR inner\\nline'}, {ok='fine'}}", nil, nil)
	if want := "*4\r\n:1\r\n-MY bad\r\n-ERR inner line\r\n+fine\r\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if want := []string{"MY bad", "ERR inner line"}; !slices.Equal(h.errors, want) {
		t.Errorf("counted %q, want %q", h.errors, want)
	}
}

// The script cache: a body compiles once, EVALSHA finds it in either case, and bodies that do
// not compile or whose shebang is invalid are answered with Redis's errors and not cached.
func TestScriptCache(t *testing.T) {
	st, _ := newTestState(t)
	a, errReply := st.Load([]byte("#!lua flags=no-writes\nreturn 1"), false)
	if errReply != "" || a.Flags != Shebang|NoWrites {
		t.Fatalf("Load: %+v %q", a, errReply)
	}
	b, _ := st.Load([]byte("#!lua flags=no-writes\nreturn 1"), false)
	if b != a {
		t.Errorf("loading the same body again gave %+v, want %+v", b, a)
	}
	if s, ok := st.Lookup([]byte(strings.ToUpper(a.SHA))); !ok || s != a {
		t.Errorf("Lookup in upper case: %+v %v", s, ok)
	}
	if _, ok := st.Lookup([]byte(sha1Hex([]byte("return 2")))); ok {
		t.Error("Lookup found a script never loaded")
	}
	for body, want := range map[string]string{
		"return +":            "ERR Error compiling script (new function): user_script:1: syntax error near '+'",
		"#!lua flags=bogus\n": "ERR Unexpected flag in script shebang: bogus",
		"#!lua":               "ERR Invalid script shebang",
	} {
		if _, errReply := st.Load([]byte(body), true); errReply != want {
			t.Errorf("Load(%q): %q, want %q", body, errReply, want)
		}
	}
	if len(st.scripts) != 1 {
		t.Errorf("%d scripts cached, want 1", len(st.scripts))
	}
}

// Scripts only EVAL loaded are evicted past the most recent maxEvalScripts, least recently used
// first, as Redis 7.4 evicts them; one SCRIPT LOAD loaded (before or after its EVAL) stays, and
// the cache's byte counts fall with what it evicts.
func TestScriptCacheEvictsEvalScripts(t *testing.T) {
	st, _ := newTestState(t)
	body := func(i int) []byte { return []byte(fmt.Sprintf("return %d", i)) }
	kept, _ := st.Load([]byte("return 'loaded'"), false)
	promoted, _ := st.Load(body(0), true)
	st.Load(body(0), false) // SCRIPT LOAD of a script EVAL brought in: it stays now
	first, _ := st.Load(body(1), true)
	_, code1, entries1 := st.CacheStats()
	for i := 2; i <= 3*maxEvalScripts; i++ {
		st.Load(body(i), true)
		if i%100 == 0 {
			st.Used(first.SHA) // EVALSHA keeps it recent
		}
	}
	scripts, code, entries := st.CacheStats()
	if scripts != maxEvalScripts+2 {
		t.Errorf("%d scripts cached, want %d EVAL ones and 2 loaded", scripts, maxEvalScripts)
	}
	if st.Evicted() != int64(3*maxEvalScripts-maxEvalScripts) {
		t.Errorf("%d evicted, want %d", st.Evicted(), 2*maxEvalScripts)
	}
	for _, s := range []Script{kept, promoted, first} {
		if _, ok := st.Lookup([]byte(s.SHA)); !ok {
			t.Errorf("script %s was evicted", s.SHA)
		}
	}
	if _, ok := st.Lookup([]byte(sha1Hex(body(2)))); ok {
		t.Error("the oldest EVAL script is still cached")
	}
	if code > code1*int64(maxEvalScripts+2) || entries > entries1*int64(maxEvalScripts+2) {
		t.Errorf("the cache counts %d bytes of code and %d of entries for %d scripts", code, entries, scripts)
	}
}

// The sandbox: globals and library tables are read-only, and what a script could use to reach
// the system is not there.
func TestSandbox(t *testing.T) {
	st, _ := newTestState(t)
	for body, want := range map[string]string{
		"x = 1":                         "Attempt to modify a readonly table",
		"string.len = nil":              "Attempt to modify a readonly table",
		"rawset(_G, 'x', 1)":            "Attempt to modify a readonly table",
		"return os":                     "Script attempted to access nonexistent global variable 'os'",
		"return io":                     "Script attempted to access nonexistent global variable 'io'",
		"return require":                "Script attempted to access nonexistent global variable 'require'",
		"return unpack({}, 1, 1e9)":     "too many results to unpack",
		"return loadstring('return 1')": "",
	} {
		got := eval(t, st, body, nil, nil)
		if want == "" && strings.HasPrefix(got, "-") || want != "" && !strings.Contains(got, want) {
			t.Errorf("%q: %q, want %q", body, got, want)
		}
	}
}

// A run past the host's time limit goes on, calling Busy about every millisecond, until Busy
// kills it: it ends with Redis's SCRIPT KILL error, which pcall cannot catch, and the host is
// asked to give the memory back. A run under the limit never calls Busy. Strings built in one
// step are bounded by proto-max-bulk-len.
func TestLimits(t *testing.T) {
	st, h := newTestState(t)
	h.limits = Limits{Time: 50 * time.Millisecond, MaxBulkLen: 100}
	h.onBusy = func() {
		if h.busy == 20 {
			st.Kill()
		}
	}
	for _, body := range []string{"while true do end", "local n = 0\nwhile true do n = n + 1 pcall(function() while true do end end) end"} {
		h.busy = 0
		start := time.Now()
		got := eval(t, st, body, nil, nil)
		if !strings.HasPrefix(got, "-ERR Script killed by user with SCRIPT KILL... script: ") || !strings.HasSuffix(got, ", on @user_script:"+strconv.Itoa(strings.Count(body, "\n")+1)+".\r\n") {
			t.Errorf("%q: %q", body, got)
		}
		if d := time.Since(start); d < 60*time.Millisecond || d > 5*time.Second || h.busy != 20 {
			t.Errorf("%q: killed after %v, %d calls of Busy", body, d, h.busy)
		}
	}
	if h.background != 2 {
		t.Errorf("%d background jobs after two killed runs, want 2", h.background)
	}
	h.busy = 0
	if got := eval(t, st, "for i = 1, 1000 do end return 1", nil, nil); got != ":1\r\n" || h.busy != 0 {
		t.Errorf("short run: %q, %d calls of Busy", got, h.busy)
	}
	// A library's top level is not served: it stops at Redis's load timeout.
	h.onBusy, h.limits.MaxBulkLen = nil, 512<<20
	start := time.Now()
	if _, errText := st.LoadLibrary([]byte("#!lua name=lib\nlocal a = 1\nwhile 1 do a = a + 1 end")); errText != "ERR Error registering functions: ERR FUNCTION LOAD timeout" || h.busy != 0 {
		t.Errorf("endless library: %q, %d calls of Busy", errText, h.busy)
	}
	if d := time.Since(start); d < loadTimeout || d > 5*time.Second {
		t.Errorf("library stopped after %v", d)
	}
	h.limits.MaxBulkLen = 100
	for body, want := range map[string]string{
		"return string.rep('x', 100)":                                     "$100\r\n",
		"return string.rep('x', 101)":                                     "string exceeds maximum allowed size (proto-max-bulk-len)",
		"return table.concat({string.rep('x', 60), string.rep('x', 60)})": "string exceeds maximum allowed size (proto-max-bulk-len)",
		"return string.format('%100d', 1)":                                "invalid format (width or precision too long)",
	} {
		if got := eval(t, st, body, nil, nil); !strings.Contains(got, want) {
			t.Errorf("%q: %q, want %q", body, got, want)
		}
	}
	if h.background != 3 {
		t.Errorf("%d background jobs after runs that were not stopped, want still 3", h.background)
	}
}

// redis.log and redis.acl_check_cmd reach the host.
func TestLogAndACLCheck(t *testing.T) {
	st, h := newTestState(t)
	eval(t, st, "redis.log(redis.LOG_WARNING, 'a', 1) redis.log(7, 'b') redis.log(redis.LOG_DEBUG, 'c')", nil, nil)
	if want := []string{"3 a 1", "2 b", "0 c"}; !slices.Equal(h.logs, want) {
		t.Errorf("logged %q, want %q", h.logs, want)
	}
	h.allowed = true
	if got := eval(t, st, "return redis.acl_check_cmd('get', 'k')", nil, nil); got != ":1\r\n" {
		t.Errorf("allowed: %q", got)
	}
	if got := eval(t, st, "return redis.acl_check_cmd('nosuch')", nil, nil); !strings.HasPrefix(got, "-ERR Invalid command passed to redis.acl_check_cmd() script: ") {
		t.Errorf("unknown command: %q", got)
	}
}
