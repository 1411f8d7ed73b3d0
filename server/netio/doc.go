// Package netio is the operating system's side of iocache-server's networking: epoll pollers
// with eventfd wake-ups, listening sockets, and non-blocking reads and writes that skip the Go
// scheduler's bookkeeping. The I/O threads that use them live in package engine. It builds on
// Linux only (epoll, eventfd, accept4); elsewhere every constructor returns ErrUnsupported, so
// the server says why it cannot run instead of failing to compile.
package netio

import "errors"

// ErrUnsupported is what the constructors return on systems other than Linux.
var ErrUnsupported = errors.New("iocache-server needs Linux (epoll, eventfd, sched_setaffinity)")
