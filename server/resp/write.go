package resp

import (
	"math"
	"strconv"
)

// Writer appends replies to Buf in RESP2 or RESP3. Types RESP2 lacks are written the way Redis
// writes them to RESP2 clients: maps and sets as flat arrays, null as a null bulk or null array,
// doubles as bulk strings, booleans as integers.
type Writer struct {
	Buf   []byte
	RESP3 bool
}

// smallInts caches the encodings of small integers and lengths, the most common headers.
var smallInts [1024][]byte

func init() {
	for i := range smallInts {
		smallInts[i] = []byte(strconv.Itoa(i))
	}
}

func (w *Writer) appendInt(v int64) {
	if v >= 0 && v < int64(len(smallInts)) {
		w.Buf = append(w.Buf, smallInts[v]...)
		return
	}
	w.Buf = strconv.AppendInt(w.Buf, v, 10)
}

func (w *Writer) header(prefix byte, n int64) {
	w.Buf = append(w.Buf, prefix)
	w.appendInt(n)
	w.Buf = append(w.Buf, '\r', '\n')
}

// OK writes +OK.
func (w *Writer) OK() { w.Buf = append(w.Buf, "+OK\r\n"...) }

// Simple writes a status reply; s must not contain CR or LF.
func (w *Writer) Simple(s string) {
	w.Buf = append(w.Buf, '+')
	w.Buf = append(w.Buf, s...)
	w.Buf = append(w.Buf, '\r', '\n')
}

// Error writes an error reply; msg carries its code ("ERR ...", "WRONGTYPE ..."). Newlines are
// replaced by spaces, as Redis does, so the reply stays one line.
func (w *Writer) Error(msg string) {
	w.Buf = append(w.Buf, '-')
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		w.Buf = append(w.Buf, c)
	}
	w.Buf = append(w.Buf, '\r', '\n')
}

// Int writes an integer reply.
func (w *Writer) Int(v int64) { w.header(':', v) }

// Bulk writes a bulk string.
func (w *Writer) Bulk(b []byte) {
	w.header('$', int64(len(b)))
	w.Buf = append(w.Buf, b...)
	w.Buf = append(w.Buf, '\r', '\n')
}

// BulkString writes a bulk string from a string.
func (w *Writer) BulkString(s string) {
	w.header('$', int64(len(s)))
	w.Buf = append(w.Buf, s...)
	w.Buf = append(w.Buf, '\r', '\n')
}

// BulkInt writes an integer as a bulk string.
func (w *Writer) BulkInt(v int64) {
	var tmp [20]byte
	w.Bulk(strconv.AppendInt(tmp[:0], v, 10))
}

// Null writes the null bulk string ($-1 in RESP2, _ in RESP3).
func (w *Writer) Null() {
	if w.RESP3 {
		w.Buf = append(w.Buf, "_\r\n"...)
	} else {
		w.Buf = append(w.Buf, "$-1\r\n"...)
	}
}

// NullArray writes the null array (*-1 in RESP2, _ in RESP3).
func (w *Writer) NullArray() {
	if w.RESP3 {
		w.Buf = append(w.Buf, "_\r\n"...)
	} else {
		w.Buf = append(w.Buf, "*-1\r\n"...)
	}
}

// Array writes an array header of n elements; the caller writes them.
func (w *Writer) Array(n int) { w.header('*', int64(n)) }

// Map writes a map header of n pairs (RESP2: an array of 2n elements).
func (w *Writer) Map(n int) {
	if w.RESP3 {
		w.header('%', int64(n))
	} else {
		w.header('*', int64(2*n))
	}
}

// Set writes a set header (RESP2: an array).
func (w *Writer) Set(n int) {
	if w.RESP3 {
		w.header('~', int64(n))
	} else {
		w.header('*', int64(n))
	}
}

// Push writes a push header (RESP2: an array), for pub/sub messages.
func (w *Writer) Push(n int) {
	if w.RESP3 {
		w.header('>', int64(n))
	} else {
		w.header('*', int64(n))
	}
}

// Double writes a floating point reply, formatted as Redis formats doubles (%.17g, inf, -inf).
func (w *Writer) Double(f float64) {
	if w.RESP3 {
		w.Buf = append(w.Buf, ',')
		w.Buf = AppendDouble(w.Buf, f)
		w.Buf = append(w.Buf, '\r', '\n')
		return
	}
	var tmp [32]byte
	w.Bulk(AppendDouble(tmp[:0], f))
}

// Bool writes a boolean (RESP2: 1 or 0).
func (w *Writer) Bool(b bool) {
	switch {
	case w.RESP3 && b:
		w.Buf = append(w.Buf, "#t\r\n"...)
	case w.RESP3:
		w.Buf = append(w.Buf, "#f\r\n"...)
	case b:
		w.Buf = append(w.Buf, ":1\r\n"...)
	default:
		w.Buf = append(w.Buf, ":0\r\n"...)
	}
}

// Verbatim writes a verbatim string (RESP3 "=", RESP2 bulk), as INFO and CLIENT LIST reply.
func (w *Writer) Verbatim(s string) { w.VerbatimAs("txt", s) }

// VerbatimAs writes a verbatim string of the given format, which is cut or padded with spaces to
// its three characters as Redis's addReplyVerbatim does.
func (w *Writer) VerbatimAs(format, s string) {
	if !w.RESP3 {
		w.BulkString(s)
		return
	}
	w.header('=', int64(len(s)+4))
	for i := 0; i < 3; i++ {
		if i < len(format) {
			w.Buf = append(w.Buf, format[i])
		} else {
			w.Buf = append(w.Buf, ' ')
		}
	}
	w.Buf = append(w.Buf, ':')
	w.Buf = append(w.Buf, s...)
	w.Buf = append(w.Buf, '\r', '\n')
}

// BigNumber writes a big number given as its decimal digits (RESP3 "(", RESP2 bulk).
func (w *Writer) BigNumber(digits string) {
	if !w.RESP3 {
		w.BulkString(digits)
		return
	}
	w.Buf = append(w.Buf, '(')
	w.Buf = append(w.Buf, digits...)
	w.Buf = append(w.Buf, '\r', '\n')
}

// EmptyArray writes *0.
func (w *Writer) EmptyArray() { w.Buf = append(w.Buf, "*0\r\n"...) }

// AppendDouble formats f as Redis 7.2 does for replies: the shortest representation that reads
// back as the same double ("1.1", "3", "1e+20"), and "inf" / "-inf".
func AppendDouble(b []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(b, "inf"...)
	case math.IsInf(f, -1):
		return append(b, "-inf"...)
	case math.IsNaN(f):
		return append(b, "nan"...)
	}
	// The shortest digits that read back as f (as Redis 7.2 and later print doubles), laid out as
	// C's %.17g lays them out: plain notation unless the decimal exponent is below -4 or at least
	// 17, so integral scores such as timestamps print as integers (1700000000, not 1.7e+09). The
	// shortest form's exponent is below -4 exactly when |f| is below the double nearest 1e-4, and
	// at least 17 exactly when |f| is at least 1e17, so comparing f decides without formatting it
	// twice.
	if a := math.Abs(f); a != 0 && (a < 1e-4 || a >= 1e17) {
		return strconv.AppendFloat(b, f, 'g', -1, 64)
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64)
}

// AppendCommand encodes argv as a command: a RESP array of bulk strings, the form of the
// replication stream, the AOF and the requests the server sends (to its primary, to MIGRATE's
// target).
func AppendCommand(b []byte, argv [][]byte) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(argv)), 10)
	b = append(b, '\r', '\n')
	for _, a := range argv {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}
