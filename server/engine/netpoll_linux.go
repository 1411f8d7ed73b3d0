package engine

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The event loops use epoll directly, edge-triggered: each socket is registered once at accept
// for input, output and hang-up, and never modified again, so the hot path makes no epoll_ctl
// calls. A short read means the socket is drained (a new edge comes with new data); a short
// write waits for the EPOLLOUT edge.

const (
	evIn   = unix.EPOLLIN | unix.EPOLLRDHUP
	evOut  = unix.EPOLLOUT
	evErr  = unix.EPOLLERR | unix.EPOLLHUP
	evMask = unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET
)

type poller struct {
	epfd   int
	wakefd int // eventfd, registered edge-triggered: a write wakes the loop, nobody reads it
	events []unix.EpollEvent
}

func newPoller() (*poller, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	wfd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	p := &poller{epfd: epfd, wakefd: wfd, events: make([]unix.EpollEvent, 512)}
	if err := p.add(wfd, unix.EPOLLIN|unix.EPOLLET); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

func (p *poller) add(fd int, events uint32) error {
	ev := unix.EpollEvent{Events: events, Fd: int32(fd)}
	if err := unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return fmt.Errorf("epoll_ctl add %d: %w", fd, err)
	}
	return nil
}

// del stops watching fd. Errors mean the descriptor is gone already, which is what del wants.
func (p *poller) del(fd int) {
	_ = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, fd, nil)
}

// wait blocks up to timeoutMs (-1 forever, 0 not at all) and returns the ready events.
func (p *poller) wait(timeoutMs int) []unix.EpollEvent {
	for {
		var n int
		var err error
		if timeoutMs == 0 {
			n, err = epollWaitNoBlock(p.epfd, p.events)
		} else {
			n, err = unix.EpollWait(p.epfd, p.events, timeoutMs)
		}
		if err == nil {
			return p.events[:n]
		}
		if err != unix.EINTR {
			return nil
		}
	}
}

// epollWaitNoBlock polls without telling the Go scheduler about a blocking call: with a zero
// timeout epoll_wait returns at once.
func epollWaitNoBlock(epfd int, events []unix.EpollEvent) (int, error) {
	r, _, e := unix.RawSyscall6(unix.SYS_EPOLL_WAIT, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

var one = [8]byte{1}

// wake makes the loop's next (or current) wait return.
func (p *poller) wake() {
	// EAGAIN means the counter is already non-zero: the wake-up is pending, which is all we want.
	_, _, _ = unix.RawSyscall(unix.SYS_WRITE, uintptr(p.wakefd), uintptr(unsafe.Pointer(&one[0])), 8)
}

func (p *poller) close() {
	unix.Close(p.wakefd)
	unix.Close(p.epfd)
}

// sysRead and sysWrite are read(2)/write(2) on non-blocking sockets. They never block, so they
// skip the scheduler bookkeeping of a blocking system call.
func sysRead(fd int, b []byte) (int, unix.Errno) {
	if len(b) == 0 {
		return 0, 0
	}
	r, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	return int(r), e
}

func sysWrite(fd int, b []byte) (int, unix.Errno) {
	if len(b) == 0 {
		return 0, 0
	}
	r, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	return int(r), e
}

// listener is one listening socket.
type listener struct {
	fd   int
	unix bool
	addr string
}

// listenTCP opens a listening socket for one bind address. A leading '-' (as in Redis's default
// "-::*") makes the address optional: if it cannot be bound, it is skipped.
func listenTCP(bind string, port, backlog int) (*listener, error) {
	host := bind
	if host == "*" {
		host = "0.0.0.0"
	} else if host == "::*" {
		host = "::"
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return nil, fmt.Errorf("invalid bind address %q", bind)
	}
	family := unix.AF_INET6
	if ip.To4() != nil {
		family = unix.AF_INET
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	var sa unix.Sockaddr
	if family == unix.AF_INET {
		a := &unix.SockaddrInet4{Port: port}
		copy(a.Addr[:], ip.To4())
		sa = a
	} else {
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 1)
		a := &unix.SockaddrInet6{Port: port}
		copy(a.Addr[:], ip.To16())
		sa = a
	}
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("bind %s:%d: %w", host, port, err)
	}
	if err := unix.Listen(fd, backlog); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("listen %s:%d: %w", host, port, err)
	}
	l := &listener{fd: fd}
	l.addr = sockaddrString(fd)
	return l, nil
}

func listenUnix(path string, perm uint32, backlog int) (*listener, error) {
	_ = os.Remove(path)
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("bind %s: %w", path, err)
	}
	if perm != 0 {
		_ = os.Chmod(path, os.FileMode(perm))
	}
	if err := unix.Listen(fd, backlog); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("listen %s: %w", path, err)
	}
	return &listener{fd: fd, unix: true, addr: path}, nil
}

func sockaddrString(fd int) string {
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return ""
	}
	return formatSockaddr(sa)
}

func formatSockaddr(sa unix.Sockaddr) string {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return net.IP(a.Addr[:]).String() + ":" + strconv.Itoa(a.Port)
	case *unix.SockaddrInet6:
		return "[" + net.IP(a.Addr[:]).String() + "]:" + strconv.Itoa(a.Port)
	case *unix.SockaddrUnix:
		if a.Name == "" {
			return "/unixsocket"
		}
		return a.Name
	}
	return ""
}

// configureConn sets the options Redis sets on every accepted TCP connection.
func configureConn(fd int, keepalive int) {
	_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	if keepalive > 0 {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_KEEPALIVE, 1)
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_KEEPIDLE, keepalive)
		intvl := keepalive / 3
		if intvl == 0 {
			intvl = 1
		}
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_KEEPINTVL, intvl)
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_KEEPCNT, 3)
	}
}

func isIPv6Optional(bind string) (string, bool) {
	if strings.HasPrefix(bind, "-") {
		return bind[1:], true
	}
	return bind, false
}
