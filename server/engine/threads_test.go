package engine

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/cpuset"
)

// threadLine parses "io_thread_N:clients=..,reads=..,writes=..,cpus=..,tid=.." from INFO threads.
type threadLine struct {
	clients, reads, writes int64
	cpus                   string
	tid                    int
}

func parseInfoThreads(t testing.TB, info string) map[int]threadLine {
	t.Helper()
	out := map[int]threadLine{}
	re := regexp.MustCompile(`(?m)^io_thread_(\d+):(.*)\r?$`)
	for _, m := range re.FindAllStringSubmatch(info, -1) {
		id, _ := strconv.Atoi(m[1])
		var tl threadLine
		for _, kv := range strings.Split(strings.TrimSpace(m[2]), ",") {
			k, v, _ := strings.Cut(kv, "=")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "clients":
				tl.clients = n
			case "reads":
				tl.reads = n
			case "writes":
				tl.writes = n
			case "cpus":
				tl.cpus = v
			case "tid":
				tl.tid = int(n)
			}
		}
		out[id] = tl
	}
	return out
}

func TestInfoThreadsCountsTraffic(t *testing.T) {
	_, addr := startServer(t, func(c *config.Config) { c.IOThreads = 3 })
	// Four connections, balanced over the two I/O threads at accept.
	var conns []*redis.Conn
	for i := 0; i < 4; i++ {
		cl := redisClient(t, addr, 2)
		conn := cl.Conn()
		t.Cleanup(func() { conn.Close() })
		conns = append(conns, conn)
	}
	const perConn = 200
	for i := 0; i < perConn; i++ {
		for _, conn := range conns {
			if err := conn.Set(ctx(), "k", i, 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	info := redisClient(t, addr, 2)
	time.Sleep(50 * time.Millisecond) // counters are published once per loop iteration
	th := parseInfoThreads(t, info.Info(ctx(), "threads").Val())
	if len(th) != 3 {
		t.Fatalf("INFO threads lists %d threads, want 3: %v", len(th), th)
	}
	if th[0].reads != 0 || th[0].clients != 0 {
		t.Errorf("main thread did socket work with I/O threads on: %+v", th[0])
	}
	// The INFO connection itself sits on an I/O thread too: five clients, split 3/2.
	if th[1].clients+th[2].clients != 5 || th[1].clients < 2 || th[2].clients < 2 {
		t.Errorf("clients not balanced over I/O threads: %+v %+v", th[1], th[2])
	}
	for _, id := range []int{1, 2} {
		// Each connection sent perConn requests in separate round trips.
		if th[id].reads < 2*perConn || th[id].writes < 2*perConn {
			t.Errorf("io_thread_%d: reads=%d writes=%d, want at least %d each", id, th[id].reads, th[id].writes, 2*perConn)
		}
	}
}

var (
	buildOnce    sync.Once
	serverBinDir string
	serverBin    string
	buildErr     error
)

// TestMain removes the folder of the iocache-server binary that serverBinary builds once for the
// whole package: no test owns it, so no t.Cleanup can.
func TestMain(m *testing.M) {
	code := m.Run()
	if serverBinDir != "" {
		_ = os.RemoveAll(serverBinDir)
	}
	os.Exit(code)
}

// serverBinary builds iocache-server once per test run, for tests that need their own process
// (pinning threads inside the test process would pin the test runner too).
func serverBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "iocache-test-bin")
		if err != nil {
			buildErr = err
			return
		}
		serverBinDir = dir
		serverBin = filepath.Join(dir, "iocache-server")
		out, err := exec.Command("go", "build", "-o", serverBin, "../cmd/iocache-server").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("%v: %s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return serverBin
}

// startProcess runs iocache-server as a child process and returns its address and PID.
func startProcess(t testing.TB, args ...string) (string, *exec.Cmd) {
	t.Helper()
	return startCommand(t, exec.Command(serverBinary(t), processArgs(args)...))
}

// processArgs are the arguments of a test's server process: a free port, no metrics, no save
// points, then args.
func processArgs(args []string) []string {
	return append([]string{"--port", "0", "--bind", "127.0.0.1", "--metrics-port", "0", "--save", ""}, args...)
}

// startCommand starts a command that runs iocache-server (under a shell that sets limits, say)
// and returns its address once it is ready.
func startCommand(t testing.TB, cmd *exec.Cmd) (string, *exec.Cmd) {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	ready := regexp.MustCompile(`Ready to accept connections tcp (\S+)`)
	deadline := time.After(10 * time.Second)
	lines := make(chan string)
	go func() {
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("server exited before it was ready")
			}
			if m := ready.FindStringSubmatch(l); m != nil {
				go func() {
					for range lines {
					}
				}()
				return m[1], cmd
			}
		case <-deadline:
			t.Fatal("server not ready within 10s")
		}
	}
}

