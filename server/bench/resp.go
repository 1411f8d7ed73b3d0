package bench

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strconv"
)

// This file is the RESP2 wire code: encoding requests (done once per template, not per request)
// and a reply reader that skips over replies in a reused buffer. The benchmark only needs to know
// where a reply ends and whether it was an error or nil, so nothing is copied out of the buffer.

// encodeCommand encodes argv as a RESP array of bulk strings, the form every client sends.
func encodeCommand(args ...string) []byte {
	b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, "\r\n"...)
		b = append(b, a...)
		b = append(b, "\r\n"...)
	}
	return b
}

// Reply kinds the benchmark tells apart.
const (
	replyValue = iota // anything that is not an error or nil
	replyNil          // $-1 or *-1: GET of a missing key
	replyError        // -ERR ...
)

var errProtocol = errors.New("protocol error in reply")

// maxNesting bounds array nesting so a hostile or broken server cannot recurse the parser deep.
const maxNesting = 16

// parseReply parses the reply at the start of b. It returns the reply's length, or 0 when b holds
// only part of it.
func parseReply(b []byte) (n int, kind int, err error) {
	return parseAt(b, 0)
}

func parseAt(b []byte, depth int) (int, int, error) {
	if len(b) == 0 {
		return 0, 0, nil
	}
	nl := bytes.IndexByte(b, '\n')
	if nl < 0 {
		return 0, 0, nil
	}
	if nl < 2 || b[nl-1] != '\r' {
		return 0, 0, errProtocol
	}
	line := nl + 1
	switch b[0] {
	case '+', ':':
		return line, replyValue, nil
	case '-':
		return line, replyError, nil
	case '$':
		size, ok := atoi(b[1 : nl-1])
		if !ok {
			return 0, 0, errProtocol
		}
		if size < 0 {
			return line, replyNil, nil
		}
		end := line + int(size) + 2
		if len(b) < end {
			return 0, 0, nil
		}
		return end, replyValue, nil
	case '*':
		count, ok := atoi(b[1 : nl-1])
		if !ok || depth >= maxNesting {
			return 0, 0, errProtocol
		}
		if count < 0 {
			return line, replyNil, nil
		}
		pos := line
		for i := int64(0); i < count; i++ {
			n, _, err := parseAt(b[pos:], depth+1)
			if err != nil || n == 0 {
				return 0, 0, err
			}
			pos += n
		}
		return pos, replyValue, nil
	}
	return 0, 0, errProtocol
}

// atoi parses a RESP length: an optional minus and decimal digits.
func atoi(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

// replyReader reads replies from one connection into a buffer that is reused; it grows only when a
// single reply is larger than the buffer (a big value), which the steady state never does twice.
type replyReader struct {
	buf    []byte
	r, w   int
	readAt int64 // mono() just after the last read: when the replies it brought arrived
}

func newReplyReader(size int) replyReader {
	return replyReader{buf: make([]byte, size)}
}

// next returns the next reply's kind and its bytes (valid until the next call), reading from the
// connection only when the buffer holds no complete reply.
func (rd *replyReader) next(c net.Conn) (int, []byte, error) {
	for {
		if rd.r < rd.w {
			n, kind, err := parseReply(rd.buf[rd.r:rd.w])
			if err != nil {
				return 0, nil, err
			}
			if n > 0 {
				p := rd.buf[rd.r : rd.r+n]
				rd.r += n
				return kind, p, nil
			}
		}
		if err := rd.fill(c); err != nil {
			return 0, nil, err
		}
	}
}

// fill reads more bytes. A partial reply is moved to the front when little room is left behind it,
// and the buffer doubles only when a partial reply fills all of it.
func (rd *replyReader) fill(c net.Conn) error {
	switch {
	case rd.r == rd.w:
		rd.r, rd.w = 0, 0
	case rd.r > 0 && len(rd.buf)-rd.w < len(rd.buf)/4:
		rd.w = copy(rd.buf, rd.buf[rd.r:rd.w])
		rd.r = 0
	}
	if rd.w == len(rd.buf) {
		nb := make([]byte, 2*len(rd.buf))
		copy(nb, rd.buf[:rd.w])
		rd.buf = nb
	}
	n, err := c.Read(rd.buf[rd.w:])
	rd.w += n
	if n > 0 {
		rd.readAt = mono()
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// errorText is an error reply without its '-' and CRLF.
func errorText(p []byte) string {
	return string(bytes.TrimRight(bytes.TrimPrefix(p, []byte("-")), "\r\n"))
}
