// Command backupbench measures backups side by side on redis-server and iocache-server holding
// the same data: how fast a snapshot leaves a replica (redis-cli --rdb to a local file, Redis's
// own tool, and iocache-server backup to an S3 server, compressed and hashed), and what a backup
// costs the primary: its write throughput and its own CPU per write with no backup, with a
// backup read from its replica, and with one read from the primary itself. Each server runs as a
// primary with one replica on loopback; versitygw (bin/versitygw, make versitygw) is the S3
// server. It prints a markdown table. `make bench` runs it; -keys changes the data set.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	keys      = flag.Int("keys", 1_000_000, "keys in each server (DEBUG POPULATE, values of -value-size bytes)")
	valueSize = flag.Int("value-size", 64, "bytes per value")
	writers   = flag.Int("writers", 2, "writer connections on the primary")
	pipeline  = flag.Int("pipeline", 16, "SETs per writer round trip")
	window    = flag.Duration("baseline", 3*time.Second, "how long to measure the primary with no backup")
	redisBin  = flag.String("redis-server", "redis-server", "redis-server binary")
	cliBin    = flag.String("redis-cli", "redis-cli", "redis-cli binary")
	ioBin     = flag.String("iocache-server", "bin/iocache-server", "iocache-server binary (also runs the backups)")
	s3Bin     = flag.String("versitygw", "bin/versitygw", "versitygw binary")
)

const (
	s3Access = "backupbench"
	s3Secret = "backupbench-secret-key"
	bucket   = "backups"
)

func main() {
	flag.Parse()
	ctx := context.Background()
	s3 := startS3()
	defer s3.stop()

	type row struct {
		server, tool, source string
		seconds              float64
		rdbBytes, stored     int64
	}
	type load struct {
		server, backup      string
		writes, cpuPerWrite float64
		seconds             float64
	}
	var rows []row
	var loads []load
	for _, srv := range []struct{ name, bin string }{{"redis-server", *redisBin}, {"iocache-server", *ioBin}} {
		progress("%s: starting a primary and a replica, populating %d keys", srv.name, *keys)
		// DEBUG POPULATE is not replicated: the replica starts after it and gets the keys by sync.
		primary := startServer(srv.bin, "")
		populate(ctx, primary)
		replica := startServer(srv.bin, primary.addr)
		waitSynced(ctx, primary, replica)
		progress("%s: replica in sync; snapshots", srv.name)
		n := primary.c.DBSize(ctx).Val()

		// Snapshot throughput from the replica, nothing else running.
		took, size := redisCLIRDB(replica.addr)
		rows = append(rows, row{srv.name, "redis-cli --rdb (to a file)", "replica", took.Seconds(), size, size})
		took, rdb, stored := ioBackup(replica.addr, s3, srv.name+"-quiet")
		rows = append(rows, row{srv.name, "iocache-server backup (zstd to S3)", "replica", took.Seconds(), rdb, stored})

		progress("%s: the primary under load", srv.name)
		// The primary under write load: no backup, a backup from the replica, one from itself.
		base := measureLoad(ctx, primary, *window, nil)
		loads = append(loads, load{srv.name, "none", base.writes, base.cpuPerWrite, base.seconds})
		for _, from := range []struct{ name, addr string }{{"from the replica", replica.addr}, {"from the primary", primary.addr}} {
			during := measureLoad(ctx, primary, 0, func() { ioBackup(from.addr, s3, fmt.Sprintf("%s-%d", srv.name, time.Now().UnixNano())) })
			loads = append(loads, load{srv.name, from.name, during.writes, during.cpuPerWrite, during.seconds})
		}
		progress("%s: %d keys measured", srv.name, n)
		replica.stop()
		primary.stop()
	}

	fmt.Printf("# Backups, side by side: %d keys of %d bytes (DEBUG POPULATE)\n\n", *keys, *valueSize)
	fmt.Printf("Each server runs as a primary with one replica on loopback; versitygw is the S3 server. Machine: %d CPUs, load %s.\n\n", runtime.NumCPU(), loadavg())
	fmt.Println("## A snapshot leaving a replica")
	fmt.Println()
	fmt.Println("| server | tool | source | seconds | RDB MB/s | keys/s | RDB | stored |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Printf("| %s | %s | %s | %.2f | %.1f | %.0f | %.1f MB | %.1f MB |\n", r.server, r.tool, r.source, r.seconds,
			float64(r.rdbBytes)/1e6/r.seconds, float64(*keys)/r.seconds, float64(r.rdbBytes)/1e6, float64(r.stored)/1e6)
	}
	fmt.Println()
	fmt.Printf("## The primary during a backup (%d writers pipelining %d SETs of random existing keys)\n\n", *writers, *pipeline)
	fmt.Println("Writes/s is the primary's throughput while the backup ran (or over the baseline window); CPU per write is the primary")
	fmt.Println("process's own CPU time (INFO cpu) divided by the writes: what the backup costs the primary itself. On a machine with")
	fmt.Println("fewer cores than processes, throughput also falls because the backup tool and the replica take CPU from the writers.")
	fmt.Println()
	fmt.Println("| server | backup | writes/s | vs no backup | primary CPU µs/write | backup took |")
	fmt.Println("|---|---|---|---|---|---|")
	var baseWrites float64
	for _, l := range loads {
		if l.backup == "none" {
			baseWrites = l.writes
		}
		took := "-"
		if l.backup != "none" {
			took = fmt.Sprintf("%.2f s", l.seconds)
		}
		fmt.Printf("| %s | %s | %.0f | %.2fx | %.2f | %s |\n", l.server, l.backup, l.writes, l.writes/baseWrites, l.cpuPerWrite*1e6, took)
	}
}

