package netio

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// testServer is a Group served the way server/engine serves it (accept, Wait, OnMainEvent,
// Serve, Flush, on a goroutine locked to its OS thread), over a real listening socket on
// 127.0.0.1, with fakeEngine executing the commands. Everything a test asks of the Group runs on
// that main loop, through do.
type testServer struct {
	g    *Group
	eng  *fakeEngine
	ln   *Listener
	tr   transport
	addr string

	mu       sync.Mutex
	tasks    []func()
	stopping atomic.Bool
	done     chan struct{}
}

// newTestGroup is a group serving the fake engine, which knows its group.
func newTestGroup(t *testing.T) (*Group, *fakeEngine) {
	t.Helper()
	eng := newFakeEngine()
	g, err := NewGroup(eng)
	if err != nil {
		t.Fatal(err)
	}
	eng.g = g
	return g, eng
}

// startServer starts a server with threads threads (the main thread included; more than one
// serve sockets from the start) on transport tr, and stops it when the test ends.
func startServer(t *testing.T, tr transport, threads int) *testServer {
	t.Helper()
	g, eng := newTestGroup(t)
	g.SetActivation("always")
	if err := g.Resize(threads, noPinning, nil); err != nil {
		t.Fatal(err)
	}
	ln, err := ListenTCP("127.0.0.1", 0, 64)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.AddListener(ln); err != nil {
		t.Fatal(err)
	}
	s := &testServer{g: g, eng: eng, ln: ln, tr: tr, addr: ln.Addr, done: make(chan struct{})}
	started := make(chan struct{})
	go s.loop(started)
	select {
	case <-started:
	case <-time.After(waitLimit):
		t.Fatal("the main loop did not start")
	}
	t.Cleanup(func() { s.stop(t) })
	return s
}

func noPinning(int) []int { return nil }

// loop is the main loop, as server/engine's mainLoop runs it.
func (s *testServer) loop(started chan<- struct{}) {
	defer close(s.done)
	// Locked for good: the thread ends with the goroutine, as Start asks of the main thread.
	runtime.LockOSThread()
	s.g.Start()
	close(started)
	for !s.stopping.Load() {
		evs := s.g.Wait(50)
		begin := nanotime()
		for i := range evs {
			if int(evs[i].Fd) == s.ln.FD {
				s.acceptAll()
				continue
			}
			s.g.OnMainEvent(evs[i])
		}
		s.g.Serve()
		s.runTasks()
		s.g.Flush()
		s.g.MainBusy(nanotime() - begin)
	}
	s.g.Stop()
	s.ln.Close()
}

func (s *testServer) acceptAll() {
	for {
		fd, _, err := s.ln.Accept()
		if err != nil || fd < 0 {
			return
		}
		ConfigureConn(fd, 0)
		c := NewConn(fd, &fakeClient{})
		if s.tr.server == nil {
			s.g.Assign(c)
			continue
		}
		if err := s.g.Handshake(c, s.tr.server, waitLimit); err != nil {
			Close(fd)
		}
	}
}

func (s *testServer) runTasks() {
	s.mu.Lock()
	tasks := s.tasks
	s.tasks = nil
	s.mu.Unlock()
	for _, f := range tasks {
		f()
	}
}

// do runs f on the main loop, as the engine calls the Group, and waits until it ran.
func (s *testServer) do(t *testing.T, f func(g *Group)) {
	t.Helper()
	ran := make(chan struct{})
	s.mu.Lock()
	s.tasks = append(s.tasks, func() { f(s.g); close(ran) })
	s.mu.Unlock()
	s.g.WakeMain()
	select {
	case <-ran:
	case <-time.After(waitLimit):
		t.Fatal("the main loop did not run a task")
	}
}

// threads is the group's thread stats, read on the main loop.
func (s *testServer) threads(t *testing.T) []ThreadStats {
	var ts []ThreadStats
	s.do(t, func(g *Group) { ts = g.Threads() })
	return ts
}

// reads is how many reads every thread made that brought input.
func (s *testServer) reads(t *testing.T) int64 {
	var n int64
	for _, ts := range s.threads(t) {
		n += ts.Reads
	}
	return n
}

func (s *testServer) stop(t *testing.T) {
	s.stopping.Store(true)
	s.g.WakeMain()
	select {
	case <-s.done:
	case <-time.After(waitLimit):
		t.Error("the main loop did not stop")
		return
	}
	s.eng.mu.Lock()
	defer s.eng.mu.Unlock()
	if len(s.eng.warnings) > 0 || s.eng.hsFailed > 0 {
		t.Errorf("engine warnings %q, %d failed handshakes", s.eng.warnings, s.eng.hsFailed)
	}
}

// setRcvBuf makes a socket's receive buffer small before it connects, so that a client that
// stops reading fills the server's side quickly.
func setRcvBuf(fd uintptr, n int) error {
	return unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, n)
}
