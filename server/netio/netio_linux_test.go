package netio

import (
	"net"
	"testing"
	"time"
)

// TestConnMovesBetweenPollers checks the property I/O threads rely on when a connection moves:
// a socket registered with a second poller reports the data that arrived while no poller
// watched it, and the first poller reports nothing more for it.
func TestConnMovesBetweenPollers(t *testing.T) {
	l, err := ListenTCP("127.0.0.1", 0, 16)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	a, b := testPoller(t), testPoller(t)
	if err := a.addListener(l.FD); err != nil {
		t.Fatal(err)
	}
	client, err := net.Dial("tcp", l.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if evs := a.Wait(5000); len(evs) != 1 || int(evs[0].Fd) != l.FD {
		t.Fatalf("listener readiness: %v", evs)
	}
	fd, remote, err := l.Accept()
	if err != nil || fd < 0 || remote != client.LocalAddr().String() {
		t.Fatalf("Accept: fd %d remote %q (client %s), %v", fd, remote, client.LocalAddr(), err)
	}
	defer Close(fd)
	if err := a.addConn(fd); err != nil {
		t.Fatal(err)
	}
	a.Wait(100) // the initial Out edge
	a.Del(fd)
	if _, err := client.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if evs := a.Wait(0); len(evs) != 0 {
		t.Fatalf("a poller that let the socket go still reports it: %v", evs)
	}
	if err := b.addConn(fd); err != nil {
		t.Fatal(err)
	}
	evs := b.Wait(1000)
	if len(evs) != 1 || int(evs[0].Fd) != fd || evs[0].Events&evIn == 0 || evs[0].Events&evOut == 0 {
		t.Fatalf("the new poller did not report the waiting data and room to write: %v", evs)
	}
	buf := make([]byte, 64)
	if n, _ := readSocket(fd, buf); string(buf[:n]) != "PING\r\n" {
		t.Fatalf("Read: %q", buf[:n])
	}
	if n, again := readSocket(fd, buf); n != 0 || !again {
		t.Fatalf("Read of a drained socket: n=%d again=%v", n, again)
	}
	if n, full, failed := Write(fd, []byte("+PONG\r\n")); n != 7 || full || failed {
		t.Fatalf("Write: %d %v %v", n, full, failed)
	}
	client.Close()
	if evs := b.Wait(1000); len(evs) != 1 || evs[0].Events&evHangUp == 0 {
		t.Fatalf("hang-up not reported: %v", evs)
	}
	if n, again := readSocket(fd, buf); n != 0 || again {
		t.Fatalf("Read after the peer closed: n=%d again=%v", n, again)
	}
}

func TestWakeInterruptsWait(t *testing.T) {
	p := testPoller(t)
	go func() {
		time.Sleep(20 * time.Millisecond)
		p.Wake()
	}()
	start := time.Now()
	evs := p.Wait(10000)
	if len(evs) != 1 || !p.IsWake(evs[0].Fd) || time.Since(start) > 5*time.Second {
		t.Fatalf("Wake: %v after %s", evs, time.Since(start))
	}
	// The eventfd is edge-triggered and never read: a second Wake wakes again.
	p.Wake()
	if evs := p.Wait(1000); len(evs) != 1 {
		t.Fatalf("second Wake: %v", evs)
	}
}

func testPoller(t *testing.T) *poller {
	t.Helper()
	p, err := newPoller()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}
