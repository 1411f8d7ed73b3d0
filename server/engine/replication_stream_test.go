package engine

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iocache/iocache/server/config"
)

// streamReplica is a raw replica for tests: it runs the PSYNC handshake against a primary (Debian's
// redis-server or iocache), reads the full sync's payload, then reads the command stream, so a
// test sees exactly what a primary propagates.
type streamReplica struct {
	t       testing.TB
	c       net.Conn
	br      *bufio.Reader
	replid  string
	offset  int64 // the offset of the full sync, then of every command read since
	payload []byte
}

// attachStreamReplica connects to addr and completes a full sync. eof chooses whether the replica
// announces "capa eof" (disk-less payloads).
func attachStreamReplica(t testing.TB, addr string, eof bool) *streamReplica {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r := &streamReplica{t: t, c: c, br: bufio.NewReader(c)}
	r.expect("+OK", "REPLCONF", "listening-port", "0")
	if eof {
		r.expect("+OK", "REPLCONF", "capa", "eof", "capa", "psync2")
	}
	r.send("PSYNC", "?", "-1")
	line := r.line()
	for line == "" { // keepalives while the primary prepares the sync
		line = r.line()
	}
	f := strings.Fields(line)
	if len(f) != 3 || f[0] != "+FULLRESYNC" {
		t.Fatalf("PSYNC: %q", line)
	}
	r.replid = f[1]
	r.offset, _ = strconv.ParseInt(f[2], 10, 64)
	r.payload = r.readPayload()
	return r
}

func (r *streamReplica) send(args ...string) {
	r.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(r.c, b.String()); err != nil {
		r.t.Fatal(err)
	}
}

func (r *streamReplica) expect(want string, args ...string) {
	r.t.Helper()
	r.send(args...)
	if got := r.line(); got != want {
		r.t.Fatalf("%q: got %q, want %q", args, got, want)
	}
}

func (r *streamReplica) line() string {
	r.t.Helper()
	_ = r.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	s, err := r.br.ReadString('\n')
	if err != nil {
		r.t.Fatalf("reading from the primary: %v", err)
	}
	return strings.TrimRight(s, "\r\n")
}

// readPayload reads the RDB in either form: "$<len>" or "$EOF:<mark>" ... "<mark>". Newlines
// before it are the primary's keepalives.
func (r *streamReplica) readPayload() []byte {
	r.t.Helper()
	line := r.line()
	for line == "" {
		line = r.line()
	}
	if mark, ok := strings.CutPrefix(line, "$EOF:"); ok {
		var buf []byte
		for !bytes.HasSuffix(buf, []byte(mark)) {
			b, err := r.br.ReadByte()
			if err != nil {
				r.t.Fatalf("reading the payload: %v", err)
			}
			buf = append(buf, b)
		}
		return buf[:len(buf)-len(mark)]
	}
	n, err := strconv.Atoi(strings.TrimPrefix(line, "$"))
	if err != nil || !strings.HasPrefix(line, "$") {
		r.t.Fatalf("payload header %q", line)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r.br, buf); err != nil {
		r.t.Fatal(err)
	}
	return buf
}

