package resp

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func args(argv [][]byte) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = string(a)
	}
	return out
}

func TestParseCommand(t *testing.T) {
	cases := []struct {
		name     string
		in       string
		want     []string
		consumed int
		errText  string
		inc      bool
	}{
		{name: "multibulk", in: "*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n", want: []string{"GET", "key"}, consumed: 22},
		{name: "binary", in: "*1\r\n$4\r\na\r\nb\r\n", want: []string{"a\r\nb"}, consumed: 14},
		{name: "empty bulk", in: "*2\r\n$4\r\nECHO\r\n$0\r\n\r\n", want: []string{"ECHO", ""}, consumed: 20},
		{name: "inline", in: "PING\r\n", want: []string{"PING"}, consumed: 6},
		{name: "inline lf only", in: "set a b\n", want: []string{"set", "a", "b"}, consumed: 8},
		{name: "inline quotes", in: "SET k \"a b\\x41\\n\" 'it\\'s'\r\n", want: []string{"SET", "k", "a bA\n", "it's"}, consumed: 27},
		{name: "inline empty", in: "\r\n", want: []string{}, consumed: 2},
		{name: "zero multibulk", in: "*0\r\n", want: []string{}, consumed: 4},
		{name: "partial header", in: "*2\r\n$3\r\nGE", inc: true},
		{name: "partial count", in: "*2", inc: true},
		{name: "partial inline", in: "PIN", inc: true},
		{name: "bad count", in: "*x\r\n", errText: "Protocol error: invalid multibulk length"},
		{name: "bad bulk", in: "*1\r\n$-5\r\n", errText: "Protocol error: invalid bulk length"},
		{name: "expected dollar", in: "*1\r\n+OK\r\n", errText: "Protocol error: expected '$', got '+'"},
		{name: "unbalanced", in: "SET \"a\r\n", errText: "Protocol error: unbalanced quotes in request"},
		{name: "quote glued", in: "SET \"a\"b\r\n", errText: "Protocol error: unbalanced quotes in request"},
		{name: "too big bulk", in: "*1\r\n$536870913\r\n", errText: "Protocol error: invalid bulk length"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lim := DefaultLimits
			argv, n, need, err := ParseCommand([]byte(c.in), nil, &lim)
			switch {
			case c.inc:
				if !errors.Is(err, ErrIncomplete) || need <= len(c.in) {
					t.Fatalf("got err=%v need=%d, want incomplete with need > %d", err, need, len(c.in))
				}
			case c.errText != "":
				var pe *ProtocolError
				if !errors.As(err, &pe) || pe.Msg != c.errText {
					t.Fatalf("got err %v, want %q", err, c.errText)
				}
			default:
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				if n != c.consumed || strings.Join(args(argv), "|") != strings.Join(c.want, "|") || len(argv) != len(c.want) {
					t.Fatalf("got %q consumed %d, want %q consumed %d", args(argv), n, c.want, c.consumed)
				}
			}
		})
	}
}

func TestParseLimits(t *testing.T) {
	lim := DefaultLimits
	lim.Unauthenticated = true
	_, _, _, err := ParseCommand([]byte("*11\r\n"), nil, &lim)
	if err == nil || err.Error() != "Protocol error: unauthenticated multibulk length" {
		t.Fatalf("got %v", err)
	}
	_, _, _, err = ParseCommand([]byte("*1\r\n$16385\r\n"), nil, &lim)
	if err == nil || err.Error() != "Protocol error: unauthenticated bulk length" {
		t.Fatalf("got %v", err)
	}
	lim = DefaultLimits
	_, _, _, err = ParseCommand([]byte(strings.Repeat("a", 70000)), nil, &lim)
	if err == nil || err.Error() != "Protocol error: too big inline request" {
		t.Fatalf("got %v", err)
	}
}

func TestParsePipeline(t *testing.T) {
	buf := []byte(strings.Repeat("*1\r\n$4\r\nPING\r\n", 100) + "*1\r\n$4\r\nPI")
	lim := DefaultLimits
	var argv [][]byte
	count := 0
	for {
		out, n, _, err := ParseCommand(buf, argv[:0], &lim)
		if errors.Is(err, ErrIncomplete) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		argv = out
		count++
		buf = buf[n:]
	}
	if count != 100 || string(buf) != "*1\r\n$4\r\nPI" {
		t.Fatalf("parsed %d commands, left %q", count, buf)
	}
}

