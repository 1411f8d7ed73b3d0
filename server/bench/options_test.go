package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDefaults(t *testing.T) {
	o, err := parseArgs(nil)
	if err != nil {
		t.Fatal(err)
	}
	// The settings the operator runs with; docs/bench.md and the operator rely on them.
	if o.Clients != 50 || o.Threads != 2 || o.Pipeline != 1 || o.DataSize != 256 || o.Keyspace != 100000 ||
		o.RatioSet != 1 || o.RatioGet != 10 || len(o.Tests) != 1 || o.Tests[0] != "mixed" || o.Requests != 100000 {
		t.Errorf("defaults %+v", o)
	}
}

func TestParseArgs(t *testing.T) {
	o, err := parseArgs([]string{"--host", "h", "-port", "7000", "--clients", "3", "--threads", "8",
		"--ratio", "2:3", "--tests", "GET, set", "--duration", "2s", "--warmup", "1s", "--json"})
	if err != nil {
		t.Fatal(err)
	}
	if o.Host != "h" || o.Port != 7000 || o.Threads != 3 || o.RatioSet != 2 || o.RatioGet != 3 ||
		strings.Join(o.Tests, ",") != "get,set" || o.Duration != 2*time.Second || o.Requests != 0 || !o.JSON {
		t.Errorf("%+v", o)
	}
	for _, bad := range [][]string{
		{"--ratio", "1"}, {"--ratio", "0:0"}, {"--ratio", "-1:2"}, {"--tests", "nope"}, {"--tests", ","},
		{"--clients", "0"}, {"--pipeline", "0"}, {"--requests", "5", "--duration", "1s"}, {"--keyspace", "0"},
		{"--port", "0"}, {"extra"}, {"--no-such-flag"},
	} {
		if _, err := parseArgs(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestPasswordFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(path, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o, err := parseArgs([]string{"--password-file", path})
	if err != nil {
		t.Fatal(err)
	}
	if o.Password != "s3cret" {
		t.Errorf("password %q, want the file's content without its line break", o.Password)
	}
	for _, bad := range [][]string{
		{"--password-file", filepath.Join(t.TempDir(), "missing")},
		{"--password-file", path, "--password", "x"},
	} {
		if _, err := parseArgs(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
