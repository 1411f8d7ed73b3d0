package engine

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/testpeer"
)

// startRedisPeerWithConfig runs redis-server on a free loopback port with extra config-file lines
// (rename-command only works from a file), the peer of tests of startup directives.
func startRedisPeerWithConfig(t *testing.T, lines ...string) string {
	t.Helper()
	bin := testpeer.Require(t, "redis-server")
	port := testpeer.FreePort(t)
	dir := t.TempDir()
	conf := fmt.Sprintf("port %d\nbind 127.0.0.1\nsave \"\"\nappendonly no\ndir %s\n%s\n", port, dir, strings.Join(lines, "\n"))
	path := filepath.Join(dir, "redis.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, path)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for i := 0; i < 100; i++ {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("redis-server did not start on %s", addr)
	return ""
}

// compareReplies sends each command to both servers on one connection each and reports replies
// that differ byte for byte.
func compareReplies(t *testing.T, redisAddr, iocacheAddr string, cmds [][]string) {
	t.Helper()
	r, i := dialPeer(t, redisAddr), dialPeer(t, iocacheAddr)
	for _, cmd := range cmds {
		want, got := r.do(cmd...), i.do(cmd...)
		if want != got {
			t.Errorf("%q:\n redis:   %q\n iocache: %q", cmd, want, got)
		}
	}
}

// A command renamed to "" is gone (the unknown-command error, also inside MULTI and scripts); one
// renamed to a new name answers only by it and keeps its flags, as in redis-server started with
// the same lines.
func TestRenameCommandMatchesRedis(t *testing.T) {
	renames := []string{`rename-command FLUSHALL ""`, `rename-command config MyConfig`, `rename-command get get2`}
	redisAddr := startRedisPeerWithConfig(t, renames...)
	redisPlain := startRedisPeer(t)
	_, plain := startServer(t, nil)
	_, addr := startServer(t, func(c *config.Config) {
		if err := c.ReadConfig(strings.NewReader(strings.Join(renames, "\n"))); err != nil {
			t.Fatal(err)
		}
	})
	compareReplies(t, redisAddr, addr, [][]string{
		{"FLUSHALL"},
		{"flushall", "async"},
		{"CONFIG", "GET", "maxmemory"},
		{"myconfig", "GET", "maxmemory-policy"},
		{"MYCONFIG", "SET", "maxmemory-policy", "allkeys-lru"},
		{"myconfig", "get", "maxmemory-policy"},
		{"SET", "k", "v"},
		{"GET", "k"},
		{"GET2", "k"},
		{"COMMAND", "INFO", "flushall"},
		{"COMMAND", "INFO", "config"},
		{"COMMAND", "GETKEYS", "get2", "k"},
		{"COMMAND", "GETKEYS", "get", "k"},
		{"MULTI"},
		{"FLUSHALL"},
		{"GET2", "k"},
		{"EXEC"},
		{"EVAL", "return redis.call('get2', 'k')", "0"},
		{"EVAL", "return redis.pcall('flushall')", "0"},
		{"CONFIG", "GET", "rename-command"},
	})
	// COMMAND COUNT counts what clients can call: one fewer than without the lines.
	count := func(a string) int {
		n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(dialPeer(t, a).do("COMMAND", "COUNT"), ":")))
		return n
	}
	if want, got := count(redisPlain)-count(redisAddr), count(plain)-count(addr); want != 1 || got != want {
		t.Errorf("COMMAND COUNT drop: redis %d, iocache %d", want, got)
	}
	// The renamed command keeps its name, flags and arity in COMMAND INFO.
	info := dialPeer(t, addr).do("COMMAND", "INFO", "get2")
	if !strings.HasPrefix(info, "*1\r\n*10\r\n$3\r\nget\r\n:2\r\n*2\r\n+readonly\r\n+fast\r\n") {
		t.Errorf("COMMAND INFO get2: %q", info)
	}
}

// The startup errors of Redis for a rename of an unknown command and onto a taken name.
func TestRenameCommandStartupErrors(t *testing.T) {
	for _, tc := range []struct{ line, msg string }{
		{"rename-command nosuch x", "No such command in rename-command"},
		{"rename-command get set", "Target command name already exists"},
		{"rename-command config|get x", "No such command in rename-command"},
	} {
		cfg := config.New()
		cfg.Port, cfg.Bind, cfg.MetricsPort = 0, []string{"127.0.0.1"}, 0
		if err := cfg.ReadConfig(strings.NewReader("port 0\n" + tc.line)); err != nil {
			t.Fatal(err)
		}
		s, err := New(cfg)
		var fe *config.FileError
		if !errors.As(err, &fe) || fe.Line != 2 || fe.Message != tc.msg || fe.Text != tc.line {
			if s != nil {
				s.closeListeners()
			}
			t.Errorf("%s: got %v, want line 2 %q", tc.line, err, tc.msg)
		}
	}
	if err := config.New().Set("rename-command", []string{"get", "x"}, true); !errors.Is(err, config.ErrUnknown) {
		t.Errorf("CONFIG SET rename-command: %v, want unknown option", err)
	}
}
