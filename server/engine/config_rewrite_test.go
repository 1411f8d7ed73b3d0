package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iocache/iocache/server/config"
)

// TestConfigRewrite: a server started with a config file answers CONFIG REWRITE by writing its
// live changes into it (config.Rewrite); without a file it says so, in Redis's words.
func TestConfigRewrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "iocache.conf")
	if err := os.WriteFile(path, []byte("# kept\nhz 10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, addr := startServer(t, func(c *config.Config) { c.File = path })
	c := dialPeer(t, addr)
	c.do("CONFIG", "SET", "hz", "33")
	c.do("CONFIG", "SET", "maxmemory-policy", "volatile-ttl")
	if got := c.do("CONFIG", "REWRITE"); got != "+OK\r\n" {
		t.Fatalf("CONFIG REWRITE: %q", got)
	}
	b, _ := os.ReadFile(path)
	if text := string(b); !strings.HasPrefix(text, "# kept\nhz 33\n") || !strings.Contains(text, "\nmaxmemory-policy volatile-ttl\n") {
		t.Errorf("rewritten file:\n%s", text)
	}
	_, noFile := startServer(t, nil)
	if got := dialPeer(t, noFile).do("CONFIG", "REWRITE"); got != "-ERR The server is running without a config file\r\n" {
		t.Errorf("without a file: %q", got)
	}
}
