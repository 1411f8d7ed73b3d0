// Package netio is iocache-server's socket side: the I/O threads and the main thread's own socket
// loop (Group), the socket half of each client (Conn), the hand-off queues between them, and the
// epoll pollers, listeners and raw reads and writes underneath. The engine executes commands; it
// sees this package through Group's methods and implements Engine for the calls back:
//
//	g, _ := netio.NewGroup(engine)   // engine: Execute, Closed, limits, accounting
//	g.Resize(n, cpusOf, allowed)      // io-threads, live; cpusOf pins each thread
//	g.Start()                         // on the main thread, locked to its OS thread
//	loop: evs := g.Wait(ms); accept or g.OnMainEvent(ev); g.Serve(); g.Flush(); g.Tick(...)
//	g.Assign(conn); g.Return(conn); g.Push(conn, data, class); g.Kill(conn)
//
// Which thread owns which state is the package boundary: see Conn. Group decides by load how
// many I/O threads serve sockets (activation.go) and moves connections between threads at batch
// boundaries (group.go). A conn's reads and writes are one loop for plaintext and TLS
// (readwrite.go), over buffers sized and accounted in one place (buffers.go); a TLS conn differs
// only in its wire, its record layer run by its thread over an in-memory transport (tls.go),
// after a handshake in a goroutine of its own (handshake.go).
//
// It builds on Linux only (epoll, eventfd, accept4); elsewhere every constructor returns
// ErrUnsupported, so the server says why it cannot run instead of failing to compile.
package netio

import "errors"

// ErrUnsupported is what the constructors return on systems other than Linux.
var ErrUnsupported = errors.New("iocache-server needs Linux (epoll, eventfd, sched_setaffinity)")