type server struct {
	addr string
	c    *redis.Client
	cmd  *exec.Cmd
	dir  string
}

func startServer(bin, primary string) *server {
	dir, err := os.MkdirTemp("", "backupbench")
	check(err)
	port := freePort()
	args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir,
		"--enable-debug-command", "yes", "--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0"}
	if strings.Contains(bin, "iocache") {
		args = append(args, "--metrics-port", "0")
	}
	if primary != "" {
		h, p, _ := net.SplitHostPort(primary)
		args = append(args, "--replicaof", h, p)
	}
	cmd := exec.Command(bin, args...)
	check(cmd.Start())
	track(cmd)
	s := &server{addr: "127.0.0.1:" + strconv.Itoa(port), cmd: cmd, dir: dir}
	s.c = redis.NewClient(&redis.Options{Addr: s.addr, Protocol: 2, ReadTimeout: 5 * time.Minute, DisableIdentity: true})
	for deadline := time.Now().Add(30 * time.Second); s.c.Ping(context.Background()).Err() != nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			fail("%s did not start", bin)
		}
	}
	return s
}

func (s *server) stop() {
	_ = s.c.Close()
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	_ = os.RemoveAll(s.dir)
}

func populate(ctx context.Context, s *server) {
	check(s.c.Do(ctx, "DEBUG", "POPULATE", *keys, "key", *valueSize).Err())
}

// waitSynced waits until the replica is linked and at the primary's offset.
func waitSynced(ctx context.Context, primary, replica *server) {
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		r := info(ctx, replica, "replication")
		p := info(ctx, primary, "replication")
		if r["master_link_status"] == "up" && r["master_repl_offset"] == p["master_repl_offset"] && replica.c.DBSize(ctx).Val() == int64(*keys) {
			return
		}
		if time.Now().After(deadline) {
			fail("the replica did not sync: %v", r)
		}
	}
}

func info(ctx context.Context, s *server, section string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(s.c.Info(ctx, section).Val(), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			out[k] = v
		}
	}
	return out
}

// redisCLIRDB takes a snapshot with redis-cli --rdb into a file, and returns its time and size.
func redisCLIRDB(addr string) (time.Duration, int64) {
	h, p, _ := net.SplitHostPort(addr)
	f := filepath.Join(os.TempDir(), fmt.Sprintf("backupbench-%d.rdb", time.Now().UnixNano()))
	defer func() { _ = os.Remove(f) }()
	t0 := time.Now()
	if out, err := exec.Command(*cliBin, "-h", h, "-p", p, "--rdb", f).CombinedOutput(); err != nil {
		fail("redis-cli --rdb: %v\n%s", err, out)
	}
	took := time.Since(t0)
	fi, err := os.Stat(f)
	check(err)
	return took, fi.Size()
}