func TestParseAllocs(t *testing.T) {
	buf := []byte("*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n")
	lim := DefaultLimits
	argv := make([][]byte, 0, 8)
	allocs := testing.AllocsPerRun(1000, func() {
		var err error
		argv, _, _, err = ParseCommand(buf, argv[:0], &lim)
		if err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("ParseCommand allocates %.1f times per call", allocs)
	}
}

// parseStream feeds data to the parser the way an I/O thread does, chunk bytes per read, moving
// the unparsed bytes to a fresh buffer after each read (so that resumed parses must not depend on
// where the bytes lie), and returns every request it parsed and the error that stopped it.
func parseStream(t *testing.T, data []byte, chunk int, lim *Limits) ([][]string, error) {
	var reqs [][]string
	var p Progress
	var buf []byte
	var argv [][]byte
	for off := 0; off < len(data); {
		end := min(off+chunk, len(data))
		buf = append(append([]byte(nil), buf...), data[off:end]...)
		off = end
		for len(buf) > 0 {
			out, n, need, err := ParseCommandFrom(buf, argv[:0], lim, &p)
			if errors.Is(err, ErrIncomplete) {
				if need <= len(buf) {
					t.Fatalf("incomplete with need %d <= buffered %d", need, len(buf))
				}
				break
			}
			if err != nil {
				var pe *ProtocolError
				if !errors.As(err, &pe) {
					t.Fatalf("non-protocol error %v", err)
				}
				return reqs, err
			}
			if n <= 0 || n > len(buf) {
				t.Fatalf("consumed %d of %d", n, len(buf))
			}
			req := []string{}
			for _, a := range out {
				req = append(req, string(a))
			}
			reqs = append(reqs, req)
			buf = buf[n:]
		}
	}
	return reqs, nil
}

func encodeMultibulk(args []string) []byte {
	b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = append(b, "$"+strconv.Itoa(len(a))+"\r\n"+a+"\r\n"...)
	}
	return b
}

// A request of many arguments arriving in small reads parses to the same arguments as when it
// arrives at once, and the parse resumes rather than restarts: its work is linear.
func TestParseResumesLargeRequests(t *testing.T) {
	args := []string{"RPUSH", "l"}
	for i := 0; i < 100000; i++ {
		args = append(args, strconv.Itoa(i))
	}
	data := encodeMultibulk(args)
	lim := DefaultLimits
	reqs, err := parseStream(t, data, 16<<10, &lim)
	if err != nil || len(reqs) != 1 || !slices.Equal(reqs[0], args) {
		t.Fatalf("parsed %d requests (err %v)", len(reqs), err)
	}
	// Linear: the bytes examined stay a small multiple of the request, whatever the read size.
	var p Progress
	examined := 0
	for end := 1024; ; end += 1024 {
		end = min(end, len(data))
		_, n, _, err := ParseCommandFrom(data[:end], nil, &lim, &p)
		examined += end - p.pos
		if err == nil {
			if n != len(data) {
				t.Fatalf("consumed %d of %d", n, len(data))
			}
			break
		}
	}
	if examined > 3*len(data) {
		t.Fatalf("parsing a %d-byte request in 1 KiB reads examined %d bytes", len(data), examined)
	}
}

// FuzzParseCommand checks parses, not only the absence of panics: the requests parsed from a
// stream do not depend on how the stream is cut into reads, and every request parsed from a
// multibulk encoding of arguments is exactly those arguments.
func FuzzParseCommand(f *testing.F) {
	for _, seed := range []string{
		"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n", "PING\r\n", "SET a \"b c\"\r\n", "*1\r\n$-1\r\n", "*-1\r\n",
		"*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\nb\r\n*1\r\n$4\r\nPING\r\n", "'\\'\"\\x4\r\n", "*1\r\n$1\r\n",
	} {
		f.Add([]byte(seed), uint8(3))
	}
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		lim := DefaultLimits
		lim.MaxBulkLen = 1 << 20
		whole, wholeErr := parseStream(t, append([]byte(nil), data...), len(data)+1, &lim)
		cut, cutErr := parseStream(t, append([]byte(nil), data...), int(chunk)+1, &lim)
		if !slices.EqualFunc(whole, cut, slices.Equal) || (wholeErr == nil) != (cutErr == nil) ||
			(wholeErr != nil && wholeErr.Error() != cutErr.Error()) {
			t.Fatalf("whole: %q %v\nin %d-byte reads: %q %v", whole, wholeErr, int(chunk)+1, cut, cutErr)
		}
		// The input's bytes as arguments (split at NUL), encoded and parsed back.
		args := strings.Split(string(data), "\x00")
		back, err := parseStream(t, encodeMultibulk(args), int(chunk)+1, &lim)
		if err != nil || len(back) != 1 || !slices.Equal(back[0], args) {
			t.Fatalf("encoded %q, parsed back %q (%v)", args, back, err)
		}
	})
}
