// Package resp reads client requests in the Redis protocol (RESP multibulk and inline commands) and
// writes replies in RESP2 or RESP3. Both directions are pure functions over byte slices that
// allocate nothing in steady state, so they can run on any thread and be fuzzed.
package resp

import (
	"bytes"
	"errors"
	"slices"
)

// Limits bound what one request may ask the server to buffer. Redis's values are the defaults.
type Limits struct {
	// MaxBulkLen is proto-max-bulk-len: the largest single argument.
	MaxBulkLen int64
	// MaxMultibulk is the most arguments one request may have.
	MaxMultibulk int64
	// MaxInline is the longest inline request (and multibulk header line) without a newline.
	MaxInline int
	// Unauthenticated applies Redis's stricter limits to clients that have not passed AUTH yet:
	// at most 10 arguments of at most 16 KiB.
	Unauthenticated bool
}

// DefaultLimits are redis-server's defaults.
var DefaultLimits = Limits{MaxBulkLen: 512 << 20, MaxMultibulk: 1024 * 1024, MaxInline: 64 << 10}

// ProtocolError is a request the server cannot parse. Its text is exactly what Redis replies
// (after "ERR "), and the connection must be closed after the reply, because the stream can no
// longer be framed.
type ProtocolError struct{ Msg string }

func (e *ProtocolError) Error() string { return e.Msg }

var (
	errTooBigMbulkCount  = &ProtocolError{"Protocol error: too big mbulk count string"}
	errInvalidMbulkLen   = &ProtocolError{"Protocol error: invalid multibulk length"}
	errTooBigBulkCount   = &ProtocolError{"Protocol error: too big bulk count string"}
	errInvalidBulkLen    = &ProtocolError{"Protocol error: invalid bulk length"}
	errTooBigInline      = &ProtocolError{"Protocol error: too big inline request"}
	errUnbalancedQuotes  = &ProtocolError{"Protocol error: unbalanced quotes in request"}
	errUnauthMbulk       = &ProtocolError{"Protocol error: unauthenticated multibulk length"}
	errUnauthBulk        = &ProtocolError{"Protocol error: unauthenticated bulk length"}
	errExpectedDollarFmt = "Protocol error: expected '$', got '"
)

// ErrIncomplete is returned with a hint of how many bytes the buffer must hold before a parse can
// succeed; callers wait for at least that much data instead of re-parsing on every read.
var ErrIncomplete = errors.New("incomplete request")

// unauthenticated limits, as in Redis's processMultibulkBuffer.
const (
	unauthMaxMultibulk = 10
	unauthMaxBulk      = 16384
)

// ParseCommand reads one request from buf. On success it appends the arguments to argv (as slices
// of buf: they stay valid while buf is not overwritten) and returns the grown argv and the number
// of bytes consumed. An empty inline line consumes its bytes and yields no arguments.
//
// On ErrIncomplete, need is the total buffer length needed before trying again (at least
// len(buf)+1). On a *ProtocolError the connection must be answered and closed.
func ParseCommand(buf []byte, argv [][]byte, lim *Limits) (out [][]byte, consumed int, need int, err error) {
	return ParseCommandFrom(buf, argv, lim, nil)
}

// Progress remembers how far ParseCommandFrom got into a multibulk request that has not arrived
// in full, so that the next call goes on from there: a request whose million arguments arrive
// over a thousand reads is parsed once, not a thousand times from its first byte. Positions are
// relative to the request's first byte, so the caller may move the unparsed bytes (compact or
// grow its buffer) between calls. The zero value is a request not yet started.
type Progress struct {
	count int64 // arguments the request announced; 0 while no request is in progress
	pos   int   // bytes of the request parsed so far: its header and complete arguments
	offs  []int // start and end of each complete argument
}

// Reset forgets a request in progress (after a protocol error, or when the client goes away).
func (p *Progress) Reset() {
	p.count, p.pos = 0, 0
	if cap(p.offs) > 1<<16 {
		p.offs = nil // a request with many arguments is over: give its offsets back
	}
	p.offs = p.offs[:0]
}

