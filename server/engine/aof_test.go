package engine

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/cpuset"
	"github.com/iocache/iocache/server/testpeer"
)

// aofWrites are the commands after the fixture: several databases, a transaction, expiries
// (relative ones are recorded as absolute), a float increment, a pop, and a key deleted.
func aofWrites() [][]string {
	return split("INCR counter", "INCR counter", "INCRBYFLOAT f 1.5", "SET ttl v PXAT 4102444800000",
		"PEXPIREAT s:text 4102444800000", "EXPIRE l:big 100000", "PERSIST l:big", "LPOP l:small", "DEL s:neg", "SELECT 3", "SET in-db3 x", "HSET h3 a 1",
		"SELECT 0", "MULTI", "INCR counter", "RPUSH l:small tail", "EXEC", "SPOP set:str", "SET gone v PX 1")
}

var aofKeys = append(append([]string(nil), fixtureKeys...), "counter", "f", "ttl", "in-db3", "h3", "gone")

// readAll records what a server holds for aofKeys in databases 0 and 3.
func readAll(p *peerConn) map[string]string {
	out := map[string]string{}
	for _, db := range []string{"0", "3"} {
		p.do("SELECT", db)
		for _, key := range aofKeys {
			for _, cmd := range readBack(key) {
				if cmd[0] == "OBJECT" {
					continue // a replayed key is new: its idle time starts again
				}
				out[db+" "+strings.Join(cmd, " ")] = p.do(cmd...)
			}
		}
		out[db+" DBSIZE"] = p.do("DBSIZE")
	}
	p.do("SELECT", "0")
	return out
}

func diffAll(t *testing.T, what string, want, got map[string]string) {
	t.Helper()
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %s:\n want %.200q\n got  %.200q", what, k, w, got[k])
		}
	}
}

