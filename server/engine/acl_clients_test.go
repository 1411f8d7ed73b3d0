package engine

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/testpeer"
)

// Real clients log in as ACL users: go-redis (HELLO 3 AUTH and AUTH user pass) and Debian's
// redis-cli (--user --pass), and get Redis's NOPERM for what the user may not do.
func TestACLWithRealClients(t *testing.T) {
	cli := testpeer.Require(t, "redis-cli")
	_, addr := startServer(t, func(c *config.Config) {
		c.RequirePass = "adminpw"
		c.IOThreads = 2
	})
	admin := redis.NewClient(&redis.Options{Addr: addr, Password: "adminpw", DisableIdentity: true})
	t.Cleanup(func() { admin.Close() })
	if err := admin.Do(ctx(), "ACL", "SETUSER", "app", "on", ">apppw", "~cache:*", "&events", "+@read", "+@write", "-@dangerous", "+publish").Err(); err != nil {
		t.Fatal(err)
	}
	for _, proto := range []int{2, 3} {
		app := redis.NewClient(&redis.Options{Addr: addr, Username: "app", Password: "apppw", Protocol: proto, DisableIdentity: true})
		if err := app.Set(ctx(), "cache:1", "v", 0).Err(); err != nil {
			t.Fatalf("RESP%d SET as app: %v", proto, err)
		}
		if v, err := app.Get(ctx(), "cache:1").Result(); err != nil || v != "v" {
			t.Fatalf("RESP%d GET as app: %q %v", proto, v, err)
		}
		if err := app.Get(ctx(), "secret").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM this user has no permissions to access one of the keys") {
			t.Errorf("RESP%d GET of a denied key: %v", proto, err)
		}
		if err := app.FlushAll(ctx()).Err(); err == nil || err.Error() != "NOPERM this user has no permissions to run the 'flushall' command" {
			t.Errorf("RESP%d FLUSHALL: %v", proto, err)
		}
		if err := app.Publish(ctx(), "other", "x").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM this user has no permissions to access one of the channels") {
			t.Errorf("RESP%d PUBLISH to a denied channel: %v", proto, err)
		}
		if who, err := app.Do(ctx(), "ACL", "WHOAMI").Result(); err == nil {
			t.Errorf("RESP%d ACL WHOAMI without +acl: %v", proto, who)
		}
		app.Close()
		wrong := redis.NewClient(&redis.Options{Addr: addr, Username: "app", Password: "nope", Protocol: proto, DisableIdentity: true, MaxRetries: -1})
		if err := wrong.Ping(ctx()).Err(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
			t.Errorf("RESP%d wrong password: %v", proto, err)
		}
		wrong.Close()
	}

	host, port := hostPort(t, addr)
	run := func(args ...string) string {
		t.Helper()
		out, _ := exec.Command(cli, append([]string{"-h", host, "-p", port, "--no-auth-warning"}, args...)...).CombinedOutput()
		return strings.TrimSpace(string(out))
	}
	if got := run("--user", "app", "--pass", "apppw", "GET", "cache:1"); got != "v" {
		t.Errorf("redis-cli --user app GET: %q", got)
	}
	if got := run("--user", "app", "--pass", "apppw", "GET", "secret"); !strings.Contains(got, "NOPERM") {
		t.Errorf("redis-cli --user app GET secret: %q", got)
	}
	if got := run("--user", "app", "--pass", "wrong", "PING"); !strings.Contains(got, "WRONGPASS") {
		t.Errorf("redis-cli wrong password: %q", got)
	}
	if got := run("PING"); !strings.Contains(got, "NOAUTH") {
		t.Errorf("redis-cli without a password: %q", got)
	}
}
