package replication

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// TestLineReader: lines with CRLF or LF, nothing read past the line asked for.
func TestLineReader(t *testing.T) {
	r := strings.NewReader("+PONG\r\n\nnext\nrest")
	lr := LineReader{R: r}
	for _, want := range []string{"+PONG", "", "next"} {
		if got, err := lr.Line(); got != want || err != nil {
			t.Fatalf("line %q %v, want %q", got, err, want)
		}
	}
	if rest, _ := io.ReadAll(r); string(rest) != "rest" {
		t.Fatalf("left %q", rest)
	}
	long := LineReader{R: strings.NewReader(strings.Repeat("x", 70<<10) + "\n")}
	if _, err := long.Line(); err == nil {
		t.Fatal("a line past 64 KiB read")
	}
}

// TestOpenPayloadEOFMark: the disk-less form reads up to the mark, whatever the reads' sizes and
// wherever the mark is split between them, after the primary's keepalives; the mark is not
// part of the payload and nothing after it is read.
func TestOpenPayloadEOFMark(t *testing.T) {
	mark := strings.Repeat("m", 40)
	payload := bytes.Repeat([]byte("REDIS0011 payload with a partial mark mmmm "), 3000)
	for _, tc := range []struct {
		name string
		wrap func(io.Reader) io.Reader
	}{
		{"whole reads", func(r io.Reader) io.Reader { return r }},
		{"one byte at a time", iotest.OneByteReader},
		{"half reads", iotest.HalfReader},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The mark ends a read, as a primary sends nothing after it until acknowledged.
			src := io.MultiReader(strings.NewReader("\n\n$EOF:"+mark+"\r\n"), tc.wrap(bytes.NewReader(append(append([]byte(nil), payload...), mark...))))
			r, err := OpenPayload(src)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(r)
			if err != nil || !bytes.Equal(got, payload) {
				t.Fatalf("read %d bytes (%v), want the %d of the payload", len(got), err, len(payload))
			}
		})
	}
}

// TestOpenPayloadBulk: the "$<len>" form reads len bytes and leaves the stream after them.
func TestOpenPayloadBulk(t *testing.T) {
	src := strings.NewReader("$5\r\nREDIS*1\r\n$4\r\nPING\r\n")
	r, err := OpenPayload(src)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := io.ReadAll(r); string(got) != "REDIS" {
		t.Fatalf("payload %q", got)
	}
	if rest, _ := io.ReadAll(src); string(rest) != "*1\r\n$4\r\nPING\r\n" {
		t.Fatalf("the stream after it: %q", rest)
	}
}

// TestOpenPayloadRefuses: Redis's texts for what is not a payload header.
func TestOpenPayloadRefuses(t *testing.T) {
	for header, want := range map[string]string{
		"+OK\r\n":        "Bad protocol from MASTER, the first byte is not '$' (we received '+OK')",
		"$EOF:short\r\n": "bad EOF mark 'short'",
		"$-1\r\n":        "bad bulk length '$-1'",
		"\n":             "I/O error reading bulk count from MASTER: EOF",
	} {
		if _, err := OpenPayload(strings.NewReader(header)); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: %v, want %q", header, err, want)
		}
	}
}

// TestDeadlineConn: a read that does not arrive within the timeout fails.
func TestDeadlineConn(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	d := DeadlineConn{Conn: a, Timeout: 20 * time.Millisecond}
	_, err := d.Read(make([]byte, 1))
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read from a silent peer: %v", err)
	}
}

// TestNewID: 40 hex characters, different each time.
func TestNewID(t *testing.T) {
	a, b := NewID(), NewID()
	if len(a) != 40 || strings.Trim(a, "0123456789abcdef") != "" || a == b {
		t.Fatalf("%q %q", a, b)
	}
}
