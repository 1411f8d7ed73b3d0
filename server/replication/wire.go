package replication

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// NewID makes a replication ID: 40 random hex characters. A disk-less full sync's "$EOF:" mark
// is one too, as in Redis.
func NewID() string {
	var b [20]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// LineReader reads the CRLF-terminated lines of a replica's handshake a byte at a time, so that
// it never takes bytes that belong to what follows them: the payload, then the stream, which
// the server reads from the same socket on its own.
type LineReader struct{ R io.Reader }

// Line is the next line, without its CRLF (or LF); an empty line is a primary's keepalive.
func (l *LineReader) Line() (string, error) {
	var b []byte
	var one [1]byte
	for {
		if _, err := io.ReadFull(l.R, one[:]); err != nil {
			return "", err
		}
		if one[0] == '\n' {
			return string(bytes.TrimSuffix(b, []byte("\r"))), nil
		}
		if len(b) >= 64<<10 {
			return "", errors.New("line too long")
		}
		b = append(b, one[0])
	}
}

// DeadlineConn gives each read Timeout (repl-timeout) to arrive: a primary that stalls
// mid-transfer ends the sync instead of holding the replica's handshake goroutine forever.
type DeadlineConn struct {
	net.Conn
	Timeout time.Duration
}

func (d DeadlineConn) Read(p []byte) (int, error) {
	_ = d.Conn.SetReadDeadline(time.Now().Add(d.Timeout))
	return d.Conn.Read(p)
}

// OpenPayload reads the header of the RDB payload that follows +FULLRESYNC from conn (after the
// empty lines a primary sends while it prepares the snapshot) and returns the payload's reader,
// which reads nothing past its end: the "$<len>" form through a reader limited to len bytes,
// the disk-less "$EOF:<mark>" form up to the mark. Its errors are the texts Redis logs.
func OpenPayload(conn io.Reader) (io.Reader, error) {
	lr := LineReader{R: conn}
	header, err := lr.Line()
	for err == nil && header == "" {
		header, err = lr.Line() // the primary's keepalives while it prepares the snapshot
	}
	if err != nil {
		return nil, fmt.Errorf("I/O error reading bulk count from MASTER: %v", err)
	}
	if !strings.HasPrefix(header, "$") {
		return nil, fmt.Errorf("Bad protocol from MASTER, the first byte is not '$' (we received '%s'), are you sure the host and port are right?", header)
	}
	if m, ok := strings.CutPrefix(header, "$EOF:"); ok {
		if len(m) != 40 {
			return nil, fmt.Errorf("bad EOF mark '%s'", m)
		}
		return &eofMarkReader{r: conn, mark: []byte(m), buf: make([]byte, 64<<10)}, nil
	}
	n, err := strconv.ParseInt(header[1:], 10, 64)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("bad bulk length '%s'", header)
	}
	return io.LimitReader(conn, n), nil
}

// eofMarkReader reads a disk-less payload up to its end mark, which it withholds: the payload
// ends where a read ends with the mark, as Redis's replica decides, since a primary sends
// nothing after the mark until the replica acknowledges.
type eofMarkReader struct {
	r         io.Reader
	mark, buf []byte
	hold, out []byte
	done      bool
}

func (e *eofMarkReader) Read(p []byte) (int, error) {
	for len(e.out) == 0 {
		if e.done {
			return 0, io.EOF
		}
		n, err := e.r.Read(e.buf)
		data := append(e.hold, e.buf[:n]...)
		if bytes.HasSuffix(data, e.mark) {
			e.out, e.hold, e.done = data[:len(data)-len(e.mark)], nil, true
		} else {
			keep := min(len(data), len(e.mark))
			e.out = data[:len(data)-keep]
			e.hold = append([]byte(nil), data[len(data)-keep:]...)
		}
		if err != nil && !e.done {
			return 0, err
		}
	}
	n := copy(p, e.out)
	e.out = e.out[n:]
	return n, nil
}
