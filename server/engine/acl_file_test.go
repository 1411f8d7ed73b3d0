package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iocache/iocache/server/config"
)

// Users declared in the config file, as redis-server reads the same lines.
func TestACLUsersFromConfigMatchRedis(t *testing.T) {
	lines := []string{"user alice on >p1 ~cache:* +@read", "user default on >adminpass ~* &* +@all", "user bob off"}
	redisAddr := startRedisPeerWithConfig(t, lines...)
	_, addr := startServer(t, func(c *config.Config) {
		if err := c.ReadConfig(strings.NewReader(strings.Join(lines, "\n"))); err != nil {
			t.Fatal(err)
		}
	})
	aclScript(t, redisAddr, addr, [][]string{
		{"PING"}, {"AUTH", "alice", "p1"}, {"GET", "cache:1"}, {"SET", "cache:1", "x"},
		{"AUTH", "adminpass"}, {"ACL", "LIST"}, {"CONFIG", "GET", "user"},
	})
	for _, tc := range []struct{ conf, msg string }{
		{"user alice on\nuser alice off", "Error in user declaration 'alice': Duplicate user found. A user can only be defined once in config files"},
		{"user alice on >p foo", "Error in applying operation 'foo': Syntax error"},
	} {
		cfg := config.New()
		cfg.Port, cfg.Bind, cfg.MetricsPort = 0, []string{"127.0.0.1"}, 0
		if err := cfg.ReadConfig(strings.NewReader(tc.conf)); err != nil {
			t.Fatal(err)
		}
		s, err := New(cfg)
		var fe *config.FileError
		if !errors.As(err, &fe) || fe.Message != tc.msg {
			if s != nil {
				s.closeListeners()
			}
			t.Errorf("%q: %v, want %q", tc.conf, err, tc.msg)
		}
	}
}

// An aclfile is read at start and by ACL LOAD (all or nothing, with Redis's error texts), and
// ACL SAVE writes what ACL LIST shows; user lines and an aclfile together are refused.
func TestACLFileMatchesRedis(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "users.acl")
	write := func(text string) {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("user alice on >p ~* +@all\nuser bob off\n")
	redisAddr := startRedisPeerWithConfig(t, "aclfile "+path)
	_, addr := startServer(t, func(c *config.Config) { c.ACLFile = path })
	r, i := dialPeer(t, redisAddr), dialPeer(t, addr)
	step := func(cmd ...string) {
		t.Helper()
		if want, got := normalizeRules(r.do(cmd...)), normalizeRules(i.do(cmd...)); want != got {
			t.Errorf("%q:\n redis:   %q\n iocache: %q", cmd, want, got)
		}
	}
	step("ACL", "LIST")
	write("user alice on >p ~* +@all +nosuch\nfoo bar\nuser alice off\n\n# comment\n")
	step("ACL", "LOAD")
	step("ACL", "LIST")
	write("user carol on nopass\n")
	step("ACL", "LOAD")
	step("ACL", "LIST")
	step("ACL", "SETUSER", "dave", "on", ">x", "%R~k*", "&ch", "+@hash")
	r.do("ACL", "SAVE")
	fromRedis, _ := os.ReadFile(path)
	if got := i.do("ACL", "SAVE"); got != "+OK\r\n" {
		t.Fatalf("ACL SAVE: %q", got)
	}
	fromIocache, _ := os.ReadFile(path)
	if normalizeRules(strings.ReplaceAll(string(fromRedis), "\n", "\r\n")) != normalizeRules(strings.ReplaceAll(string(fromIocache), "\n", "\r\n")) {
		t.Errorf("ACL SAVE wrote\n%s\nredis-server wrote\n%s", fromIocache, fromRedis)
	}
	step("ACL", "LOAD")
	step("ACL", "LIST")
	os.Remove(path)
	step("ACL", "LOAD")

	cfg := config.New()
	cfg.Port, cfg.Bind, cfg.MetricsPort, cfg.ACLFile = 0, []string{"127.0.0.1"}, 0, path
	_ = cfg.ReadConfig(strings.NewReader("user x on"))
	if s, err := New(cfg); err == nil || !strings.Contains(err.Error(), "define either an ACL file or declare users directly") {
		if s != nil {
			s.closeListeners()
		}
		t.Errorf("user lines with an aclfile: %v", err)
	}
}

// acl-pubsub-default decides the channels of new users, new selectors and reset, at start and
// live, as in redis-server.
func TestACLPubsubDefaultMatchesRedis(t *testing.T) {
	redisAddr := startRedisPeerWithConfig(t, "acl-pubsub-default allchannels")
	_, addr := startServer(t, func(c *config.Config) { c.ACLPubsubDefault = "allchannels" })
	var cmds [][]string
	for _, line := range []string{
		"CONFIG GET acl-pubsub-default", "ACL SETUSER u on", "ACL GETUSER u", "ACL SETUSER u resetchannels reset",
		"ACL GETUSER u", "ACL SETUSER v (~a +get)", "ACL LIST", "CONFIG SET acl-pubsub-default resetchannels",
		"ACL SETUSER w (~b +set)", "ACL SETUSER u reset", "ACL LIST", "CONFIG SET acl-pubsub-default sometimes",
	} {
		cmds = append(cmds, words(line))
	}
	aclScript(t, redisAddr, addr, cmds)
}
