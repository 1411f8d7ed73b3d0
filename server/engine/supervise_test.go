package engine

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iocache/iocache/server/config"
)

// pidfile holds the pid while the server runs and is gone after; supervised systemd sends
// READY=1 to NOTIFY_SOCKET once the server accepts connections, and STOPPING=1 when it stops.
func TestPidFileAndSystemdNotify(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "notify.sock")
	l, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	t.Setenv("NOTIFY_SOCKET", sock)
	pidfile := filepath.Join(dir, "iocache.pid")
	s, _ := startServer(t, func(c *config.Config) {
		c.PidFile = pidfile
		c.SupervisedMode = "auto"
	})
	b, err := os.ReadFile(pidfile)
	if err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Fatalf("pid file: %q %v", b, err)
	}
	read := func() string {
		buf := make([]byte, 512)
		_ = l.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, err := l.Read(buf)
		if err != nil {
			t.Fatalf("reading the notify socket: %v", err)
		}
		return string(buf[:n])
	}
	if msg := read(); !strings.Contains(msg, "READY=1\n") {
		t.Errorf("ready notification: %q", msg)
	}
	s.Shutdown()
	if msg := read(); msg != "STOPPING=1\n" {
		t.Errorf("stopping notification: %q", msg)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat(pidfile); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("pid file left after shutdown")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