func TestThreadsArePinned(t *testing.T) {
	allowed, err := cpuset.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	if len(allowed) < 2 {
		t.Skip("needs at least 2 CPUs")
	}
	first, second := allowed[0], allowed[1]
	addr, cmd := startProcess(t, "--io-threads", "2",
		"--server_cpulist", fmt.Sprintf("%d,%d", first, second), "--bio_cpulist", "auto")
	c := redisClient(t, addr, 2)
	th := parseInfoThreads(t, c.Info(ctx(), "threads").Val())
	// Main thread on the first server CPU, the I/O thread on the second, read back from the kernel.
	for id, want := range map[int][]int{0: {first}, 1: {second}} {
		got, err := cpuset.ThreadAffinity(th[id].tid)
		if err != nil {
			t.Fatal(err)
		}
		if cpuset.Format(got) != cpuset.Format(want) || th[id].cpus != cpuset.Format(want) {
			t.Errorf("io_thread_%d (tid %d): kernel affinity %s, INFO says %s, want %s", id, th[id].tid, cpuset.Format(got), th[id].cpus, cpuset.Format(want))
		}
	}
	// Every other thread of the process (bio, the Go runtime's) is kept on bio_cpulist, which
	// "auto" puts on the last server CPU when, as here, no CPU is left over. A thread the runtime
	// starts while the server starts may take until the next once-a-second check.
	var stray []string
	for attempt := 0; attempt < 30; attempt++ {
		stray = nil
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range tasks {
			tid, _ := strconv.Atoi(task.Name())
			if tid == th[0].tid || tid == th[1].tid {
				continue
			}
			got, err := cpuset.ThreadAffinity(tid)
			if err != nil {
				continue // the thread exited
			}
			if cpuset.Format(got) != strconv.Itoa(second) {
				stray = append(stray, fmt.Sprintf("runtime thread %d runs on %s, want bio_cpulist %d", tid, cpuset.Format(got), second))
			}
		}
		if len(stray) == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Error(strings.Join(stray, "\n"))
}

func TestCPUListErrorsNameTheDirective(t *testing.T) {
	bin := serverBinary(t)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--server_cpulist", "1000"}, "server_cpulist"},
		{[]string{"--bio_cpulist", "0-x"}, "invalid cpu list"},
		{[]string{"--server_cpulist", "0", "--bio_cpulist", "0"}, "bio_cpulist \"0\" overlaps server_cpulist"},
		{[]string{"--cpulist-mode", "relative", "--server_cpulist", "500"}, "position 500 is outside"},
	}
	for _, tc := range cases {
		out, err := exec.Command(bin, append([]string{"--port", "0", "--bind", "127.0.0.1"}, tc.args...)...).CombinedOutput()
		if err == nil {
			t.Errorf("%v: server started", tc.args)
			continue
		}
		if !strings.Contains(string(out), tc.want) {
			t.Errorf("%v: error %q does not mention %q", tc.args, out, tc.want)
		}
	}
}
