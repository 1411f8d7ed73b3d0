package engine

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/rdb"
	"github.com/iocache/iocache/server/testpeer"
)

// redisPeerIn runs redis-server on a free port with its files in dir, loading dir/dump.rdb.
func redisPeerIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	bin := testpeer.Require(t, "redis-server")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--appendonly", "no"}, args...)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for i := 0; i < 200; i++ {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("redis-server did not start on %s", addr)
	return ""
}

// TestSnapshotsCrossWithRedis: a dump.rdb iocache writes passes redis-check-rdb and loads into
// redis-server, one redis-server writes loads into iocache, and every key reads back the same.
func TestSnapshotsCrossWithRedis(t *testing.T) {
	check := testpeer.Require(t, "redis-check-rdb")
	ioDir, redisDir := t.TempDir(), t.TempDir()
	_, addr := startServer(t, func(c *config.Config) { c.Dir = ioDir })
	redisAddr := redisPeerIn(t, redisDir)
	i, r := dialPeer(t, addr), dialPeer(t, redisAddr)
	for _, cmd := range dumpFixture() {
		i.do(cmd...)
		r.do(cmd...)
	}
	i.do("PEXPIREAT", "s:text", "4102444800000")
	r.do("PEXPIREAT", "s:text", "4102444800000")
	for _, p := range []*peerConn{i, r} {
		p.do("SELECT", "3")
		p.do("SET", "in-db3", "x")
		p.do("SELECT", "0")
	}
	if got := i.do("SAVE"); got != "+OK\r\n" {
		t.Fatalf("SAVE: %q", got)
	}
	if got := r.do("SAVE"); got != "+OK\r\n" {
		t.Fatalf("redis SAVE: %q", got)
	}
	if out, err := exec.Command(check, filepath.Join(ioDir, "dump.rdb")).CombinedOutput(); err != nil || !strings.Contains(string(out), "RDB looks OK!") {
		t.Fatalf("redis-check-rdb: %v\n%s", err, out)
	}
	// Each server restarts on the other's file.
	_, ioOnRedis := startServer(t, func(c *config.Config) { c.Dir = redisDir })
	redisOnIO := redisPeerIn(t, ioDir)
	a, b := dialPeer(t, ioOnRedis), dialPeer(t, redisOnIO)
	keys := append(fixtureKeys, "in-db3")
	for _, key := range keys {
		for _, cmd := range append(readBack(key), []string{"SELECT", "3"}, []string{"GET", "in-db3"}, []string{"SELECT", "0"}) {
			want := r.do(cmd...)
			if got := a.do(cmd...); !sameReadBack(cmd, want, got) {
				t.Errorf("iocache on Redis's file %q:\n redis:   %.200q\n iocache: %.200q", cmd, want, got)
			}
			if got := b.do(cmd...); !sameReadBack(cmd, want, got) {
				t.Errorf("Redis on iocache's file %q:\n redis:   %.200q\n got:     %.200q", cmd, want, got)
			}
		}
	}
}