// ioBackup runs iocache-server backup against addr, and returns its time, the RDB's size and the
// stored size.
func ioBackup(addr string, s3 *s3Server, name string) (time.Duration, int64, int64) {
	out := filepath.Join(os.TempDir(), "backupbench-"+name+".json")
	defer func() { _ = os.Remove(out) }()
	cmd := exec.Command(*ioBin, "backup", "--source", addr, "--name", name, "--endpoint", s3.endpoint, "--bucket", bucket,
		"--prefix", "bench", "--path-style", "--region", "us-east-1", "--json-out", out)
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+s3Access, "AWS_SECRET_ACCESS_KEY="+s3Secret)
	t0 := time.Now()
	if b, err := cmd.CombinedOutput(); err != nil {
		fail("iocache-server backup: %v\n%s", err, b)
	}
	took := time.Since(t0)
	b, err := os.ReadFile(out)
	check(err)
	return took, jsonInt(string(b), "rdbSize"), jsonInt(string(b), "size")
}

func jsonInt(s, key string) int64 {
	_, rest, ok := strings.Cut(s, `"`+key+`":`)
	if !ok {
		fail("no %s in %s", key, s)
	}
	end := strings.IndexAny(rest, ",}")
	n, err := strconv.ParseInt(strings.TrimSpace(rest[:end]), 10, 64)
	check(err)
	return n
}

type loadResult struct{ writes, cpuPerWrite, seconds float64 }

// measureLoad runs the writers on the primary and measures them over d, or while during runs.
func measureLoad(ctx context.Context, primary *server, d time.Duration, during func()) loadResult {
	var ops atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range *writers {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			c := redis.NewClient(&redis.Options{Addr: primary.addr, Protocol: 2, DisableIdentity: true})
			defer func() { _ = c.Close() }()
			rng := rand.New(rand.NewPCG(seed, 7))
			value := strings.Repeat("v", *valueSize)
			for {
				select {
				case <-stop:
					return
				default:
				}
				pipe := c.Pipeline()
				for range *pipeline {
					pipe.Set(ctx, "key:"+strconv.Itoa(rng.IntN(*keys)), value, 0)
				}
				if _, err := pipe.Exec(ctx); err != nil {
					fail("writer: %v", err)
				}
				ops.Add(int64(*pipeline))
			}
		}(uint64(w))
	}
	time.Sleep(500 * time.Millisecond) // warm up
	cpu0, o0, t0 := cpuSeconds(ctx, primary), ops.Load(), time.Now()
	if during != nil {
		during()
	} else {
		time.Sleep(d)
	}
	secs := time.Since(t0).Seconds()
	writes, cpu := ops.Load()-o0, cpuSeconds(ctx, primary)-cpu0
	close(stop)
	wg.Wait()
	return loadResult{writes: float64(writes) / secs, cpuPerWrite: cpu / float64(writes), seconds: secs}
}

func cpuSeconds(ctx context.Context, s *server) float64 {
	i := info(ctx, s, "cpu")
	u, _ := strconv.ParseFloat(i["used_cpu_user"], 64)
	sys, _ := strconv.ParseFloat(i["used_cpu_sys"], 64)
	return u + sys
}

type s3Server struct {
	endpoint string
	root     string
	cmd      *exec.Cmd
}

func startS3() *s3Server {
	root, err := os.MkdirTemp("", "backupbench-s3")
	check(err)
	check(os.Mkdir(filepath.Join(root, bucket), 0o755))
	addr := "127.0.0.1:" + strconv.Itoa(freePort())
	cmd := exec.Command(*s3Bin, "--access", s3Access, "--secret", s3Secret, "--port", addr, "--quiet", "posix", root)
	check(cmd.Start())
	track(cmd)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			fail("versitygw did not listen")
		}
	}
	return &s3Server{endpoint: "http://" + addr, root: root, cmd: cmd}
}

func (s *s3Server) stop() {
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	_ = os.RemoveAll(s.root)
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "backupbench: "+format+"\n", args...)
}

func check(err error) {
	if err != nil {
		fail("%v", err)
	}
}

// started are the processes this run started: a failure stops them before it exits.
var started struct {
	sync.Mutex
	cmds []*exec.Cmd
}

func track(cmd *exec.Cmd) {
	started.Lock()
	started.cmds = append(started.cmds, cmd)
	started.Unlock()
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "backupbench: "+format+"\n", args...)
	started.Lock()
	for _, c := range started.cmds {
		if c.Process != nil {
			_ = c.Process.Kill()
		}
	}
	started.Unlock()
	os.Exit(1)
}
