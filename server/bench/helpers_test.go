package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/engine"
	"github.com/iocache/iocache/server/testpeer"
)

// This file starts the servers the tests run against, all on 127.0.0.1 and free ports: an
// in-process iocache-server and Debian's redis-server.

// startIOCache starts an in-process iocache-server and returns its port.
func startIOCache(t testing.TB, tune func(*config.Config)) int {
	t.Helper()
	cfg := config.New()
	cfg.Port = 0
	cfg.Bind = []string{"127.0.0.1"}
	cfg.LogLevel = "warning"
	cfg.Save = ""
	if tune != nil {
		tune(cfg)
	}
	s, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Serve()
	}()
	select {
	case <-s.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("iocache-server did not become ready")
	}
	t.Cleanup(func() {
		s.Shutdown()
		<-done
	})
	return portOf(t, s.Addr())
}

// startRedis starts Debian's redis-server without persistence on a free port.
func startRedis(t testing.TB, args ...string) int {
	t.Helper()
	bin := testpeer.Require(t, "redis-server")
	port := testpeer.FreePort(t)
	argv := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"}, args...)
	cmd := exec.Command(bin, argv...)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			c.Close()
			return port
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server did not listen on %d: %v\n%s", port, err, log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func portOf(t testing.TB, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(p)
	return n
}

// runJSON runs Main with args plus --json-full and decodes the result.
func runJSON(t *testing.T, args ...string) (*Result, int, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(append(args, "--json-full"), &out, &errb)
	var r Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("output is not JSON (exit %d): %v\n%s\nstderr: %s", code, err, out.String(), errb.String())
	}
	return &r, code, errb.String()
}

// command sends one command on a fresh connection and returns the reply text.
func command(t *testing.T, port int, args ...string) string {
	t.Helper()
	nc, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := control{nc: nc, rd: newReplyReader(4096)}
	s, err := c.call(5*time.Second, args...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return s
}

func portArgs(port int, args ...string) []string {
	return append([]string{"--host", "127.0.0.1", "--port", fmt.Sprint(port)}, args...)
}
