package netio

import (
	"strings"
	"testing"
	"time"
)

// Each case runs over both transports, with the conns served by the main thread itself
// (io-threads 1, commands executed inline) and by I/O threads (commands handed over in batches).
func forEachServer(t *testing.T, test func(t *testing.T, s *testServer)) {
	for _, tr := range transports(t) {
		for _, sv := range []struct {
			name    string
			threads int
		}{{"main", 1}, {"io", 3}} {
			t.Run(tr.name+"/"+sv.name, func(t *testing.T) { test(t, startServer(t, tr, sv.threads)) })
		}
	}
}

// TestPartialReads sends requests in pieces, down to a byte per read (under TLS a record per
// byte, its bytes on the wire one at a time as well): each request is executed once, whole, when
// its last byte arrives.
func TestPartialReads(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *testServer) {
		c := s.dial(t)
		c.wire.trickle.Store(1)
		req := append(multibulk("ECHO", "hello world"), "PING\r\n"...)
		before := s.reads(t)
		c.send(req, 1)
		c.expect("$hello world")
		c.expect("+PONG")
		// That the server read the request in pieces is what this test is about: the reads that
		// brought input show it (not one per byte: a slow server thread may find two waiting).
		waitUntil(t, "the server's read counter", func() bool { return s.reads(t)-before >= int64(len(req)/4) })
		t.Logf("%d bytes in %d reads", len(req), s.reads(t)-before)

		// A large argument behind a short request, arriving a kilobyte at a time: the query
		// buffer grows over many reads, with the short request's bytes still at its front.
		c.wire.trickle.Store(1024)
		big := strings.Repeat("0123456789abcdef", 6<<10)
		c.send(append([]byte("PING\r\n"), multibulk("ECHO", big)...), 4096)
		c.expect("+PONG")
		c.expect("$" + big)
	})
}

// TestBatchEndsBeforeLargeRequest sends, in one write, exactly two batches' worth of short
// requests and then a large one. The second batch ends where the large request begins, so the
// parse after it completes nothing while the rest of the request waits on the socket, which no
// new edge announces: the thread must read on by itself. The query buffer, meanwhile, runs out
// of room with the short requests parsed at its front, and makes room by moving the large one's
// first part down rather than by growing.
func TestBatchEndsBeforeLargeRequest(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 6<<10)
	forEachServer(t, func(t *testing.T, s *testServer) {
		c := s.dial(t)
		pings := 2 * maxCmdsPerBatch
		c.send(append([]byte(strings.Repeat("PING\r\n", pings)), multibulk("ECHO", big)...), 0)
		for range pings {
			c.expect("+PONG")
		}
		c.expect("$" + big)
	})
}

// TestQueryBufferLimit sends a request that passes the query buffer limit before it is complete:
// the engine hears of it (QueryBufferExceeded, with the request's first bytes), then the conn is
// closed (Closed). Requests under the limit are served as usual first.
func TestQueryBufferLimit(t *testing.T) {
	const limit = 4 << 10
	for _, tc := range []struct{ name, req string }{
		{"bulk", "*2\r\n$4\r\nECHO\r\n$100000\r\n" + strings.Repeat("x", 2*limit)},
		{"inline", strings.Repeat("x", 2*limit)}, // no newline yet
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachServer(t, func(t *testing.T, s *testServer) {
				s.eng.qbufLimit.Store(limit)
				c := s.dial(t)
				c.send(multibulk("SUB", "client"), 0)
				c.expect("+OK")
				under := strings.Repeat("y", limit/2)
				c.send(multibulk("ECHO", under), 0)
				c.expect("$" + under)

				c.send([]byte(tc.req), 0)
				c.expectClosed()
				sc := s.eng.conn(t, "client")
				waitUntil(t, "the engine to hear of the close", func() bool { return s.eng.isClosed(sc) })
				s.eng.mu.Lock()
				defer s.eng.mu.Unlock()
				if len(s.eng.qbufOver) != 1 || s.eng.qbufOver[0].c != sc || s.eng.qbufOver[0].start != tc.req[:64] {
					t.Fatalf("QueryBufferExceeded calls %+v, want one for the conn with %q", s.eng.qbufOver, tc.req[:64])
				}
			})
		})
	}
}

// TestProtocolError sends a request that cannot be framed behind one that can: the first is
// answered, the error is replied, and the conn closes once that reply is out.
func TestProtocolError(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *testServer) {
		c := s.dial(t)
		c.send([]byte("PING\r\n*1\r\n$x\r\n"), 0)
		c.expect("+PONG")
		c.expect("-ERR Protocol error: invalid bulk length")
		c.expectClosed()
	})
}

