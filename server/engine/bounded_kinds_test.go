package engine

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The kinds of issue 17 that a client's input alone can cause, each under maxmemory with a
// watchdog on the server's RSS and a second client's PING round trips: sizes a client announces
// (bulk lengths, multibulk counts), work that grows faster than its input (compared with
// redis-server on the same input), and memory kept after large replies.

// rssGuard samples a server process's RSS and kills the process when it passes hardCap, so that
// a regression shows as a failed test instead of a machine out of memory.
type rssGuard struct {
	maxRSS atomic.Int64
	killed atomic.Bool
	stop   chan struct{}
	done   chan struct{}
}

func guardRSS(cmd *exec.Cmd, hardCap int64) *rssGuard {
	g := &rssGuard{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(g.done)
		for {
			if r := readRSS(cmd.Process.Pid); r > g.maxRSS.Load() {
				g.maxRSS.Store(r)
			}
			if g.maxRSS.Load() > hardCap && !g.killed.Load() {
				g.killed.Store(true)
				_ = cmd.Process.Kill()
			}
			select {
			case <-g.stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return g
}

func (g *rssGuard) finish() int64 { close(g.stop); <-g.done; return g.maxRSS.Load() }

// readRSS is rssOf without failing: 0 once the process is gone.
func readRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// Sizes announced by clients: 512 MB bulk headers (from many clients), 100 GB ones after
// CONFIG SET proto-max-bulk-len 100gb, and multibulk counts of a million, each followed by a
// little of what it announced. Before the fix the I/O thread sized the query buffer by the
// announcement: 100 GB crashed the process with "runtime: out of memory", and the 512 MB ones
// left about 1 GB resident after their clients closed. What each client costs must follow what
// it sent (the buffer grows in steps that at most double what arrived), the server must answer
// a second client throughout, and the memory must go back once the clients close.
func TestAnnouncedSizesCostWhatArrives(t *testing.T) {
	for _, threads := range []string{"1", "2"} {
		t.Run("io-threads "+threads, func(t *testing.T) {
			const (
				perKind = 6
				body    = mb // what each client sends of what it announced
			)
			addr, cmd := startProcess(t, "--io-threads", threads, "--maxmemory", "64mb")
			ctl := dialPeer(t, addr)
			if got := ctl.do("CONFIG", "SET", "proto-max-bulk-len", "100gb"); got != "+OK\r\n" {
				t.Fatalf("CONFIG SET proto-max-bulk-len 100gb: %q", got)
			}
			base := rssOf(t, cmd.Process.Pid)
			// Each of the 18 clients may hold four times what it sent (the doubling step on top of
			// a buffer that doubled), plus the runtime's overhead as for a flood.
			bound := base + 3*perKind*4*body + floodOverhead
			guard := guardRSS(cmd, bound+256*mb)
			w := watchFlood(t, addr, cmd.Process.Pid)

			filler := strings.Repeat("x", body)
			args := strings.Repeat("$1\r\na\r\n", body/7)
			var clients []net.Conn
			for i := 0; i < perKind; i++ {
				for _, req := range []string{
					"*3\r\n$3\r\nSET\r\n$2\r\nk1\r\n$536870912\r\n" + filler,
					"*3\r\n$3\r\nSET\r\n$2\r\nk2\r\n$107374182400\r\n" + filler,
					"*1048576\r\n$5\r\nRPUSH\r\n$1\r\nl\r\n" + args,
				} {
					c, err := net.Dial("tcp", addr)
					if err == nil {
						defer c.Close()
						_, err = io.WriteString(c, req)
					}
					if err != nil {
						t.Fatalf("the server went away after %d clients sent their announcements (RSS watchdog fired: %v): %v",
							len(clients), guard.killed.Load(), err)
					}
					clients = append(clients, c)
				}
			}
			time.Sleep(500 * time.Millisecond) // the server reads what was sent
			alive := ctl.do("PING") == "+PONG\r\n"
			info := ""
			if alive {
				info = ctl.do("INFO", "memory")
			}
			held := rssOf(t, cmd.Process.Pid)
			for _, c := range clients {
				c.Close()
			}
			bound2 := base + 48*mb
			deadline := time.Now().Add(5 * time.Second)
			for alive && readRSS(cmd.Process.Pid) > bound2 && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			after := readRSS(cmd.Process.Pid)
			w.finish()
			peak := guard.finish()
			t.Logf("%d clients announced %d×512 MB, %d×100 GB and %d×1M arguments and sent 1 MB each: RSS %d MB at start, at most %d MB (bound %d MB), %d MB with the clients connected, %d MB within 5 s of their close (bound %d MB); go_heap_sys %s; %d PINGs, slowest %v",
				len(clients), perKind, perKind, perKind, base/mb, peak/mb, bound/mb, held/mb, after/mb, bound2/mb,
				regexpFind(`go_heap_sys:(\d+)`, info), w.pings.Load(), time.Duration(w.maxPing.Load()))
			if guard.killed.Load() || !alive {
				t.Fatalf("the server died or was killed by the RSS watchdog (RSS reached %d MB)", peak/mb)
			}
			if peak > bound {
				t.Errorf("RSS reached %d MB, over the bound of %d MB", peak/mb, bound/mb)
			}
			if heap, _ := strconv.ParseInt(regexpFind(`go_heap_sys:(\d+)`, info), 10, 64); heap > bound {
				t.Errorf("the Go heap reserved %d MB for what the clients announced (bound %d MB)", heap/mb, bound/mb)
			}
			if after > bound2 {
				t.Errorf("RSS still %d MB 5 s after the clients closed (bound %d MB)\n%s", after/mb, bound2/mb, ctl.do("INFO", "memory"))
			}
			if w.pings.Load() == 0 {
				t.Error("the probe client was not answered")
			}
			if got := ctl.do("DBSIZE"); got != ":0\r\n" {
				t.Errorf("DBSIZE after clients that never completed a command: %q", got)
			}
		})
	}
}
