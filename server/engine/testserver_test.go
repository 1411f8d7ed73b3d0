package engine

import (
	"bufio"
	"context"
	"io"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/iocache/iocache/server/config"
)

// startServer runs an in-process server on a free loopback port. The configuration may be
// adjusted by mutate before the server starts.
func startServer(t testing.TB, mutate func(*config.Config)) (*Server, string) {
	t.Helper()
	cfg := config.New()
	cfg.Port = 0
	cfg.Bind = []string{"127.0.0.1"}
	cfg.LogLevel = "warning"
	cfg.MetricsPort = 0
	// Tests that ask for I/O threads mean to exercise them, at any load; the load-based policy
	// has tests of its own.
	cfg.IOThreadsActivation = "always"
	cfg.Dir = t.TempDir() // save points are on by default, as in Redis
	if mutate != nil {
		mutate(cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("starting server: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve() }()
	select {
	case <-s.Ready():
	case err := <-done:
		t.Fatalf("server stopped at start: %v", err)
	}
	t.Cleanup(func() {
		s.Shutdown()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("server did not stop within 10s")
		}
	})
	return s, s.Addr()
}

// redisClient connects go-redis with the given protocol version (2 or 3).
func redisClient(t testing.TB, addr string, proto int) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: proto, DisableIdentity: true, MaxRetries: -1, PoolSize: 4})
	t.Cleanup(func() { c.Close() })
	return c
}

// rawConn is a plain TCP connection for protocol-level tests.
type rawConn struct {
	t  testing.TB
	c  net.Conn
	br *bufio.Reader
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c, br: bufio.NewReader(c)}
}

func (r *rawConn) send(s string) {
	r.t.Helper()
	if _, err := io.WriteString(r.c, s); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

// line reads one reply line without its CRLF.
func (r *rawConn) line() string {
	r.t.Helper()
	_ = r.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	l, err := r.br.ReadString('\n')
	if err != nil {
		r.t.Fatalf("read: %v (got %q)", err, l)
	}
	return strings.TrimRight(l, "\r\n")
}

// expectClosed asserts the server closes the connection (after any remaining replies).
func (r *rawConn) expectClosed() {
	r.t.Helper()
	_ = r.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.ReadAll(r.br)
	if err != nil {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			r.t.Fatal("connection still open after 5s, expected the server to close it")
		}
	}
}

func ctx() context.Context { return context.Background() }

func regexpFind(pattern, s string) string {
	m := regexp.MustCompile(pattern).FindStringSubmatch(s)
	if m == nil {
		return ""
	}
	return m[1]
}