// next reads one propagated command, or nil when none comes within wait.
func (r *streamReplica) next(wait time.Duration) []string {
	r.t.Helper()
	_ = r.c.SetReadDeadline(time.Now().Add(wait))
	line, err := r.br.ReadString('\n')
	if err != nil {
		if ne, ok := err.(net.Error); ok && ne.Timeout() && line == "" {
			return nil
		}
		r.t.Fatalf("reading the stream: %v", err)
	}
	_ = r.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	size := len(line)
	if !strings.HasPrefix(line, "*") {
		r.t.Fatalf("stream: %q is not a command", line)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
	argv := make([]string, n)
	for i := range argv {
		h, err := r.br.ReadString('\n')
		if err != nil {
			r.t.Fatal(err)
		}
		l, _ := strconv.Atoi(strings.TrimSpace(h[1:]))
		buf := make([]byte, l+2)
		if _, err := io.ReadFull(r.br, buf); err != nil {
			r.t.Fatal(err)
		}
		argv[i] = string(buf[:l])
		size += len(h) + l + 2
	}
	r.offset += int64(size)
	return argv
}

// ack acknowledges what was read, as a replica does every second. Redis starts the stream of a
// disk-less sync at the first acknowledgement after the transfer ended.
func (r *streamReplica) ack() { r.send("REPLCONF", "ACK", strconv.FormatInt(r.offset, 10)) }

// drain reads commands until none arrives for quiet, skipping the primary's PINGs.
func (r *streamReplica) drain(quiet time.Duration) [][]string {
	r.ack()
	var out [][]string
	for {
		cmd := r.next(quiet)
		if cmd == nil {
			return out
		}
		if len(cmd) == 1 && strings.EqualFold(cmd[0], "ping") {
			continue
		}
		out = append(out, cmd)
	}
}

// propagationOf runs propagationScript against a primary and returns, for each command, what
// the primary propagated, normalised where the two servers may legitimately differ: absolute
// times, generated stream IDs, the members SPOP drew.
func propagationOf(t *testing.T, addr string) [][]string {
	r := attachStreamReplica(t, addr, true)
	time.Sleep(300 * time.Millisecond) // Redis starts the stream at an acknowledgement after the transfer
	r.drain(50 * time.Millisecond)
	p := dialPeer(t, addr)
	var out [][]string
	for _, cmd := range propagationScript {
		if cmd[0] == "sleep" {
			time.Sleep(150 * time.Millisecond)
		} else {
			p.do(cmd...)
		}
		var got []string
		for _, c := range r.drain(50 * time.Millisecond) {
			got = append(got, normaliseCommand(c))
		}
		out = append(out, got)
	}
	return out
}

var (
	unixMsPattern   = regexp.MustCompile(`^1[0-9]{12}$`)
	streamIDPattern = regexp.MustCompile(`^1[0-9]{12}-[0-9]+$`)
)

func normaliseCommand(argv []string) string {
	for i, a := range argv {
		switch {
		case unixMsPattern.MatchString(a):
			argv[i] = "<unix-ms>"
		case streamIDPattern.MatchString(a):
			argv[i] = "<stream-id>"
		case i == 2 && argv[0] == "SREM":
			argv[i] = "<member>"
		}
	}
	return fmt.Sprintf("%q", argv)
}

// TestPropagationMatchesRedis runs the same commands on Debian's redis-server and on iocache as
// primaries and compares what each sent its replica. The streams are compared whole: which
// command an active expiry's DEL follows depends on timing.
func TestPropagationMatchesRedis(t *testing.T) {
	want := propagationOf(t, startRedisPeer(t, "--repl-diskless-sync-delay", "0"))
	_, addr := startServer(t, nil)
	got := propagationOf(t, addr)
	if !slices.Equal(slices.Concat(want...), slices.Concat(got...)) {
		for i, cmd := range propagationScript {
			if !slices.Equal(want[i], got[i]) {
				t.Errorf("%q:\n redis:   %v\n iocache: %v", cmd, want[i], got[i])
			}
		}
	}
}

// Keys that SCAN or RANDOMKEY expire on their way go to replicas as separate DELs, as active
// expiry's do; those another command expires (MGET here), or a SCAN in a transaction, go as one
// MULTI/EXEC with the command, as in Redis 7.0 (CMD_TOUCHES_ARBITRARY_KEYS). Both servers run
// with active expiry off so that the reads find the keys expired but not yet deleted.
func TestLazyExpiryPropagationMatchesRedis(t *testing.T) {
	stream := func(addr string) [][]string {
		r := attachStreamReplica(t, addr, true)
		time.Sleep(300 * time.Millisecond)
		r.drain(50 * time.Millisecond)
		p := dialPeer(t, addr)
		p.do("DEBUG", "SET-ACTIVE-EXPIRE", "0")
		defer p.do("DEBUG", "SET-ACTIVE-EXPIRE", "1")
		var out [][]string
		for _, read := range [][]string{{"SCAN", "0"}, {"RANDOMKEY"}, {"MGET", "foo1", "foo2"}, {"MULTI"}} {
			p.do("SET", "foo1", "bar", "PX", "1")
			p.do("SET", "foo2", "bar", "PX", "1")
			time.Sleep(20 * time.Millisecond)
			r.drain(50 * time.Millisecond) // the SETs
			if read[0] == "MULTI" {
				p.do("MULTI")
				p.do("SCAN", "0")
				read = []string{"EXEC"}
			}
			p.do(read...)
			if read[0] == "RANDOMKEY" {
				p.do("RANDOMKEY") // the first may have expired one key only
			}
			var got []string
			for _, c := range r.drain(50 * time.Millisecond) {
				got = append(got, normaliseCommand(c))
			}
			slices.Sort(got) // which key goes first is the hash table's order
			out = append(out, got)
		}
		return out
	}
	want := stream(startRedisPeer(t, "--repl-diskless-sync-delay", "0", "--enable-debug-command", "yes"))
	_, addr := startServer(t, func(c *config.Config) { c.EnableDebugCommand = "yes" })
	got := stream(addr)
	for i := range want {
		if !slices.Equal(want[i], got[i]) {
			t.Errorf("case %d:\n redis:   %v\n iocache: %v", i, want[i], got[i])
		}
	}
}