// ParseCommandFrom is ParseCommand that, given a Progress, resumes a request it saw in part
// before (buf must start at that request's first byte) and records progress on ErrIncomplete.
func ParseCommandFrom(buf []byte, argv [][]byte, lim *Limits, p *Progress) (out [][]byte, consumed int, need int, err error) {
	if p != nil && p.count > 0 {
		return resumeMultibulk(buf, argv, lim, p)
	}
	if len(buf) == 0 {
		return argv, 0, 1, ErrIncomplete
	}
	if buf[0] != '*' {
		return parseInline(buf, argv, lim)
	}
	nl := bytes.IndexByte(buf, '\n')
	if nl < 0 {
		if len(buf) > lim.MaxInline {
			return argv, 0, 0, errTooBigMbulkCount
		}
		return argv, 0, len(buf) + 1, ErrIncomplete
	}
	if nl < 1 || buf[nl-1] != '\r' {
		// Redis searches for "\r\n"; a lone '\n' is part of the count, which then fails to parse.
		return argv, 0, 0, errInvalidMbulkLen
	}
	count, ok := ParseInt(buf[1 : nl-1])
	if !ok || count > lim.MaxMultibulk {
		return argv, 0, 0, errInvalidMbulkLen
	}
	if lim.Unauthenticated && count > unauthMaxMultibulk {
		return argv, 0, 0, errUnauthMbulk
	}
	pos := nl + 1
	if count <= 0 {
		return argv, pos, 0, nil
	}
	start := len(argv)
	for i := int64(0); i < count; i++ {
		dataStart, dataEnd, need, err := parseBulk(buf, pos, lim)
		if err != nil {
			if err == ErrIncomplete && p != nil {
				p.save(buf, nl+1, int(i), count, pos)
			}
			return argv[:start], 0, need, err
		}
		argv = append(argv, buf[dataStart:dataEnd:dataEnd])
		pos = dataEnd + 2
	}
	return argv, pos, 0, nil
}

// save records a request cut short after its header (ending at first) and done complete
// arguments, the next one starting at pos: it walks the complete arguments' headers once more,
// which the parse just validated, to note where each one lies.
func (p *Progress) save(buf []byte, first, done int, count int64, pos int) {
	p.count, p.pos = count, pos
	p.offs = p.offs[:0]
	q := first
	for k := 0; k < done; k++ {
		nl := q + bytes.IndexByte(buf[q:], '\n')
		n, _ := ParseInt(buf[q+1 : nl-1])
		p.offs = append(p.offs, nl+1, nl+1+int(n))
		q = nl + 1 + int(n) + 2
	}
}

// resumeMultibulk goes on with the request p describes.
func resumeMultibulk(buf []byte, argv [][]byte, lim *Limits, p *Progress) ([][]byte, int, int, error) {
	pos := p.pos
	for i := int64(len(p.offs) / 2); i < p.count; i++ {
		dataStart, dataEnd, need, err := parseBulk(buf, pos, lim)
		if err != nil {
			if err == ErrIncomplete {
				p.pos = pos
			} else {
				p.Reset()
			}
			return argv, 0, need, err
		}
		if len(p.offs) == cap(p.offs) {
			// Double, where append grows a large slice by a quarter: a million arguments
			// otherwise cost some forty copies of the offsets, each into fresh pages.
			p.offs = slices.Grow(p.offs, max(len(p.offs), 2))
		}
		p.offs = append(p.offs, dataStart, dataEnd)
		pos = dataEnd + 2
	}
	argv = slices.Grow(argv, len(p.offs)/2) // all arguments arrived: one allocation, not forty
	for k := 0; k < len(p.offs); k += 2 {
		argv = append(argv, buf[p.offs[k]:p.offs[k+1]:p.offs[k+1]])
	}
	p.Reset()
	return argv, pos, 0, nil
}

// parseBulk reads the bulk argument whose header starts at buf[pos]: where its bytes lie, or
// ErrIncomplete with the buffer length needed, or a protocol error.
func parseBulk(buf []byte, pos int, lim *Limits) (dataStart, dataEnd, need int, err error) {
	if pos >= len(buf) {
		return 0, 0, pos + 1, ErrIncomplete
	}
	if buf[pos] != '$' {
		return 0, 0, 0, &ProtocolError{errExpectedDollarFmt + string(buf[pos:pos+1]) + "'"}
	}
	rel := bytes.IndexByte(buf[pos:], '\n')
	if rel < 0 {
		if len(buf)-pos > lim.MaxInline {
			return 0, 0, 0, errTooBigBulkCount
		}
		return 0, 0, len(buf) + 1, ErrIncomplete
	}
	end := pos + rel
	if buf[end-1] != '\r' {
		return 0, 0, 0, errInvalidBulkLen
	}
	n, ok := ParseInt(buf[pos+1 : end-1])
	if !ok || n < 0 || n > lim.MaxBulkLen {
		return 0, 0, 0, errInvalidBulkLen
	}
	if lim.Unauthenticated && n > unauthMaxBulk {
		return 0, 0, 0, errUnauthBulk
	}
	dataStart = end + 1
	dataEnd = dataStart + int(n)
	if dataEnd+2 > len(buf) {
		return 0, 0, dataEnd + 2, ErrIncomplete
	}
	// Redis does not check the trailing CRLF; it skips two bytes. Do the same, so that what
	// Redis accepts, iocache accepts.
	return dataStart, dataEnd, 0, nil
}

