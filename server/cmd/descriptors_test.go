package cmd

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// lockedBuffer is a log sink the test reads while the server writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// respConn is one client connection speaking inline commands.
type respConn struct {
	c net.Conn
	r *bufio.Reader
}

func dialRESP(t *testing.T, port int) *respConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &respConn{c, bufio.NewReader(c)}
}

// do sends an inline command and returns the first line of the reply (and a bulk's line).
func (r *respConn) do(t *testing.T, cmd string) string {
	t.Helper()
	_ = r.c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.c.Write([]byte(cmd + "\r\n")); err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	line, err := r.r.ReadString('\n')
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	if strings.HasPrefix(line, "*") { // CONFIG GET: name and value
		var parts []string
		n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
		for i := 0; i < 2*n; i++ {
			l, _ := r.r.ReadString('\n')
			parts = append(parts, strings.TrimSpace(l))
		}
		return strings.Join(parts, " ")
	}
	return strings.TrimSpace(line)
}

// cpuSeconds is a process's user+system time.
func cpuSeconds(t *testing.T, pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100
}

// TestDescriptorLimitBoundsClients: under a descriptor limit lower than maxclients needs, the
// server lowers maxclients to fit at start (Redis's warnings), refuses CONFIG SET beyond it with
// Redis's text, and a flood of connections is refused with "max number of clients reached".
// When descriptors run out anyway (the limit lowered under the running process), the server
// neither spins on the failing accept nor writes a log line per failure, and serves its clients.
func TestDescriptorLimitBoundsClients(t *testing.T) {
	bin := buildProgram(t, t.TempDir(), "iocache-server")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	const limit = 200
	cmd := exec.Command("bash", "-c", fmt.Sprintf("ulimit -n %d && exec %s --port %d --bind 127.0.0.1 --save '' --metrics-port 0", limit, bin, port))
	cmd.Dir = t.TempDir()
	var log lockedBuffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for {
		if c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("iocache-server did not listen:\n%s", log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	admin := dialRESP(t, port)
	want := limit - 32
	if got := admin.do(t, "CONFIG GET maxclients"); got != fmt.Sprintf("$10 maxclients $%d %d", len(strconv.Itoa(want)), want) {
		t.Fatalf("CONFIG GET maxclients: %q, want %d", got, want)
	}
	if !strings.Contains(log.String(), fmt.Sprintf("maxclients has been reduced to %d to compensate for low ulimit", want)) {
		t.Fatalf("no warning about maxclients in the log:\n%s", log.String())
	}
	wantErr := fmt.Sprintf("-ERR CONFIG SET failed (possibly related to argument 'maxclients') - The operating system is not able to handle the specified number of clients, try with %d", want)
	if got := admin.do(t, "CONFIG SET maxclients 1000"); got != wantErr {
		t.Fatalf("CONFIG SET maxclients 1000: %q, want %q", got, wantErr)
	}
	if got := admin.do(t, "CONFIG SET maxclients 100"); got != "+OK" {
		t.Fatalf("CONFIG SET maxclients 100 (within the limit): %q", got)
	}
	if got := admin.do(t, fmt.Sprintf("CONFIG SET maxclients %d", want)); got != "+OK" {
		t.Fatalf("CONFIG SET maxclients back: %q", got)
	}

	// A flood past maxclients: the extra connections hear the error and are closed.
	var flood []net.Conn
	defer func() {
		for _, c := range flood {
			c.Close()
		}
	}()
	refused := 0
	for i := 0; i < limit; i++ {
		c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Fatal(err)
		}
		flood = append(flood, c)
	}
	for _, c := range flood[want:] {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		line, _ := bufio.NewReader(c).ReadString('\n')
		if line == "-ERR max number of clients reached\r\n" {
			refused++
		}
	}
	if refused < limit-want-2 {
		t.Fatalf("%d of %d connections past maxclients %d were refused with Redis's error", refused, limit-want, want)
	}
	for _, c := range flood {
		c.Close()
	}
	flood = nil
	time.Sleep(200 * time.Millisecond) // the server closes its side

	// Descriptors run out under the server: the limit comes down to fewer than maxclients
	// needs, and a flood holds every descriptor it can.
	low := unix.Rlimit{Cur: 64, Max: 64}
	if err := unix.Prlimit(cmd.Process.Pid, unix.RLIMIT_NOFILE, &low, nil); err != nil {
		t.Skipf("prlimit on the server: %v", err)
	}
	logBefore := len(log.String())
	for i := 0; i < 150; i++ {
		c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Fatal(err)
		}
		flood = append(flood, c)
	}
	time.Sleep(300 * time.Millisecond)
	before := cpuSeconds(t, cmd.Process.Pid)
	time.Sleep(time.Second)
	if spent := cpuSeconds(t, cmd.Process.Pid) - before; spent > 0.3 {
		t.Errorf("the server spent %.2f s of CPU in a second with its descriptors exhausted: spinning on accept", spent)
	}
	if grown := len(log.String()) - logBefore; grown > 4096 {
		t.Errorf("the log grew by %d bytes in a second of failed accepts:\n%s", grown, log.String()[logBefore:][:4096])
	}
	if got := admin.do(t, "PING"); got != "+PONG" {
		t.Fatalf("PING with descriptors exhausted: %q", got)
	}
	if !strings.Contains(log.String()[logBefore:], "for want of descriptors") {
		t.Errorf("no log line for the failed accepts:\n%s", log.String()[logBefore:])
	}
}