// TestMisconfMatchesRedis: a failed BGSAVE with save points set makes writes fail with Redis's
// MISCONF error (and PING too), reads still work, and INFO reports the failure.
func TestMisconfMatchesRedis(t *testing.T) {
	ioDir, redisDir := t.TempDir(), t.TempDir()
	_, addr := startServer(t, func(c *config.Config) { c.Dir = ioDir })
	redisAddr := redisPeerIn(t, redisDir, "--save", "3600 1")
	os.RemoveAll(ioDir)
	os.RemoveAll(redisDir)
	i, r := dialPeer(t, addr), dialPeer(t, redisAddr)
	for _, p := range []*peerConn{i, r} {
		p.do("BGSAVE")
	}
	for _, p := range []string{addr, redisAddr} {
		c := dialPeer(t, p)
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(c.do("INFO", "persistence"), "rdb_last_bgsave_status:err") {
			if time.Now().After(deadline) {
				t.Fatalf("%s: BGSAVE into a removed directory did not fail", p)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, cmd := range [][]string{{"SET", "k", "v"}, {"GET", "k"}, {"PING"}, {"DEL", "k"}, {"LASTSAVE"}} {
		want, got := r.do(cmd...), i.do(cmd...)
		if cmd[0] == "LASTSAVE" {
			continue
		}
		if want != got {
			t.Errorf("%q:\n redis:   %q\n iocache: %q", cmd, want, got)
		}
	}
	i.do("CONFIG", "SET", "stop-writes-on-bgsave-error", "no")
	if got := i.do("SET", "k", "v"); got != "+OK\r\n" {
		t.Fatalf("with stop-writes-on-bgsave-error no, SET = %q", got)
	}
}

// TestInfoPersistenceFields: INFO persistence lists Redis 7.0's fields in its order, then
// iocache's own.
func TestInfoPersistenceFields(t *testing.T) {
	_, addr := startServer(t, nil)
	redisAddr := redisPeerIn(t, t.TempDir())
	names := func(info string) []string {
		var out []string
		for _, l := range strings.Split(info, "\r\n") {
			if k, _, ok := strings.Cut(l, ":"); ok && !strings.HasPrefix(l, "$") {
				out = append(out, k)
			}
		}
		return out
	}
	want := names(dialPeer(t, redisAddr).do("INFO", "persistence"))
	want = append(want, iocacheInfoPersistenceFields...)
	got := names(dialPeer(t, addr).do("INFO", "persistence"))
	if strings.Join(want, ",") != strings.Join(got, ",") {
		t.Fatalf("fields differ:\n redis:   %v\n iocache: %v", want, got)
	}
}

// TestInfoReportsTheLastSavesSizeAndDuration: after SAVE and after BGSAVE, INFO persistence's
// rdb_last_save_bytes is the size of dump.rdb and rdb_last_save_duration_ms a duration; -1
// before any save. The operator reports both in the instance's status.
func TestInfoReportsTheLastSavesSizeAndDuration(t *testing.T) {
	dir := t.TempDir()
	_, addr := startServer(t, func(c *config.Config) { c.Dir = dir })
	c := dialPeer(t, addr)
	field := func(name string) int64 {
		for _, l := range strings.Split(c.do("INFO", "persistence"), "\r\n") {
			if v, ok := strings.CutPrefix(l, name+":"); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					t.Fatalf("%s: %q", name, v)
				}
				return n
			}
		}
		t.Fatalf("no %s in INFO persistence", name)
		return 0
	}
	if b, ms := field("rdb_last_save_bytes"), field("rdb_last_save_duration_ms"); b != -1 || ms != -1 {
		t.Fatalf("before any save: bytes %d, ms %d, want -1 -1", b, ms)
	}
	fileSize := func() int64 {
		fi, err := os.Stat(filepath.Join(dir, "dump.rdb"))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	c.do("DEBUG", "POPULATE", "1000")
	if got := c.do("SAVE"); got != "+OK\r\n" {
		t.Fatalf("SAVE: %q", got)
	}
	if b, want := field("rdb_last_save_bytes"), fileSize(); b != want || field("rdb_last_save_duration_ms") < 0 {
		t.Fatalf("after SAVE: bytes %d (file %d), ms %d", b, want, field("rdb_last_save_duration_ms"))
	}
	c.do("DEBUG", "POPULATE", "5000")
	c.do("BGSAVE")
	deadline := time.Now().Add(10 * time.Second)
	for field("rdb_bgsave_in_progress") != 0 || field("rdb_saves") < 2 {
		if time.Now().After(deadline) {
			t.Fatal("BGSAVE did not finish")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if b, want := field("rdb_last_save_bytes"), fileSize(); b != want || b <= 0 {
		t.Fatalf("after BGSAVE: bytes %d, file %d", b, want)
	}
}

// TestSigtermSavesAndRestartLoads: with save points set, SIGTERM saves before exiting and the
// next start loads the keys; SHUTDOWN NOSAVE does not save.
func TestSigtermSavesAndRestartLoads(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--dir", dir, "--save", "3600", "1"}
	addr, cmd := startProcess(t, args...)
	c := dialPeer(t, addr)
	for n := 0; n < 1000; n++ {
		c.do("SET", fmt.Sprintf("key:%d", n), fmt.Sprint(n))
	}
	c.do("HSET", "h", "f", "v")
	c.do("PEXPIRE", "key:7", "100000000")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := waitExit(cmd, 10*time.Second); err != nil {
		t.Fatalf("after SIGTERM: %v", err)
	}
	addr, cmd = startProcess(t, args...)
	c = dialPeer(t, addr)
	if got := c.do("DBSIZE"); got != ":1001\r\n" {
		t.Fatalf("after restart DBSIZE = %q", got)
	}
	if got := c.do("GET", "key:999"); got != "$3\r\n999\r\n" {
		t.Fatalf("after restart GET = %q", got)
	}
	if got := c.do("TTL", "key:7"); got == ":-1\r\n" || got == ":-2\r\n" {
		t.Fatalf("TTL lost: %q", got)
	}
	c.do("SET", "unsaved", "x")
	if _, err := io.WriteString(c.c, "SHUTDOWN NOSAVE\r\n"); err != nil { // no reply: the connection closes
		t.Fatal(err)
	}
	if err := waitExit(cmd, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	addr, _ = startProcess(t, args...)
	if got := dialPeer(t, addr).do("EXISTS", "unsaved"); got != ":0\r\n" {
		t.Fatalf("SHUTDOWN NOSAVE saved: EXISTS = %q", got)
	}
}

func waitExit(cmd *exec.Cmd, d time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		return fmt.Errorf("did not exit within %v", d)
	}
}

// loadDump reads a dump file into key → canonical text.
func loadDump(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	if _, err := rdb.Load(bufio.NewReader(f), rdb.Handler{Entry: func(e *rdb.Entry) error {
		out[fmt.Sprintf("%d/%s", e.DB, e.Key)] = canonValue(e.Value)
		return nil
	}}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestKillDuringBGSaveKeepsLastSnapshot: a server SIGKILLed while BGSAVE writes leaves the last
// good dump.rdb in place (the save goes to a temporary file renamed only when complete); the next
// start loads either that snapshot or the new one whole, and removes the temporary file.
func TestKillDuringBGSaveKeepsLastSnapshot(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--dir", dir}
	for round, delay := range []time.Duration{0, 20 * time.Millisecond, 80 * time.Millisecond} {
		addr, cmd := startProcess(t, args...)
		c := dialPeer(t, addr)
		before := c.do("DBSIZE")
		var batch [][]string
		for i := 0; i < 100000; i++ {
			batch = append(batch, []string{"SET", fmt.Sprintf("r%d:%d", round, i), strings.Repeat("v", 50)})
		}
		c.pipeline(batch)
		if round == 0 {
			c.do("SAVE") // the first good snapshot: 100000 keys
			before = c.do("DBSIZE")
			c.pipeline(batch[:0])
		}
		after := c.do("DBSIZE")
		c.do("BGSAVE")
		time.Sleep(delay)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		addr, cmd = startProcess(t, args...)
		got := dialPeer(t, addr).do("DBSIZE")
		if got != before && got != after {
			t.Fatalf("round %d: after a kill mid-save DBSIZE = %q, want the last snapshot's %q or the new %q", round, got, before, after)
		}
		if left, _ := filepath.Glob(filepath.Join(dir, "temp-*.rdb")); len(left) > 0 {
			t.Fatalf("round %d: temporary files left after restart: %v", round, left)
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
}

// TestDebugReloadRoundTrip: DEBUG RELOAD saves, empties and loads every type back unchanged.
func TestDebugReloadRoundTrip(t *testing.T) {
	_, addr := startServer(t, func(c *config.Config) { c.EnableDebugCommand = "yes" })
	c := dialPeer(t, addr)
	for _, cmd := range dumpFixture() {
		c.do(cmd...)
	}
	var want []string
	for _, key := range fixtureKeys {
		for _, cmd := range readBack(key) {
			want = append(want, c.do(cmd...))
		}
	}
	if got := c.do("DEBUG", "RELOAD"); got != "+OK\r\n" {
		t.Fatalf("DEBUG RELOAD = %q", got)
	}
	i := 0
	for _, key := range fixtureKeys {
		for _, cmd := range readBack(key) {
			if got := c.do(cmd...); got != want[i] && cmd[0] != "OBJECT" {
				t.Errorf("%q after DEBUG RELOAD: %.200q, was %.200q", cmd, got, want[i])
			}
			i++
		}
	}
}