// TestOutputLimit pushes out-of-band output (as pub/sub does) to two clients: one reads
// everything, the other stops reading. The one that stopped is closed once what waits for it
// passes its output limit; the reader never is. A client the engine holds (blocked) is checked
// against the hard limit for what was pushed to it meanwhile, and closed when it comes back.
func TestOutputLimit(t *testing.T) {
	const limit = 64 << 10
	payload := []byte("$4090\r\n" + strings.Repeat("m", 4090) + "\r\n")
	forEachServer(t, func(t *testing.T, s *testServer) {
		s.eng.obufLimit.Store(limit)
		slow := s.dial(t, withRcvBuf(4096))
		slow.send(multibulk("SUB", "slow"), 0)
		slow.expect("+OK")
		fast := s.dial(t)
		fast.send(multibulk("SUB", "fast"), 0)
		fast.expect("+OK")
		slowConn, fastConn := s.eng.conn(t, "slow"), s.eng.conn(t, "fast")

		// Rounds of eight pushes each, under the limit, which the fast client reads before the
		// next round; the slow client's output piles up behind a full socket. A round for a
		// closed conn is what the engine never sends, so the loop stops there.
		const perRound = 8
		rounds := 0
		for ; rounds < 1000 && !s.eng.isClosed(slowConn); rounds++ {
			s.do(t, func(g *Group) {
				for range perRound {
					g.Push(slowConn, payload, 0)
					g.Push(fastConn, payload, 0)
				}
			})
			for range perRound {
				fast.expect("$" + strings.Repeat("m", 4090))
			}
		}
		if !s.eng.isClosed(slowConn) {
			t.Fatalf("a client that reads nothing was not closed after %d KiB pushed", rounds*perRound*len(payload)>>10)
		}
		t.Logf("the slow client was closed after %d rounds", rounds)
		slow.expectClosed()
		s.eng.mu.Lock()
		slowOver, fastOver := s.eng.obufOver[slowConn], s.eng.obufOver[fastConn]
		s.eng.mu.Unlock()
		if !slowOver || fastOver || s.eng.isClosed(fastConn) {
			t.Fatalf("OutputLimitExceeded: slow %v, fast %v; fast closed %v", slowOver, fastOver, s.eng.isClosed(fastConn))
		}
		fast.send([]byte("PING\r\n"), 0)
		fast.expect("+PONG")

		held := s.dial(t)
		held.send(multibulk("HOLD", "held"), 0)
		heldConn := s.eng.conn(t, "held")
		s.do(t, func(g *Group) {
			g.Push(heldConn, []byte(strings.Repeat("h", limit*3/4)), 0)
			g.Push(heldConn, []byte(strings.Repeat("h", limit*3/4)), 0)
		})
		waitUntil(t, "OutputLimitExceeded for the held conn", func() bool {
			s.eng.mu.Lock()
			defer s.eng.mu.Unlock()
			return s.eng.obufOver[heldConn]
		})
		s.do(t, func(g *Group) {
			heldConn.Out.OK()
			g.Return(heldConn)
		})
		if got, err := held.reply(); err == nil {
			t.Fatalf("a held client past its limit got %.20q after it was returned, want the conn closed", got)
		}
		waitUntil(t, "the engine to hear the held conn closed", func() bool { return s.eng.isClosed(heldConn) })
		s.eng.mu.Lock()
		defer s.eng.mu.Unlock()
		if !s.eng.hardOnly[heldConn] {
			t.Fatal("output pushed to a held conn was not checked against the hard limit alone")
		}
	})
}

// TestServeBusy: while one conn's command runs long and serves the others from inside itself
// (ServeBusy, as a busy script does), the others are answered at once, pipelines included, and
// the long command's own pipeline waits for it. Nested in Serve (I/O threads' batches) or in the
// main thread's own reads, the work Serve had taken and not reached is done too.
func TestServeBusy(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *testServer) {
		long, other, third := s.dial(t), s.dial(t), s.dial(t)
		long.send(append(multibulk("BUSY", "600"), "PING\r\n"...), 0)
		time.Sleep(50 * time.Millisecond)
		start := time.Now()
		for range 5 {
			other.send([]byte("PING\r\nPING\r\n"), 0)
			third.send(multibulk("ECHO", "x"), 0)
			other.expect("+PONG")
			other.expect("+PONG")
			third.expect("$x")
		}
		if d := time.Since(start); d > 400*time.Millisecond {
			t.Errorf("the others were answered after %v, while the long command ran", d)
		}
		long.expect("+OK")
		long.expect("+PONG")
		if d := time.Since(start); d < 400*time.Millisecond {
			t.Errorf("the long command ended after %v, before its 600 ms", d)
		}
	})
}
