package engine

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iocache/iocache/server/config"
)

// endlessPrimary is a primary that answers the replica's handshake and then sends an RDB that
// never ends: body writes the payload after the RDB header until the replica hangs up. It
// returns the address and a counter of the payload bytes the replica took.
func endlessPrimary(t *testing.T, body func(w *bufio.Writer) error) (string, *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var sent atomic.Int64
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func(conn net.Conn) {
				defer conn.Close()
				r := bufio.NewReader(conn)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if strings.HasPrefix(line, "*") { // one command: read its arguments
						n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
						var args []string
						for i := 0; i < n; i++ {
							_, _ = r.ReadString('\n')
							a, _ := r.ReadString('\n')
							args = append(args, strings.TrimSpace(a))
						}
						line = strings.Join(args, " ")
					}
					switch cmd := strings.ToUpper(strings.Fields(line + " x")[0]); cmd {
					case "PING":
						fmt.Fprint(conn, "+PONG\r\n")
					case "PSYNC", "SYNC":
						w := &countingWriter{w: conn, n: &sent}
						bw := bufio.NewWriterSize(w, 64<<10)
						fmt.Fprintf(bw, "+FULLRESYNC %s 0\r\n$EOF:%s\r\n", strings.Repeat("a", 40), strings.Repeat("z", 40))
						bw.WriteString("REDIS0010")
						_ = body(bw)
						return
					default:
						fmt.Fprint(conn, "+OK\r\n")
					}
				}
			}(conn)
		}
	}()
	return l.Addr().String(), &sent
}

type countingWriter struct {
	w interface{ Write([]byte) (int, error) }
	n *atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// TestReplicaRefusesASyncPastItsMemory: a primary whose full sync never ends, with endless keys
// or with one string that never ends, makes the replica give up the sync once it passes
// maxmemory, with a log line, while it keeps serving its own data; it never takes much more of
// the stream than maxmemory (the replica used to read until the kernel killed it).
func TestReplicaRefusesASyncPastItsMemory(t *testing.T) {
	const maxmemory = 16 << 20
	value := bytes.Repeat([]byte("v"), 1000)
	for _, tc := range []struct {
		name string
		body func(w *bufio.Writer) error
	}{
		{"endless keys", func(w *bufio.Writer) error {
			for i := 0; ; i++ {
				key := fmt.Sprintf("key:%012d", i)
				w.WriteByte(0) // a string
				w.WriteByte(byte(len(key)))
				w.WriteString(key)
				w.Write([]byte{0x40 | byte(len(value)>>8), byte(len(value))}) // 14-bit length
				if _, err := w.Write(value); err != nil {
					return err
				}
			}
		}},
		{"a string that never ends", func(w *bufio.Writer) error {
			w.WriteByte(0)
			w.WriteByte(3)
			w.WriteString("big")
			w.Write([]byte{0x80, 0x7f, 0xff, 0xff, 0xff}) // 32-bit length: 2 GiB
			for {
				if _, err := w.Write(value); err != nil {
					return err
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			primary, sent := endlessPrimary(t, tc.body)
			logFile := filepath.Join(t.TempDir(), "replica.log")
			_, addr := startServer(t, func(c *config.Config) { c.LogFile = logFile })
			logTail := func() string { b, _ := os.ReadFile(logFile); return string(b) }
			c := dialPeer(t, addr)
			// Before maxmemory: in a test binary the process's heap, which used_memory counts
			// beyond the keyspace, is every test server's.
			c.do("SET", "mine", "still here")
			c.do("CONFIG", "SET", "maxmemory", strconv.Itoa(maxmemory))
			host, port, _ := net.SplitHostPort(primary)
			c.do("REPLICAOF", host, port)
			deadline := time.Now().Add(20 * time.Second)
			for !strings.Contains(logTail(), "refusing the sync") {
				if time.Now().After(deadline) {
					t.Fatalf("no refusal in the log after %d bytes of payload:\n%s", sent.Load(), logTail())
				}
				time.Sleep(50 * time.Millisecond)
			}
			if got := c.do("PING"); got != "+PONG\r\n" {
				t.Fatalf("PING: %q", got)
			}
			if got := c.do("GET", "mine"); got != "$10\r\nstill here\r\n" {
				t.Errorf("the replica's own data after the refused sync: %q\n%s", got, logTail())
			}
			if took := sent.Load(); took > 4*maxmemory {
				t.Errorf("the replica took %d bytes of the endless payload under maxmemory %d", took, maxmemory)
			}
			c.do("REPLICAOF", "NO", "ONE")
		})
	}
}
