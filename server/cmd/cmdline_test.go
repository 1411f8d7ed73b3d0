package cmd

import (
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iocache/iocache/server/testpeer"
)

// TestCommandLineFormsMatchRedis runs the same command-line arguments through Debian's
// redis-server and iocache-server: both start, or both refuse; when they start, CONFIG GET of
// the directive answers the same. The forms are those docker-compose files and guides write,
// a directive's arguments all in one quoted argument among them.
func TestCommandLineFormsMatchRedis(t *testing.T) {
	redisBin := testpeer.Require(t, "redis-server")
	ioBin := buildProgram(t, t.TempDir(), "iocache-server")
	for _, tc := range []struct {
		directive string
		args      []string
	}{
		{"replicaof", []string{"--replicaof", "127.0.0.1 6380"}},
		{"replicaof", []string{"--replicaof", "127.0.0.1", "6380"}},
		{"bind", []string{"--bind", "127.0.0.1 ::1"}},
		{"client-output-buffer-limit", []string{"--client-output-buffer-limit", "normal 1mb 512kb 10"}},
		{"save", []string{"--save", "900 1 300 10"}},
		{"maxmemory", []string{"--maxmemory", "100mb"}},
		{"maxmemory", []string{"--maxmemory", "100mb 5"}},
		{"maxmemory-policy", []string{"--maxmemory-policy", "allkeys-lru"}},
		{"hz", []string{"--hz", "20", "30"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			want, wantOK := startAndGet(t, redisBin, tc.directive, tc.args)
			got, gotOK := startAndGet(t, ioBin, tc.directive, tc.args)
			if wantOK != gotOK {
				t.Fatalf("redis-server started: %v; iocache-server started: %v (%s)", wantOK, gotOK, got)
			}
			if wantOK && want != got {
				t.Errorf("CONFIG GET %s: redis %q, iocache %q", tc.directive, want, got)
			}
		})
	}
}

// startAndGet starts bin on a free port with args and returns CONFIG GET directive's value, or
// false when the server refused to start.
func startAndGet(t *testing.T, bin, directive string, args []string) (string, bool) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	all := append([]string{"--port", strconv.Itoa(port), "--save", ""}, args...)
	if strings.HasSuffix(bin, "iocache-server") {
		all = append(all, "--metrics-port", "0")
	}
	cmd := exec.Command(bin, all...)
	cmd.Dir = t.TempDir()
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	defer func() { _ = cmd.Process.Kill(); <-exited }()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return out.String(), false
		default:
		}
		if c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			fmt.Fprintf(c, "CONFIG GET %s\r\n", directive)
			buf := make([]byte, 4096)
			n, _ := c.Read(buf)
			return string(buf[:n]), true
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s neither started nor exited:\n%s", bin, out.String())
	return "", false
}
