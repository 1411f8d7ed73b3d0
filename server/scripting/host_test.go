package scripting

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// testHost is a Host without a server: redis.call answers what call says (by default, "+OK"
// for any command), and the rest is recorded for the tests to look at.
type testHost struct {
	call       func(argv []string, resp3 bool) (reply, refused string)
	calls      [][]string
	allowed    bool
	logs       []string
	errors     []string
	limits     Limits
	background int
	busy       int    // calls of Busy
	onBusy     func() // what Busy does, if anything
}

func (h *testHost) Call(argv [][]byte, resp3 bool) ([]byte, string) {
	args := make([]string, len(argv))
	for i, a := range argv {
		args[i] = string(a)
	}
	h.calls = append(h.calls, args)
	if h.call == nil {
		return []byte("+OK\r\n"), ""
	}
	reply, refused := h.call(args, resp3)
	return []byte(reply), refused
}

func (h *testHost) MayCall(argv [][]byte) (bool, string) {
	if string(argv[0]) == "nosuch" {
		return false, "ERR Invalid command passed to redis.acl_check_cmd()"
	}
	return h.allowed, ""
}

func (h *testHost) Log(level LogLevel, msg string) {
	h.logs = append(h.logs, strconv.Itoa(int(level))+" "+msg)
}

func (h *testHost) CountError(msg string) { h.errors = append(h.errors, msg) }
func (h *testHost) Limits() Limits        { return h.limits }
func (h *testHost) Background(job func()) { h.background++ }
func (h *testHost) Busy() {
	h.busy++
	if h.onBusy != nil {
		h.onBusy()
	}
}

// newTestState is a State on a testHost with proto-max-bulk-len's default and no time limit.
func newTestState(t testing.TB) (*State, *testHost) {
	h := &testHost{limits: Limits{MaxBulkLen: 512 << 20}}
	st := New(h)
	t.Cleanup(st.Close)
	return st, h
}

// skipReply returns what follows the one RESP value b starts with, or false when b does not
// start with a whole, well-formed one.
func skipReply(b []byte) ([]byte, bool) {
	end := bytes.Index(b, []byte("\r\n"))
	if len(b) < 1 || end < 1 {
		return nil, false
	}
	line, rest := string(b[1:end]), b[end+2:]
	n, err := strconv.Atoi(line)
	switch b[0] {
	case '+', '-', ',', '(':
		return rest, !strings.ContainsAny(line, "\r\n")
	case ':':
		return rest, err == nil
	case '#':
		return rest, line == "t" || line == "f"
	case '_':
		return rest, line == ""
	case '$', '=':
		if err != nil || n < -1 {
			return nil, false
		}
		if n == -1 {
			return rest, b[0] == '$'
		}
		if len(rest) < n+2 || string(rest[n:n+2]) != "\r\n" {
			return nil, false
		}
		return rest[n+2:], true
	case '*', '~', '%':
		if err != nil || n < -1 {
			return nil, false
		}
		if b[0] == '%' {
			n *= 2
		}
		for i := 0; i < n; i++ {
			var ok bool
			if rest, ok = skipReply(rest); !ok {
				return nil, false
			}
		}
		return rest, true
	}
	return nil, false
}
