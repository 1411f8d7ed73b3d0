package scripting

import (
	"slices"
	"strings"
	"testing"

	"github.com/iocache/iocache/server/resp"
)

func library(name string, lines ...string) []byte {
	return []byte(strings.Join(append([]string{"#!lua name=" + name}, lines...), "\n"))
}

// LoadLibrary runs a library's top level in its restricted globals and returns what it
// registered, with flags and descriptions; FCall runs a function with keys and arguments.
func TestLoadLibraryAndFCall(t *testing.T) {
	st, h := newTestState(t)
	lib, errReply := st.LoadLibrary(library("lib",
		"redis.log(redis.LOG_NOTICE, 'loading')",
		"redis.register_function('echo', function(keys, args) return {keys[1], args[1], redis.call('get', keys[1])} end)",
		"redis.register_function{function_name='ro', callback=function() return 1 end, flags={'no-writes', 'allow-oom'}, description='reads'}"))
	if errReply != "" {
		t.Fatal(errReply)
	}
	if lib.Name != "lib" || len(lib.Functions) != 2 || !slices.Equal(h.logs, []string{"2 loading"}) {
		t.Fatalf("loaded %+v, logged %q", lib, h.logs)
	}
	echo, ro := lib.Functions[0], lib.Functions[1]
	if d, ok := ro.Description(); !ok || d != "reads" || !ro.NoWrites() || !ro.AllowOOM() || echo.NoWrites() {
		t.Errorf("ro: %q %v %v %v; echo no-writes %v", d, ok, ro.NoWrites(), ro.AllowOOM(), echo.NoWrites())
	}
	if _, ok := echo.Description(); ok {
		t.Error("echo has a description")
	}
	h.call = func(argv []string, resp3 bool) (string, string) { return "$1\r\nv\r\n", "" }
	ret, errReply := st.FCall(echo, [][]byte{[]byte("k")}, [][]byte{[]byte("a")})
	w := &resp.Writer{}
	if errReply != "" || !st.WriteReply(w, ret, 1<<20) || string(w.Buf) != "*3\r\n$1\r\nk\r\n$1\r\na\r\n$1\r\nv\r\n" {
		t.Errorf("FCALL echo: %q %q", w.Buf, errReply)
	}
	if _, errReply := st.FCall(echo, nil, nil); errReply != "ERR Lua redis lib command arguments must be strings or integers script: echo, on @user_function:3." {
		t.Errorf("FCALL echo without keys: %q", errReply)
	}
}

// Libraries that cannot load are answered with Redis's errors.
func TestLoadLibraryErrors(t *testing.T) {
	st, _ := newTestState(t)
	for code, want := range map[string]string{
		"return 1":                                   "ERR Missing library metadata",
		"#!lua name=a":                               "ERR Invalid library metadata",
		"#!js name=a\n":                              "ERR Engine 'js' not found",
		"#!lua name=a-b\n":                           "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long",
		"#!lua name=a\n":                             "ERR No functions registered",
		"#!lua name=a\nlocal s = string":             "ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'string'",
		"#!lua name=a\nredis.call('ping')":           "ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'call'",
		"#!lua name=a\nreturn +":                     "ERR Error compiling function: user_function:2: syntax error near '+'",
		"#!lua name=a\nredis.register_function('f')": "ERR Error registering functions: ERR calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).",
	} {
		if _, errReply := st.LoadLibrary([]byte(code)); errReply != want {
			t.Errorf("%q:\n got %q\nwant %q", code, errReply, want)
		}
	}
	if name, errReply := LibraryName([]byte(`#!lua name="quoted"` + "\n")); name != "quoted" || errReply != "" {
		t.Errorf("LibraryName: %q %q", name, errReply)
	}
}

// The registry: function names without case, library names with; collisions between libraries;
// RESTORE's policies, which leave the registry as it was when they fail.
func TestRegistry(t *testing.T) {
	st, _ := newTestState(t)
	load := func(code []byte) *Library {
		t.Helper()
		lib, errReply := st.LoadLibrary(code)
		if errReply != "" {
			t.Fatal(errReply)
		}
		return lib
	}
	a := load(library("a", "redis.register_function('Fa', function() return 1 end)"))
	b := load(library("b", "redis.register_function('fb', function() return 1 end)"))
	var r Registry
	if r.Function("fa") != nil || r.Library("a") != nil || r.Remove("a") {
		t.Fatal("the zero Registry is not empty")
	}
	r.Add(a)
	r.Add(b)
	if r.Function("FA") != a.Functions[0] || r.Library("A") != nil {
		t.Error("function names are case-insensitive, library names are not")
	}
	clash := load(library("c", "redis.register_function('fA', function() return 1 end)"))
	if got := r.Conflicts(clash); got != "ERR Function fA already exists" {
		t.Errorf("Conflicts: %q", got)
	}
	if libs, funcs := r.Len(); libs != 2 || funcs != 2 {
		t.Errorf("Len: %d %d", libs, funcs)
	}
	a2 := load(library("a", "redis.register_function('other', function() return 1 end)"))
	if _, errReply := r.Restore([]*Library{a2}, RestoreAppend); errReply != "ERR Library a already exists" {
		t.Errorf("RESTORE APPEND over a: %q", errReply)
	}
	if _, errReply := r.Restore([]*Library{clash}, RestoreReplace); errReply != "ERR Function fA already exists" {
		t.Errorf("RESTORE REPLACE with a clash: %q", errReply)
	}
	next, errReply := r.Restore([]*Library{a2}, RestoreReplace)
	if errReply != "" || next.Function("fa") != nil || next.Function("other") == nil || next.Library("b") != b {
		t.Errorf("RESTORE REPLACE: %q", errReply)
	}
	if r.Function("fa") == nil || r.Function("other") != nil {
		t.Error("Restore changed the registry it was called on")
	}
	next, _ = r.Restore([]*Library{clash}, RestoreFlush)
	if names := libraryNames(next.Libraries()); !slices.Equal(names, []string{"c"}) {
		t.Errorf("RESTORE FLUSH left %q", names)
	}
	r.Add(a2) // replaces a
	if names := libraryNames(r.Libraries()); !slices.Equal(names, []string{"a", "b"}) || r.Function("fa") != nil {
		t.Errorf("after replacing a: %q", names)
	}
	if !r.Remove("b") || r.Function("fb") != nil {
		t.Error("Remove left b's function")
	}
}

func libraryNames(libs []*Library) []string {
	var names []string
	for _, l := range libs {
		names = append(names, l.Name)
	}
	return names
}
