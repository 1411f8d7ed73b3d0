package netio

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/iocache/iocache/server/testpeer"
)

// The tests run each case over both transports a conn can have: plaintext, and TLS with a
// certificate of testpeer's throw-away CA (crypto/tls on both ends, loopback only). They must behave
// alike.

type transport struct {
	name   string
	server *tls.Config // nil: plaintext
	client *tls.Config
}

func transports(t *testing.T) []transport {
	server, client := testTLSConfigs(t)
	return []transport{{name: "plain"}, {name: "tls", server: server, client: client}}
}

// testTLSConfigs is a server presenting a leaf of testpeer's throw-away CA for 127.0.0.1 and a
// client that trusts that CA.
func testTLSConfigs(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	certs := testpeer.NewCerts(t)
	pair, err := tls.LoadX509KeyPair(certs.CertFile, certs.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}}, certs.ClientConfig(t, false)
}

// client is a test's connection to a testServer, with a deadline on every operation.
type client struct {
	t    *testing.T
	wire *trickleConn // the TCP conn
	conn net.Conn     // wire, or the TLS conn over it
	r    *bufio.Reader
}

type dialOpt func(*net.Dialer)

// withRcvBuf gives the client socket a receive buffer of n bytes.
func withRcvBuf(n int) dialOpt {
	return func(d *net.Dialer) {
		d.Control = func(_, _ string, rc syscall.RawConn) error {
			var err error
			if cerr := rc.Control(func(fd uintptr) { err = setRcvBuf(fd, n) }); cerr != nil {
				return cerr
			}
			return err
		}
	}
}

// dial connects to s over its transport (handshake included) and closes the conn when the test
// ends.
func (s *testServer) dial(t *testing.T, opts ...dialOpt) *client {
	t.Helper()
	d := &net.Dialer{Timeout: waitLimit}
	for _, o := range opts {
		o(d)
	}
	nc, err := d.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	c := &client{t: t, wire: &trickleConn{Conn: nc}}
	c.conn = c.wire
	t.Cleanup(func() { c.conn.Close() })
	if s.tr.client != nil {
		tc := tls.Client(c.wire, s.tr.client)
		_ = tc.SetDeadline(time.Now().Add(waitLimit))
		if err := tc.Handshake(); err != nil {
			t.Fatalf("TLS handshake: %v", err)
		}
		c.conn = tc
	}
	c.r = bufio.NewReader(c.conn)
	return c
}

// send writes b, in one write or, pieces > 0, pieces bytes at a time.
func (c *client) send(b []byte, pieces int) {
	c.t.Helper()
	_ = c.conn.SetWriteDeadline(time.Now().Add(waitLimit))
	if pieces <= 0 {
		pieces = len(b)
	}
	for len(b) > 0 {
		n := min(pieces, len(b))
		if _, err := c.conn.Write(b[:n]); err != nil {
			c.t.Fatalf("write: %v", err)
		}
		b = b[n:]
	}
}

// reply reads one reply: "+text", "-text", ":n", or "$" followed by a bulk string's bytes.
func (c *client) reply() (string, error) {
	_ = c.conn.SetReadDeadline(time.Now().Add(waitLimit))
	line, err := c.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return "", fmt.Errorf("malformed reply line %q", line)
	}
	line = line[:len(line)-2]
	if line[0] != '$' {
		return line, nil
	}
	n, err := strconv.Atoi(line[1:])
	if err != nil || n < 0 {
		return "", fmt.Errorf("bad bulk length %q", line)
	}
	b := make([]byte, n+2)
	if _, err := io.ReadFull(c.r, b); err != nil {
		return "", err
	}
	return "$" + string(b[:n]), nil
}

// expect reads the next reply and fails the test unless it is want.
func (c *client) expect(want string) {
	c.t.Helper()
	got, err := c.reply()
	if err != nil {
		c.t.Fatalf("reading the reply %.40q: %v", want, err)
	}
	if got != want {
		c.t.Fatalf("reply %.60q, want %.60q", got, want)
	}
}

// expectClosed reads until the server's close shows, failing the test if it does not within the
// deadline. Output the server wrote before it closed may come first.
func (c *client) expectClosed() {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(waitLimit))
	buf := make([]byte, 64<<10)
	for {
		_, err := c.r.Read(buf)
		if err == nil {
			continue
		}
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			c.t.Fatalf("the server did not close the connection: %v", err)
		}
		return // end of stream, a reset, or TLS's complaint about either
	}
}

// trickleConn writes in pieces of at most trickle bytes (when not 0), one system call each and a
// pause between them, so that the server reads what the client sent in as many reads. Under TLS
// it splits records on the wire, not just requests.
type trickleConn struct {
	net.Conn
	trickle atomic.Int32
}

func (w *trickleConn) Write(b []byte) (int, error) {
	size := int(w.trickle.Load())
	if size == 0 {
		return w.Conn.Write(b)
	}
	written := 0
	for written < len(b) {
		n, err := w.Conn.Write(b[written:min(written+size, len(b))])
		written += n
		if err != nil {
			return written, err
		}
		time.Sleep(20 * time.Microsecond)
	}
	return written, nil
}

// multibulk is a request in RESP's multibulk form.
func multibulk(args ...string) []byte {
	b := fmt.Appendf(nil, "*%d\r\n", len(args))
	for _, a := range args {
		b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b
}
