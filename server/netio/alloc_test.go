package netio

import (
	"crypto/tls"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestServingAllocatesNothing serves requests on the main thread, the whole way a request goes
// through netio (epoll, read, parse, execute, write), and counts the allocations per request: any
// would be garbage that request rates turn into collector work. The engine's share is
// fakeEngine's PING, which allocates nothing. Under TLS the client's records are made before the
// count starts, so that only the server's side is counted, and crypto/tls's own share is allowed:
// its readFromUntil allocates the io.Reader it hands to bytes.Buffer.ReadFrom, once for a record's
// header and once for its body (Go 1.26).
func TestServingAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	for _, tr := range transports(t) {
		t.Run(tr.name, func(t *testing.T) {
			var allowed float64
			if tr.client != nil {
				allowed = 2
			}
			g, c, client := mainThreadConn(t, tr)
			const requests = 200
			reqs := make([][]byte, requests+1) // AllocsPerRun runs once more to warm up
			for i := range reqs {
				reqs[i] = []byte("PING\r\n")
			}
			if tr.client != nil {
				reqs = tlsRecords(t, g, c, client, tr.client, reqs)
			}
			buf := make([]byte, 4096)
			i := 0
			allocs := testing.AllocsPerRun(requests, func() {
				serveOne(t, g, client, reqs[i], buf)
				i++
			})
			if allocs > allowed {
				t.Fatalf("%.2f allocations per request, want at most %v", allocs, allowed)
			}
		})
	}
}

// raceEnabled is set by race_test.go in a build with the race detector.
var raceEnabled bool

// mainThreadConn makes a group of the main thread alone, serving one conn (a socket pair's end;
// the other, client, is the test's, non-blocking), driven by hand rather than by a loop.
func mainThreadConn(t *testing.T, tr transport) (*Group, *Conn, int) {
	t.Helper()
	g, _ := newTestGroup(t)
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		g.Stop()
		Close(fds[1])
	})
	c := NewConn(fds[0], &fakeClient{})
	if tr.server == nil {
		g.Assign(c)
	} else if err := g.Handshake(c, tr.server, waitLimit); err != nil {
		t.Fatal(err)
	}
	return g, c, fds[1]
}

// serveOne sends one request from the client end, runs the main thread's loop until the reply
// is back, and reads it.
func serveOne(t *testing.T, g *Group, client int, req, buf []byte) {
	if n, err := unix.Write(client, req); n != len(req) || err != nil {
		t.Fatalf("client write: %d of %d bytes, %v", n, len(req), err)
	}
	for range 100 {
		for _, ev := range g.Wait(1000) {
			g.OnMainEvent(ev)
		}
		g.Serve()
		g.Flush()
		if n, _ := unix.Read(client, buf); n > 0 {
			return
		}
	}
	t.Fatal("no reply")
}

// tlsRecords completes the TLS handshake of c, served by g, with a client over the client end,
// then returns reqs encrypted by that client, a record each, in order. Only the records go over
// the socket from then on: what the server replies is read as bytes and not decrypted.
func tlsRecords(t *testing.T, g *Group, c *Conn, client int, cfg *tls.Config, reqs [][]byte) [][]byte {
	t.Helper()
	dup, err := unix.Dup(client)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(dup), "client")
	nc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	rec := &recordingConn{Conn: nc}
	tc := tls.Client(rec, cfg)
	_ = tc.SetDeadline(time.Now().Add(waitLimit))
	done := make(chan error, 1)
	go func() { done <- tc.Handshake() }()
	// The server's handshake runs in a goroutine of its own; the main thread assigns the conn
	// when it hears the outcome.
	deadline := time.Now().Add(waitLimit)
	for c.thread == nil {
		if time.Now().After(deadline) {
			t.Fatal("the server's handshake did not end")
		}
		g.Wait(10)
		g.Serve()
	}
	if err := <-done; err != nil {
		t.Fatalf("client handshake: %v", err)
	}
	rec.recording = true
	out := make([][]byte, len(reqs))
	for i, r := range reqs {
		if _, err := tc.Write(r); err != nil {
			t.Fatal(err)
		}
		out[i] = rec.last
	}
	return out
}

// recordingConn passes writes through until recording, then keeps the last one instead.
type recordingConn struct {
	net.Conn
	recording bool
	last      []byte
}

func (r *recordingConn) Write(b []byte) (int, error) {
	if !r.recording {
		return r.Conn.Write(b)
	}
	r.last = append([]byte(nil), b...)
	return len(b), nil
}
