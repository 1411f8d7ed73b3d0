package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadFileThenFlags(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "iocache.conf")
	conf := `# comment
port 7000
bind 127.0.0.1 ::1
io-threads 4
server-cpulist 0-2
bio_cpulist "3"
maxmemory 1gb
maxmemory-policy allkeys-lru
client-output-buffer-limit pubsub 64mb 16mb 30
save ""
requirepass "with space"
`
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load([]string{path, "--port", "7001", "--save", "900", "1", "--loglevel", "warning"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Port != 7001 || strings.Join(c.Bind, ",") != "127.0.0.1,::1" || c.IOThreads != 4 ||
		c.ServerCPUList != "0-2" || c.BioCPUList != "3" || c.MaxMemory != 1<<30 || c.MaxMemoryPolicy != "allkeys-lru" ||
		c.Save != "900 1" || c.LogLevel != "warning" || c.RequirePass != "with space" {
		t.Fatalf("loaded %+v", c)
	}
	if l := c.ClientOutputBufferLimit[ClassPubSub]; l.Hard != 64<<20 || l.Soft != 16<<20 || l.SoftSeconds != 30 {
		t.Fatalf("pubsub limit %+v", l)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.conf")
	_ = os.WriteFile(path, []byte("port 6379\nbogus-directive 1\n"), 0o600)
	_, err := Load([]string{path}, nil)
	var fe *FileError
	if !errors.As(err, &fe) || fe.Line != 2 || fe.Message != "Bad directive or wrong number of arguments" {
		t.Fatalf("bad directive: %v", err)
	}
	for _, args := range [][]string{
		{"--port", "70000"},
		{"--io-threads", "0"},
		{"--maxmemory-policy", "sometimes"},
		{"--server_cpulist", "3-1"},
		{"--maxmemory", "lots"},
	} {
		if _, err := Load(args, nil); err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
	if c, err := Load([]string{"--io-threads", "auto"}, nil); err != nil || c.IOThreads != 0 {
		t.Fatalf("io-threads auto: %v %v", c, err)
	}
}

func TestSetAtRuntime(t *testing.T) {
	c := New()
	if err := c.Set("io-threads", []string{"2"}, true); err != nil || c.IOThreads != 2 {
		t.Fatalf("io-threads at runtime: %v %d", err, c.IOThreads)
	}
	if err := c.Set("io-threads", []string{"129"}, true); err == nil {
		t.Fatal("io-threads 129 accepted")
	}
	if err := c.Set("cpulist-mode", []string{"relative"}, true); !errors.Is(err, ErrImmutable) {
		t.Fatalf("cpulist-mode at runtime: %v", err)
	}
	if err := c.Set("maxmemory", []string{"10mb"}, true); err != nil || c.MaxMemory != 10<<20 {
		t.Fatalf("maxmemory: %v %d", err, c.MaxMemory)
	}
	// The four lists and cpulist-mode.
	got := c.Get("*cpulist*")
	if len(got) != 5 {
		t.Fatalf("CONFIG GET *cpulist*: %v", got)
	}
}

func TestSplitArgs(t *testing.T) {
	cases := map[string][]string{
		`a b  c`:           {"a", "b", "c"},
		`"a b" 'c d'`:      {"a b", "c d"},
		`"\x41\n" 'it\'s'`: {"A\n", "it's"},
		`""`:               {""},
		`save "" `:         {"save", ""},
	}
	for in, want := range cases {
		got, err := SplitArgs(in)
		if err != nil || strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
			t.Errorf("SplitArgs(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{`"abc`, `'abc`, `"a"b`} {
		if _, err := SplitArgs(bad); err == nil {
			t.Errorf("SplitArgs(%q) accepted", bad)
		}
	}
}

// TestSaveLinesAccumulate: save lines add up as in Redis, "save \"\"" clears them, and a quoted
// list of several points is split.
func TestSaveLinesAccumulate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "save.conf")
	if err := os.WriteFile(path, []byte("save 900 1\nsave 300 10\nsave 60 10000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{path}, "900 1 300 10 60 10000"},
		{[]string{path, "--save", ""}, ""},
		{[]string{"--save", "3600 1 300 100"}, "3600 1 300 100"},
		{[]string{"--save", "3600", "1", "--save", "60", "5"}, "3600 1 60 5"},
		{nil, "3600 1 300 100 60 10000"},
	} {
		c, err := Load(tc.args, nil)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if c.Save != tc.want {
			t.Errorf("%v: save %q, want %q", tc.args, c.Save, tc.want)
		}
	}
	c := New()
	if err := c.Set("save", []string{"100", "1"}, true); err != nil || c.Save != "100 1" {
		t.Fatalf("CONFIG SET save replaces: %q %v", c.Save, err)
	}
}

func TestLiveAndExpected(t *testing.T) {
	for name, want := range map[string]bool{
		"maxmemory": true, "maxmemory-policy": true, "hz": true, "save": true, "benchspace-maxmemory": true,
		"port": false, "bind": false, "dir": false, "requirepass-file": false, "no-such-directive": false,
	} {
		if got := Live(name); got != want {
			t.Errorf("Live(%q) = %v, want %v", name, got, want)
		}
	}
	for _, tc := range [][3]string{
		{"maxmemory", "100mb", "104857600"},
		{"maxmemory-policy", "ALLKEYS-LRU", "allkeys-lru"},
		{"save", "900 1 300 10", "900 1 300 10"},
		{"hz", "20", "20"},
	} {
		if got, err := Expected(tc[0], tc[1]); err != nil || got != tc[2] {
			t.Errorf("Expected(%s, %s) = %q, %v; want %q", tc[0], tc[1], got, err, tc[2])
		}
	}
	if _, err := Expected("hz", "fast"); err == nil {
		t.Error("Expected(hz, fast) accepted a value the server refuses")
	}
}

// A directive iocache cannot change live may be set to the value it has (nothing to apply), as
// Redis accepts CONFIG SET bind or port to their values; Redis's immutable directives are refused
// whatever the value, as Redis refuses them.
func TestSetLiveToTheSameValue(t *testing.T) {
	c := New()
	c.Bind, c.Port = []string{"127.0.0.1", "::1"}, 7001
	for _, ok := range [][2]string{{"bind", "127.0.0.1 ::1"}, {"port", "7001"}} {
		if err := c.SetLive(ok[0], ok[1]); err != nil {
			t.Errorf("CONFIG SET %s %q (its value): %v", ok[0], ok[1], err)
		}
	}
	for _, refused := range [][2]string{{"bind", "0.0.0.0"}, {"port", "7002"}, {"daemonize", "no"}, {"databases", "16"}} {
		if err := c.SetLive(refused[0], refused[1]); !errors.Is(err, ErrImmutable) {
			t.Errorf("CONFIG SET %s %q: %v, want ErrImmutable", refused[0], refused[1], err)
		}
	}
}

// TestDirIsReportedAbsolute: CONFIG GET dir answers an absolute path, as Redis's getcwd does, even
// when the directive was relative.
func TestDirIsReportedAbsolute(t *testing.T) {
	c := New()
	if err := c.Set("dir", []string{"."}, false); err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Get("dir"); len(got) != 1 || got[0][1] != wd {
		t.Fatalf("CONFIG GET dir after dir . = %v, want %s", got, wd)
	}
}

// Every live directive has a default the operator can set back when the directive leaves a
// rendered config: written as a config-file value, it reads as what a fresh server reports, and
// CONFIG SET takes it, as the operator sends it (one argument unquoted, several as written).
func TestEveryLiveDirectiveHasASettableDefault(t *testing.T) {
	fresh := New()
	n := 0
	for _, name := range Names() {
		if !Live(name) {
			continue
		}
		def, ok := Default(name)
		if !ok {
			t.Errorf("Default(%s): none", name)
			continue
		}
		n++
		want := fresh.Get(name)[0][1]
		if got, err := Expected(name, def); err != nil || got != want {
			t.Errorf("Expected(%s, %s) = %q, %v; a fresh server reports %q", name, def, got, err, want)
			continue
		}
		arg := def
		if args, err := SplitArgs(def); err == nil && len(args) == 1 {
			arg = args[0]
		}
		c := New()
		if err := c.SetLive(name, arg); err != nil {
			t.Errorf("CONFIG SET %s %q (its default): %v", name, arg, err)
		} else if got := c.Get(name)[0][1]; got != want {
			t.Errorf("CONFIG SET %s %q: CONFIG GET reports %q, want %q", name, arg, got, want)
		}
	}
	if n < 100 {
		t.Errorf("only %d live directives checked", n)
	}
	for _, tc := range [][2]string{{"hz", "10"}, {"latency-monitor-threshold", "0"}, {"notify-keyspace-events", `""`},
		{"proc-title-template", `"{title} {listen-addr} {server-mode}"`}, {"save", "3600 1 300 100 60 10000"}} {
		if got, _ := Default(tc[0]); got != tc[1] {
			t.Errorf("Default(%s) = %s, want %s", tc[0], got, tc[1])
		}
	}
	for _, name := range []string{"rename-command", "user", "no-such-directive"} {
		if v, ok := Default(name); ok {
			t.Errorf("Default(%s) = %q, want none", name, v)
		}
	}
}