// EqualFold reports whether an argument is the lower-case keyword lower, ASCII letters compared
// without case, as Redis's strcasecmp compares command options. It does not allocate.
func EqualFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := 0; i < len(b); i++ {
		ch := b[i]
		if ch >= 'A' && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		if ch != lower[i] {
			return false
		}
	}
	return true
}

// ParseInt reads a decimal integer as Redis's string2ll does: an optional '-', digits without
// leading zeros, no spaces, no '+', no overflow. Lengths in requests and integer arguments of
// commands both go through it, so both accept exactly what Redis accepts.
func ParseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || b[0] < '1' || b[0] > '9' {
		return 0, false
	}
	var v uint64
	for _, ch := range b {
		if ch < '0' || ch > '9' || v > (1<<64-1)/10 {
			return 0, false
		}
		nv := v*10 + uint64(ch-'0')
		if nv < v {
			return 0, false
		}
		v = nv
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > 1<<63-1 {
		return 0, false
	}
	return int64(v), true
}

// parseInline reads a telnet-style request: arguments separated by spaces, with Redis's quoting.
// Quoted arguments are unescaped in place inside buf, so no memory is allocated.
func parseInline(buf []byte, argv [][]byte, lim *Limits) ([][]byte, int, int, error) {
	nl := bytes.IndexByte(buf, '\n')
	if nl < 0 {
		if len(buf) > lim.MaxInline {
			return argv, 0, 0, errTooBigInline
		}
		return argv, 0, len(buf) + 1, ErrIncomplete
	}
	line := buf[:nl]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	start := len(argv)
	out, ok := SplitArgs(line, argv)
	if !ok {
		return argv[:start], 0, 0, errUnbalancedQuotes
	}
	if lim.Unauthenticated && len(out)-start > unauthMaxMultibulk {
		return argv[:start], 0, 0, errUnauthMbulk
	}
	return out, nl + 1, 0, nil
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func hexVal(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// SplitArgs is Redis's sdssplitargs, the one port of it here (inline commands and config files
// use it): spaces separate arguments, "double quotes" take \n \r \t \b \a \\ \" and \xHH
// escapes, 'single quotes' take \', and a closing quote must be followed by a space or the end
// of the line. It works in place: each unescaped argument is written over the line's own bytes
// (it is never longer than its source) and appended to argv. ok is false for unbalanced quotes.
func SplitArgs(line []byte, argv [][]byte) (out [][]byte, ok bool) {
	i := 0
	for {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i >= len(line) {
			return argv, true
		}
		w := i // write position
		argStart := i
		inDQ, inSQ := false, false
	arg:
		for {
			switch {
			case inDQ:
				if i >= len(line) {
					return argv, false
				}
				c := line[i]
				if c == '\\' && i+3 < len(line) && line[i+1] == 'x' {
					h, ok1 := hexVal(line[i+2])
					l, ok2 := hexVal(line[i+3])
					if ok1 && ok2 {
						line[w] = h<<4 | l
						w++
						i += 4
						continue
					}
				}
				if c == '\\' && i+1 < len(line) {
					i++
					switch line[i] {
					case 'n':
						line[w] = '\n'
					case 'r':
						line[w] = '\r'
					case 't':
						line[w] = '\t'
					case 'b':
						line[w] = '\b'
					case 'a':
						line[w] = '\a'
					default:
						line[w] = line[i]
					}
					w++
					i++
					continue
				}
				if c == '"' {
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return argv, false
					}
					i++
					break arg
				}
				line[w] = c
				w++
				i++
			case inSQ:
				if i >= len(line) {
					return argv, false
				}
				c := line[i]
				if c == '\\' && i+1 < len(line) && line[i+1] == '\'' {
					line[w] = '\''
					w++
					i += 2
					continue
				}
				if c == '\'' {
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return argv, false
					}
					i++
					break arg
				}
				line[w] = c
				w++
				i++
			default:
				if i >= len(line) || isSpace(line[i]) {
					break arg
				}
				switch line[i] {
				case '"':
					inDQ = true
				case '\'':
					inSQ = true
				default:
					line[w] = line[i]
					w++
				}
				i++
			}
		}
		argv = append(argv, line[argStart:w:w])
	}
}
