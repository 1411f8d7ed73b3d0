package backup_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/iocache/iocache/server/backup"
	"github.com/iocache/iocache/server/testpeer"
)

// The servers these tests back up and restore are real processes: iocache-server built from
// this tree, and Debian's redis-server.

var (
	buildOnce sync.Once
	buildDir  string
	serverBin string
	buildErr  error
)

// TestMain removes the server binary the tests built: nothing is left in the temporary folder.
func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

func iocacheBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "iocache-backup-test")
		if err != nil {
			buildErr = err
			return
		}
		buildDir = dir
		serverBin = filepath.Join(dir, "iocache-server")
		if out, err := exec.Command("go", "build", "-o", serverBin, "../cmd/iocache-server").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return serverBin
}

// server is a running iocache-server or redis-server.
type server struct {
	Addr string
	Dir  string
	C    *redis.Client
}

// startServer runs bin ("iocache" or "redis") with its data in dir (a new one when ""), and
// waits until it answers PING (after it loaded dump.rdb, if dir holds one).
func startServer(t *testing.T, bin, dir string, args ...string) *server {
	t.Helper()
	path := iocacheBinary(t)
	if bin == "redis" {
		path = testpeer.Require(t, "redis-server")
	}
	if dir == "" {
		dir = t.TempDir()
	}
	port := testpeer.FreePort(t)
	all := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--enable-debug-command", "yes", "--dir", dir}, args...)
	cmd := exec.Command(path, all...)
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	s := &server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Dir: dir}
	s.C = startClient(t, s.Addr, "")
	return s
}

// startClient connects to addr once it answers PING (or NOAUTH: it is up) and loaded its data.
func startClient(t *testing.T, addr, password string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Password: password, Protocol: 2, DisableIdentity: true,
		ReadTimeout: time.Minute, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := c.Ping(context.Background()).Err()
		if err == nil || strings.HasPrefix(err.Error(), "NOAUTH") {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("no server answered on %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func digestOf(t *testing.T, c *redis.Client) string {
	t.Helper()
	d, err := c.Do(context.Background(), "debug", "digest").Text()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func (s *server) digest(t *testing.T) string {
	t.Helper()
	return digestOf(t, s.C)
}

func (s *server) waitReplicaOf(t *testing.T, primary *server) {
	t.Helper()
	host, port, _ := net.SplitHostPort(primary.Addr)
	if err := s.C.Do(context.Background(), "replicaof", host, port).Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		info := s.C.Info(context.Background(), "replication").Val()
		if regexpMatch(`master_link_status:up`, info) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica's link did not come up:\n%s", info)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fill writes n keys of every type through pipelines: strings (some with a TTL), hashes, sets
// of strings and of integers, sorted sets, lists and streams, small and a few large.
func fill(t *testing.T, c *redis.Client, n int) {
	t.Helper()
	ctx := context.Background()
	const batch = 2000
	for start := 0; start < n; start += batch {
		p := c.Pipeline()
		for i := start; i < min(n, start+batch); i++ {
			k := "k:" + strconv.Itoa(i)
			switch i % 10 {
			case 0, 1, 2, 3:
				p.Set(ctx, k, "value-"+strconv.Itoa(i*7919), 0)
			case 4:
				p.Set(ctx, k, strconv.Itoa(i), time.Hour)
			case 5:
				p.HSet(ctx, k, "a", i, "b", "x"+strconv.Itoa(i), "c", "3")
			case 6:
				p.SAdd(ctx, k, "m1", "m2", strconv.Itoa(i))
			case 7:
				p.SAdd(ctx, k, 1, 2, i)
			case 8:
				p.ZAdd(ctx, k, redis.Z{Score: float64(i), Member: "a"}, redis.Z{Score: 1.5, Member: "b"})
			case 9:
				if i%1000 == 9 {
					p.XAdd(ctx, &redis.XAddArgs{Stream: k, Values: []any{"f", i}})
				} else {
					p.RPush(ctx, k, "x", i, "y")
				}
			}
		}
		if _, err := p.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	big := c.Pipeline()
	for i := range 20000 {
		big.HSet(ctx, "big:hash", "f"+strconv.Itoa(i), i)
		big.RPush(ctx, "big:list", i)
		big.ZAdd(ctx, "big:zset", redis.Z{Score: float64(i), Member: strconv.Itoa(i)})
		big.SAdd(ctx, "big:set", "m"+strconv.Itoa(i))
	}
	if _, err := big.Exec(ctx); err != nil {
		t.Fatal(err)
	}
}

func openStore(t *testing.T, s3 *testpeer.S3Server, prefix string) *backup.Store {
	t.Helper()
	st, err := backup.Open(backup.Location{Endpoint: s3.Endpoint, Bucket: s3.Bucket, Prefix: prefix, PathStyle: true, Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	return st
}