// waitInfo waits until INFO persistence shows field:value.
func waitInfo(t *testing.T, p *peerConn, field, value string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(p.do("INFO", "persistence"), "\r\n"+field+":"+value+"\r\n") {
		if time.Now().After(deadline) {
			t.Fatalf("INFO persistence never showed %s:%s:\n%s", field, value, p.do("INFO", "persistence"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitRewrites waits until n rewrites have started and none runs or waits.
func waitRewrites(t *testing.T, p *peerConn, n int) {
	t.Helper()
	waitInfo(t, p, "aof_rewrites", fmt.Sprint(n))
	waitInfo(t, p, "aof_rewrite_scheduled", "0")
	waitInfo(t, p, "aof_rewrite_in_progress", "0")
}

// checkAOF runs redis-check-aof on a directory's manifest.
func checkAOF(t *testing.T, dir string) {
	t.Helper()
	bin := testpeer.Require(t, "redis-check-aof")
	out, err := exec.Command(bin, filepath.Join(dir, "appendonlydir", "appendonly.aof.manifest")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "All AOF files and manifest are valid") {
		t.Fatalf("redis-check-aof: %v\n%s", err, out)
	}
}

// shutdownPeer stops a server with SHUTDOWN NOSAVE (which answers nothing) and waits for it.
func shutdownPeer(t *testing.T, p *peerConn, cmd *exec.Cmd) {
	t.Helper()
	if _, err := io.WriteString(p.c, "*2\r\n$8\r\nSHUTDOWN\r\n$6\r\nNOSAVE\r\n"); err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, p.c) // until the server closes the connection
	if cmd != nil {
		if err := waitExit(cmd, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAOFCrossWithRedis: the same writes on iocache and Debian's redis-server, each with
// appendonly yes, a BGREWRITEAOF in the middle; redis-check-aof accepts iocache's AOF before and
// after the rewrite, and each server, restarted on the other's AOF directory, holds the same data.
// Both with a base in RDB format and with one of commands (aof-use-rdb-preamble no).
func TestAOFCrossWithRedis(t *testing.T) {
	for _, preamble := range []string{"yes", "no"} {
		t.Run("aof-use-rdb-preamble="+preamble, func(t *testing.T) { testAOFCrossWithRedis(t, preamble) })
	}
}

func testAOFCrossWithRedis(t *testing.T, preamble string) {
	ioDir, redisDir := t.TempDir(), t.TempDir()
	ioAddr, ioCmd := startProcess(t, "--dir", ioDir, "--appendonly", "yes", "--aof-use-rdb-preamble", preamble)
	redisAddr := redisPeerIn(t, redisDir, "--appendonly", "yes", "--save", "", "--aof-use-rdb-preamble", preamble)
	i, r := dialPeer(t, ioAddr), dialPeer(t, redisAddr)
	for _, cmd := range dumpFixture() {
		i.do(cmd...)
		r.do(cmd...)
	}
	checkAOF(t, ioDir)
	for _, p := range []*peerConn{i, r} {
		if got := p.do("BGREWRITEAOF"); got != "+Background append only file rewriting started\r\n" {
			t.Fatalf("BGREWRITEAOF: %q", got)
		}
	}
	for _, p := range []*peerConn{i, r} {
		for _, cmd := range aofWrites() {
			p.do(cmd...)
		}
		waitRewrites(t, p, 1)
	}
	checkAOF(t, ioDir)
	if _, err := os.Stat(filepath.Join(ioDir, "appendonlydir", "appendonly.aof.2.base."+map[string]string{"yes": "rdb", "no": "aof"}[preamble])); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond) // "gone" expires
	want := readAll(r)
	diffAll(t, "iocache before restart", want, readAll(i))
	shutdownPeer(t, i, ioCmd)
	shutdownPeer(t, r, nil)
	time.Sleep(100 * time.Millisecond) // redis-server's exit
	ioAddr, _ = startProcess(t, "--dir", redisDir, "--appendonly", "yes")
	diffAll(t, "iocache on Redis's AOF", want, readAll(dialPeer(t, ioAddr)))
	ioAddr, ioCmd = startProcess(t, "--dir", ioDir, "--appendonly", "yes")
	i = dialPeer(t, ioAddr)
	diffAll(t, "iocache on its own AOF", want, readAll(i))
	shutdownPeer(t, i, ioCmd)
	redisAddr = redisPeerIn(t, ioDir, "--appendonly", "yes", "--save", "")
	r = dialPeer(t, redisAddr)
	for deadline := time.Now().Add(10 * time.Second); strings.HasPrefix(r.do("PING"), "-LOADING") && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	diffAll(t, "Redis on iocache's AOF", want, readAll(r))
}

// TestAOFTruncatedTail: a last incremental file that ends inside a command (a crash in the
// middle of a write) loads up to the last whole command and is cut there with
// aof-load-truncated yes, and stops the start with Redis's message with no.
func TestAOFTruncatedTail(t *testing.T) {
	dir := t.TempDir()
	addr, cmd := startProcess(t, "--dir", dir, "--appendonly", "yes")
	p := dialPeer(t, addr)
	p.do("SET", "a", "1")
	p.do("MULTI")
	p.do("INCR", "n")
	p.do("INCR", "n")
	p.do("EXEC")
	shutdownPeer(t, p, cmd)
	incr := filepath.Join(dir, "appendonlydir", "appendonly.aof.1.incr.aof")
	whole, err := os.ReadFile(incr)
	if err != nil {
		t.Fatal(err)
	}
	for name, tail := range map[string]string{
		"half a command":     "*3\r\n$3\r\nSET\r\n$1\r\nb\r\n$5\r\nhal",
		"half a transaction": "*1\r\n$5\r\nMULTI\r\n*2\r\n$4\r\nINCR\r\n$1\r\nn\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(incr, append(append([]byte(nil), whole...), tail...), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg := config.New()
			cfg.Dir, cfg.AppendOnly, cfg.AOFLoadTruncated, cfg.Port, cfg.MetricsPort = dir, true, false, 0, 0
			cfg.Bind, cfg.LogLevel = []string{"127.0.0.1"}, "nothing"
			if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "Unexpected end of file reading the append only file appendonly.aof.1.incr.aof") {
				t.Fatalf("aof-load-truncated no: %v", err)
			}
			_, addr := startServer(t, func(c *config.Config) { c.Dir, c.AppendOnly, c.AOFLoadTruncated = dir, true, true })
			p := dialPeer(t, addr)
			if got := p.do("MGET", "a", "b", "n"); got != "*3\r\n$1\r\n1\r\n$-1\r\n$1\r\n2\r\n" {
				t.Fatalf("after loading the truncated AOF: %q", got)
			}
			if fi, err := os.Stat(incr); err != nil || fi.Size() != int64(len(whole)) {
				t.Fatalf("not truncated to %d bytes: %v %v", len(whole), fi.Size(), err)
			}
			p.do("SET", "c", "3") // appended after the cut: the file stays valid
			p.do("PING")          // the SET's iteration wrote it
			checkAOF(t, dir)
		})
	}
}

// TestAOFTurnedOnLive: CONFIG SET appendonly yes on a server with data writes a base of it
// (while writes go on) and appends from there; a restart with appendonly yes has everything,
// including what was written while the base was written. CONFIG SET appendonly no stops it.
func TestAOFTurnedOnLive(t *testing.T) {
	dir := t.TempDir()
	addr, cmd := startProcess(t, "--dir", dir)
	p := dialPeer(t, addr)
	var batch [][]string
	for n := 0; n < 20000; n++ {
		batch = append(batch, []string{"SET", fmt.Sprintf("k%d", n), fmt.Sprint(n)})
	}
	p.pipeline(batch)
	p.do("RPUSH", "list", "a", "b")
	if got := p.do("CONFIG", "SET", "appendonly", "yes"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET appendonly yes: %q", got)
	}
	p.do("SET", "during", "1")
	p.do("INCR", "k7")
	waitInfo(t, p, "aof_enabled", "1")
	waitInfo(t, p, "aof_rewrite_in_progress", "0")
	p.do("SET", "after", "2")
	p.do("DEL", "k8")
	m, err := os.ReadFile(filepath.Join(dir, "appendonlydir", "appendonly.aof.manifest"))
	if err != nil || string(m) != "file appendonly.aof.1.base.rdb seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n" {
		t.Fatalf("manifest: %q %v", m, err)
	}
	checkAOF(t, dir)
	shutdownPeer(t, p, cmd)
	addr, cmd = startProcess(t, "--dir", dir, "--appendonly", "yes")
	p = dialPeer(t, addr)
	if got := p.do("MGET", "during", "after", "k7", "k8", "k19999"); got != "*5\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n8\r\n$-1\r\n$5\r\n19999\r\n" {
		t.Fatalf("after restart: %q", got)
	}
	if got := p.do("DBSIZE"); got != ":20002\r\n" {
		t.Fatalf("DBSIZE after restart: %q", got)
	}
	if got := p.do("CONFIG", "SET", "appendonly", "no"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET appendonly no: %q", got)
	}
	p.do("SET", "off", "1")
	shutdownPeer(t, p, cmd)
	addr, _ = startProcess(t, "--dir", dir, "--appendonly", "yes")
	if got := dialPeer(t, addr).do("EXISTS", "off", "after"); got != ":1\r\n" {
		t.Fatalf("written with the AOF off: EXISTS = %q", got)
	}
}

// TestAOFInfoAndErrors: INFO persistence's AOF fields as Redis 7.0 prints them, BGREWRITEAOF's
// replies, and BGSAVE's while a rewrite runs.
func TestAOFInfoAndErrors(t *testing.T) {
	_, addr := startServer(t, func(c *config.Config) { c.AppendOnly = true })
	p := dialPeer(t, addr)
	info := p.do("INFO", "persistence")
	for _, field := range []string{"aof_enabled:1", "aof_rewrite_in_progress:0", "aof_rewrite_scheduled:0",
		"aof_last_rewrite_time_sec:-1", "aof_current_rewrite_time_sec:-1", "aof_last_bgrewrite_status:ok",
		"aof_rewrites:0", "aof_last_write_status:ok", "aof_current_size:", "aof_base_size:", "aof_pending_rewrite:0",
		"aof_buffer_length:0", "aof_pending_bio_fsync:", "aof_delayed_fsync:0"} {
		if !strings.Contains(info, "\r\n"+field) {
			t.Errorf("INFO persistence lacks %s:\n%s", field, info)
		}
	}
	// Commands of one pipeline run before any background work can end, so each reply below is
	// certain. A BGSAVE runs: the rewrite waits for it, as behind Redis's child.
	p.do("SET", "k", "v")
	got := p.pipeline(split("BGSAVE", "BGREWRITEAOF"))
	if got[0] != "+Background saving started\r\n" || got[1] != "+Background append only file rewriting scheduled\r\n" {
		t.Fatalf("BGSAVE then BGREWRITEAOF: %q", got)
	}
	waitRewrites(t, p, 1)
	got = p.pipeline(split("BGREWRITEAOF", "BGREWRITEAOF", "BGSAVE", "BGSAVE SCHEDULE"))
	want := []string{"+Background append only file rewriting started\r\n",
		"-ERR Background append only file rewriting already in progress\r\n",
		"-ERR Another child process is active (AOF?): can't BGSAVE right now. Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.\r\n",
		"+Background saving scheduled\r\n"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("reply %d: %q, want %q", i, got[i], want[i])
		}
	}
	waitRewrites(t, p, 2)
	waitInfo(t, p, "rdb_saves", "2")
}

// TestAOFWriteErrorRefusesWrites: when the AOF cannot be written (here the file size limit, as a
// full disk would), writes and PING get Redis's MISCONF error for the AOF, reads still work,
// INFO reports it, and the file keeps only whole commands (a short write is cut off again).
func TestAOFWriteErrorRefusesWrites(t *testing.T) {
	dir := t.TempDir()
	// appendfsync no: with everysec a slow fsync on a busy machine would postpone the writes
	// (and so the error) for up to two seconds.
	args := processArgs([]string{"--dir", dir, "--appendonly", "yes", "--appendfsync", "no"})
	// ulimit -f counts 512-byte blocks: 100 KiB. Go ignores SIGXFSZ, so writes fail with EFBIG.
	addr, _ := startCommand(t, exec.Command("sh", append([]string{"-c", `ulimit -f 200; exec "$0" "$@"`, serverBinary(t)}, args...)...))
	p := dialPeer(t, addr)
	value := strings.Repeat("v", 6000)
	var refused string
	for n := 0; n < 40 && refused == ""; n++ {
		if got := p.do("SET", fmt.Sprintf("k%d", n), value); got != "+OK\r\n" {
			refused = got
		}
	}
	if want := "-MISCONF Errors writing to the AOF file: File too large\r\n"; refused != want {
		t.Fatalf("write past the limit: %q, want %q", refused, want)
	}
	if got := p.do("PING"); !strings.HasPrefix(got, "-MISCONF") {
		t.Fatalf("PING: %q", got)
	}
	if got := p.do("STRLEN", "k0"); got != ":6000\r\n" {
		t.Fatalf("read: %q", got)
	}
	if info := p.do("INFO", "persistence"); !strings.Contains(info, "aof_last_write_status:err") {
		t.Fatalf("INFO persistence:\n%s", info)
	}
	checkAOF(t, dir)
}

// TestAOFOnReplica: a replica with appendonly yes starts its AOF again from a base of what the
// full sync loaded (the data it had before is gone), then appends its primary's stream; restarted
// alone on that AOF it has the primary's data.
func TestAOFOnReplica(t *testing.T) {
	primary := dialPeer(t, startRedisPeer(t))
	for n := 0; n < 100; n++ {
		primary.do("SET", fmt.Sprintf("k%d", n), fmt.Sprint(n))
	}
	dir := t.TempDir()
	host, port, _ := strings.Cut(primary.c.RemoteAddr().String(), ":")
	addr, cmd := startProcess(t, "--dir", dir, "--appendonly", "yes")
	p := dialPeer(t, addr)
	p.do("SET", "before-sync", "x")
	p.do("REPLICAOF", host, port)
	deadline := time.Now().Add(10 * time.Second)
	for p.do("DBSIZE") != ":100\r\n" || !strings.Contains(p.do("INFO", "replication"), "master_link_status:up") {
		if time.Now().After(deadline) {
			t.Fatalf("replica never synced: DBSIZE %q", p.do("DBSIZE"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	primary.do("INCR", "k1")
	primary.do("SET", "streamed", "y")
	for p.do("GET", "streamed") != "$1\r\ny\r\n" {
		if time.Now().After(deadline) {
			t.Fatal("the stream never arrived")
		}
		time.Sleep(20 * time.Millisecond)
	}
	waitInfo(t, p, "aof_rewrite_in_progress", "0")
	checkAOF(t, dir)
	shutdownPeer(t, p, cmd)
	addr, _ = startProcess(t, "--dir", dir, "--appendonly", "yes")
	p = dialPeer(t, addr)
	if got := p.do("MGET", "k1", "k99", "streamed", "before-sync"); got != "*4\r\n$1\r\n2\r\n$2\r\n99\r\n$1\r\ny\r\n$-1\r\n" {
		t.Fatalf("restarted on the replica's AOF: %q", got)
	}
	if got := p.do("DBSIZE"); got != ":101\r\n" {
		t.Fatalf("DBSIZE: %q", got)
	}
}

// TestAOFFirstStartKeepsDumpRDB: appendonly yes on a directory with dump.rdb and no AOF loads
// dump.rdb and makes it the first base (Redis 7.0 would start empty, and its next save would
// overwrite dump.rdb); a single-file AOF of Redis before 7.0 stops the start rather than being
// ignored.
func TestAOFFirstStartKeepsDumpRDB(t *testing.T) {
	dir := t.TempDir()
	_, addr := startServer(t, func(c *config.Config) { c.Dir, c.Save = dir, "" })
	p := dialPeer(t, addr)
	p.do("SET", "from-rdb", "1")
	if got := p.do("SAVE"); got != "+OK\r\n" {
		t.Fatalf("SAVE: %q", got)
	}
	_, addr = startServer(t, func(c *config.Config) { c.Dir, c.Save, c.AppendOnly = dir, "", true })
	if got := dialPeer(t, addr).do("GET", "from-rdb"); got != "$1\r\n1\r\n" {
		t.Fatalf("GET: %q", got)
	}
	checkAOF(t, dir)
	if _, err := os.Stat(filepath.Join(dir, "appendonlydir", "appendonly.aof.1.base.rdb")); err != nil {
		t.Fatal(err)
	}

	old := t.TempDir()
	if err := os.WriteFile(filepath.Join(old, "appendonly.aof"), []byte("*1\r\n$4\r\nPING\r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := config.New()
	cfg.Dir, cfg.AppendOnly, cfg.Port, cfg.MetricsPort, cfg.Bind, cfg.LogLevel = old, true, 0, 0, []string{"127.0.0.1"}, "nothing"
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "Found appendonly.aof, an append only file of a Redis before 7.0") {
		t.Fatalf("old single-file AOF: %v", err)
	}
}

// TestAOFDisableAutoGC: with aof-disable-auto-gc yes a rewrite leaves the files it replaced,
// listed as history; setting it back to no deletes them, as Redis does.
func TestAOFDisableAutoGC(t *testing.T) {
	dir := t.TempDir()
	_, addr := startServer(t, func(c *config.Config) { c.Dir, c.AppendOnly, c.AOFDisableAutoGC = dir, true, true })
	p := dialPeer(t, addr)
	p.do("SET", "k", "v")
	p.do("BGREWRITEAOF")
	waitRewrites(t, p, 1)
	manifest := filepath.Join(dir, "appendonlydir", "appendonly.aof.manifest")
	want := "file appendonly.aof.2.base.rdb seq 2 type b\nfile appendonly.aof.1.base.rdb seq 1 type h\n" +
		"file appendonly.aof.1.incr.aof seq 1 type h\nfile appendonly.aof.2.incr.aof seq 2 type i\n"
	if m, _ := os.ReadFile(manifest); string(m) != want {
		t.Fatalf("manifest with history:\n%s\nwant\n%s", m, want)
	}
	checkAOF(t, dir)
	p.do("CONFIG", "SET", "aof-disable-auto-gc", "no")
	if m, _ := os.ReadFile(manifest); string(m) != "file appendonly.aof.2.base.rdb seq 2 type b\nfile appendonly.aof.2.incr.aof seq 2 type i\n" {
		t.Fatalf("manifest after gc:\n%s", m)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := os.Stat(filepath.Join(dir, "appendonlydir", "appendonly.aof.1.incr.aof"))
		if os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("history file not deleted")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestAOFRewritePinned: the thread that writes the new base runs on aof_rewrite_cpulist.
func TestAOFRewritePinned(t *testing.T) {
	allowed, err := cpuset.Allowed()
	if err != nil || len(allowed) < 2 {
		t.Skip("needs two CPUs")
	}
	last := allowed[len(allowed)-1]
	s, addr := startServer(t, func(c *config.Config) { c.AppendOnly, c.AOFRewriteCPUList = true, fmt.Sprint(last) })
	p := dialPeer(t, addr)
	var batch [][]string
	for n := 0; n < 100000; n++ {
		batch = append(batch, []string{"SET", fmt.Sprintf("k%d", n), strings.Repeat("v", 100)})
	}
	p.pipeline(batch)
	p.do("BGREWRITEAOF")
	// The thread publishes its id just before it pins itself: poll until it has.
	var seen []int
	for deadline := time.Now().Add(10 * time.Second); (len(seen) != 1 || seen[0] != last) && time.Now().Before(deadline); {
		if tid := s.bgsaveTID.Load(); tid != 0 {
			seen, _ = cpuset.ThreadAffinity(int(tid))
		}
	}
	if len(seen) != 1 || seen[0] != last {
		t.Fatalf("rewrite thread on CPUs %v, want [%d]", seen, last)
	}
	waitInfo(t, p, "aof_rewrite_in_progress", "0")
}

// TestAOFFlushAllDuringRewrite: FLUSHALL while a rewrite writes its base lets the rewrite finish
// (as Redis does); the base holds the keys of the cut, the incremental file the FLUSHALL, and a
// restart has only what came after it.
func TestAOFFlushAllDuringRewrite(t *testing.T) {
	dir := t.TempDir()
	addr, cmd := startProcess(t, "--dir", dir, "--appendonly", "yes")
	p := dialPeer(t, addr)
	var batch [][]string
	for n := 0; n < 20000; n++ {
		batch = append(batch, []string{"RPUSH", fmt.Sprintf("l%d", n%100), strings.Repeat("v", 50)})
	}
	p.pipeline(batch)
	got := p.pipeline(split("BGREWRITEAOF", "FLUSHALL", "SET after 1"))
	if got[0] != "+Background append only file rewriting started\r\n" || got[1] != "+OK\r\n" {
		t.Fatalf("replies: %q", got)
	}
	waitRewrites(t, p, 1)
	waitInfo(t, p, "aof_last_bgrewrite_status", "ok")
	checkAOF(t, dir)
	shutdownPeer(t, p, cmd)
	addr, _ = startProcess(t, "--dir", dir, "--appendonly", "yes")
	p = dialPeer(t, addr)
	if got := p.do("DBSIZE"); got != ":1\r\n" {
		t.Fatalf("DBSIZE after restart: %q", got)
	}
}

// TestAOFTimestampsAndCommandBase: with aof-timestamp-enabled yes the incremental file carries
// Redis's "#TS:" annotations, which redis-check-aof and redis-server accept; and an AOF whose
// base Redis wrote as commands (aof-use-rdb-preamble no), with annotations, loads into iocache.
func TestAOFTimestampsAndCommandBase(t *testing.T) {
	dir := t.TempDir()
	addr, cmd := startProcess(t, "--dir", dir, "--appendonly", "yes", "--aof-timestamp-enabled", "yes")
	p := dialPeer(t, addr)
	p.do("SET", "a", "1")
	p.do("HSET", "h", "f", "v")
	shutdownPeer(t, p, cmd)
	incr, err := os.ReadFile(filepath.Join(dir, "appendonlydir", "appendonly.aof.1.incr.aof"))
	if err != nil || !strings.HasPrefix(string(incr), "#TS:") {
		t.Fatalf("incr file: %q %v", incr, err)
	}
	checkAOF(t, dir)
	r := dialPeer(t, redisPeerIn(t, dir, "--appendonly", "yes", "--save", ""))
	for deadline := time.Now().Add(10 * time.Second); strings.HasPrefix(r.do("PING"), "-LOADING") && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if got := r.do("HGET", "h", "f"); got != "$1\r\nv\r\n" {
		t.Fatalf("redis-server on an AOF with timestamps: %q", got)
	}

	redisDir := t.TempDir()
	r = dialPeer(t, redisPeerIn(t, redisDir, "--appendonly", "yes", "--save", "", "--aof-use-rdb-preamble", "no", "--aof-timestamp-enabled", "yes"))
	for _, c := range dumpFixture() {
		r.do(c...)
	}
	r.do("BGREWRITEAOF")
	waitRewrites(t, r, 1)
	r.do("SET", "after", "rewrite")
	want := readAll(r)
	shutdownPeer(t, r, nil)
	if _, err := os.Stat(filepath.Join(redisDir, "appendonlydir", "appendonly.aof.2.base.aof")); err != nil {
		m, _ := os.ReadFile(filepath.Join(redisDir, "appendonlydir", "appendonly.aof.manifest"))
		t.Fatalf("no command base from redis-server: %v\n%s", err, m)
	}
	addr, _ = startProcess(t, "--dir", redisDir, "--appendonly", "yes")
	i := dialPeer(t, addr)
	diffAll(t, "iocache on Redis's command base", want, readAll(i))
	if got := i.do("GET", "after"); got != "$7\r\nrewrite\r\n" {
		t.Fatalf("after: %q", got)
	}
}

// TestAOFTurnedOnDuringRewrite: appendonly turned on while a BGREWRITEAOF of an AOF that is off
// writes its base waits for it, then writes a base of its own and appends from there.
func TestAOFTurnedOnDuringRewrite(t *testing.T) {
	dir := t.TempDir()
	addr, cmd := startProcess(t, "--dir", dir)
	p := dialPeer(t, addr)
	got := p.pipeline(split("SET a 1", "BGREWRITEAOF", "CONFIG SET appendonly yes", "SET b 2"))
	if got[1] != "+Background append only file rewriting started\r\n" || got[2] != "+OK\r\n" {
		t.Fatalf("replies: %q", got)
	}
	waitRewrites(t, p, 2)
	waitInfo(t, p, "aof_enabled", "1")
	p.do("SET", "c", "3")
	m, _ := os.ReadFile(filepath.Join(dir, "appendonlydir", "appendonly.aof.manifest"))
	if string(m) != "file appendonly.aof.2.base.rdb seq 2 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n" {
		t.Fatalf("manifest:\n%s", m)
	}
	shutdownPeer(t, p, cmd)
	addr, _ = startProcess(t, "--dir", dir, "--appendonly", "yes")
	if got := dialPeer(t, addr).do("MGET", "a", "b", "c"); got != "*3\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n" {
		t.Fatalf("after restart: %q", got)
	}
}
