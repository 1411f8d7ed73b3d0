package engine

import (
	"fmt"
	"testing"
	"time"
)

// TestBlockingOnManyKeysHoldsNoOne: a client blocking on 100,000 keys (BLPOP) or 50,000
// streams (XREADGROUP) holds the other clients no longer than Redis does (a fraction of a
// second here), is woken as fast, and its close costs nothing. Registering compared each key
// with every one before it (22 s for BLPOP), and writing many streams in one command compared
// each with every one written before it (XREADGROUP, and its wake-up, seconds).
func TestBlockingOnManyKeysHoldsNoOne(t *testing.T) {
	_, addr := startServer(t, nil)
	other := dialPeer(t, addr)
	timed := func(what string, max time.Duration, f func()) {
		t.Helper()
		start := time.Now()
		f()
		if took := time.Since(start); took > max {
			t.Errorf("%s took %v, want under %v", what, took, max)
		}
	}

	const keys = 100000
	blpop := []string{"BLPOP"}
	for i := 0; i < keys; i++ {
		blpop = append(blpop, fmt.Sprint("list:", i))
	}
	blocked := dialPeer(t, addr)
	blocked.send(append(blpop, "0")...)
	time.Sleep(20 * time.Millisecond)
	timed("PING while BLPOP registers 100,000 keys", 2*time.Second, func() { other.do("PING") })
	timed("RPUSH waking it", 2*time.Second, func() { other.do("RPUSH", fmt.Sprint("list:", keys-1), "x") })
	if got := blocked.readUntil(fmt.Sprintf("*2\r\n$10\r\nlist:%d\r\n$1\r\nx\r\n", keys-1)); got == "" {
		t.Fatal("BLPOP was not served")
	}

	const streams = 50000
	var create [][]string
	xread := []string{"XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS"}
	for i := 0; i < streams; i++ {
		create = append(create, []string{"XGROUP", "CREATE", fmt.Sprint("s:", i), "g", "$", "MKSTREAM"})
		xread = append(xread, fmt.Sprint("s:", i))
	}
	other.pipeline(create)
	for i := 0; i < streams; i++ {
		xread = append(xread, ">")
	}
	reader := dialPeer(t, addr)
	reader.send(xread...)
	time.Sleep(20 * time.Millisecond)
	timed("PING while XREADGROUP registers 50,000 streams", 2*time.Second, func() { other.do("PING") })
	timed("XADD waking it", 2*time.Second, func() { other.do("XADD", "s:7", "1-1", "f", "v") })
	reader.c.Close()
	time.Sleep(20 * time.Millisecond)
	timed("PING after the blocked client closed", time.Second, func() { other.do("PING") })
}
