package engine

import (
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"
)

// A client blocked in XREADGROUP whose stream or group disappears is released with Redis 7.0's
// error, never left hanging; other waiters on the same key are not disturbed. Each scenario runs
// on Debian's redis-server and on iocache and the raw replies must match.
func TestBlockedXReadGroupReleasedWhenStreamGoesMatchesRedis(t *testing.T) {
	_, iocacheAddr := startServer(t, nil)
	redisAddr := startRedisPeer(t)
	triggers := [][]string{
		{"DEL", "s"},
		{"SET", "s", "x"},
		{"XGROUP", "DESTROY", "s", "g"},
		{"FLUSHALL"},
		{"FLUSHDB"},
		{"RENAME", "s", "s2"},
		{"SWAPDB", "0", "1"},
		{"PEXPIRE", "s", "1"},
		{"UNLINK", "s"},
	}
	for _, trig := range triggers {
		t.Run(strings.Join(trig, "_"), func(t *testing.T) {
			want := blockedGroupScenario(t, redisAddr, trig)
			got := blockedGroupScenario(t, iocacheAddr, trig)
			if want != got {
				t.Errorf("after %q:\n redis:   %q\n iocache: %q", trig, want, got)
			}
		})
	}
}

// blockedGroupScenario blocks two XREADGROUP clients and one XREAD client on stream s, runs
// trigger, and returns what each client then sees (its reply, or "still blocked"), followed by
// a PING each group client sends afterwards.
func blockedGroupScenario(t *testing.T, addr string, trigger []string) string {
	t.Helper()
	admin := dialPeer(t, addr)
	admin.do("FLUSHALL")
	admin.do("SELECT", "0")
	admin.do("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
	admin.do("XGROUP", "CREATE", "s", "g2", "$")
	waiters := []*peerConn{dialPeer(t, addr), dialPeer(t, addr), dialPeer(t, addr)}
	sendRaw(t, waiters[0], "XREADGROUP", "GROUP", "g", "c1", "BLOCK", "0", "STREAMS", "s", ">")
	sendRaw(t, waiters[1], "XREADGROUP", "GROUP", "g2", "c2", "BLOCK", "0", "STREAMS", "s", ">")
	sendRaw(t, waiters[2], "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
	waitPeerBlocked(t, admin, 3)
	admin.do(trigger...)
	time.Sleep(50 * time.Millisecond) // PEXPIRE 1: let the key expire
	admin.do("EXISTS", "s")           // an access deletes an expired key

	var out strings.Builder
	for i, w := range waiters {
		d := time.Second
		if i == 2 {
			d = 300 * time.Millisecond // the XREAD waiter is expected to stay blocked
		}
		fmt.Fprintf(&out, "client %d: %s | ", i, replyWithin(w, d))
	}
	// The XREAD waiter stays blocked until an entry arrives.
	admin.do("XADD", "s", "1-1", "f", "v")
	fmt.Fprintf(&out, "xread after XADD: %s | ", replyWithin(waiters[2], 2*time.Second))
	for i, w := range waiters[:2] {
		fmt.Fprintf(&out, "ping %d: %s", i, w.do("PING"))
	}
	return out.String()
}

func sendRaw(t *testing.T, p *peerConn, args ...string) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(p.c, b.String()); err != nil {
		t.Fatal(err)
	}
}

// replyWithin reads one raw reply, or says the client is still blocked.
func replyWithin(p *peerConn, d time.Duration) string {
	_ = p.c.SetReadDeadline(time.Now().Add(d))
	var out strings.Builder
	if err := readRawReply(p.br, &out); err != nil {
		if out.Len() == 0 {
			return "still blocked"
		}
		return "broken reply " + out.String()
	}
	return out.String()
}

func waitPeerBlocked(t *testing.T, admin *peerConn, n int) {
	t.Helper()
	for i := 0; i < 200; i++ {
		if strings.Contains(admin.do("INFO", "clients"), fmt.Sprintf("blocked_clients:%d\r\n", n)) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%d clients never blocked", n)
}

// A blocked command that ends with an error counts as a failed call, as Redis counts it: Redis's
// stream-cgroups test reads failed_calls=1 after XGROUP DESTROY unblocks an XREADGROUP.
func TestUnblockedWithErrorCountsAsFailed(t *testing.T) {
	_, io := startServer(t, nil)
	stats := func(addr string) string {
		p, b := dialPeer(t, addr), dialPeer(t, addr)
		p.do("CONFIG", "RESETSTAT")
		p.do("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
		sendRaw(t, b, "XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">")
		waitPeerBlocked(t, p, 1)
		p.do("XGROUP", "DESTROY", "s", "g")
		replyWithin(b, 2*time.Second)
		line := regexp.MustCompile(`cmdstat_xreadgroup:calls=(\d+),[^\r]*failed_calls=(\d+)`).FindStringSubmatch(p.do("INFO", "commandstats"))
		if line == nil {
			t.Fatalf("%s: no cmdstat_xreadgroup", addr)
		}
		return line[1] + " " + line[2]
	}
	if want, got := stats(startRedisPeer(t)), stats(io); want != got || want != "1 1" {
		t.Fatalf("xreadgroup calls and failed_calls: redis %s, iocache %s", want, got)
	}
}
