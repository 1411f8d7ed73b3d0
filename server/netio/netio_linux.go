package netio

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The event loops use epoll directly, edge-triggered: each socket is registered once for input,
// output and hang-up, and never modified again, so the hot path makes no epoll_ctl calls. A
// short read means the socket is drained (a new edge comes with new data); a short write waits
// for the output edge. Registering a socket reports the readiness it already has, which is what
// lets a connection move from one poller to another without losing an edge.

// Readiness bits of an Event.
const (
	evIn     = unix.EPOLLIN | unix.EPOLLRDHUP // data, or the peer closed its side
	evOut    = unix.EPOLLOUT                  // room to write
	evErr    = unix.EPOLLERR | unix.EPOLLHUP  // the socket failed or was hung up
	evHangUp = unix.EPOLLRDHUP | evErr        // the peer is gone
	conn     = unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET
)

// Event is one ready descriptor: Fd and its readiness bits, Events.
type Event = unix.EpollEvent

// poller is one event loop's epoll instance with an eventfd to wake it from other threads. Only
// its loop calls Wait; any thread may call Wake, Add and Del.
type poller struct {
	epfd   int
	wakefd int // eventfd, registered edge-triggered: a write wakes the loop, nobody reads it
	events []unix.EpollEvent
}

// newPoller creates an epoll instance and its wake-up eventfd.
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
		p.Close()
		return nil, err
	}
	return p, nil
}

// AddListener watches a listening socket for connections to accept (level-triggered).
func (p *poller) addListener(fd int) error { return p.add(fd, unix.EPOLLIN) }

// AddConn watches a connection, edge-triggered, for input, output and hang-up.
func (p *poller) addConn(fd int) error { return p.add(fd, conn) }

func (p *poller) add(fd int, events uint32) error {
	ev := unix.EpollEvent{Events: events, Fd: int32(fd)}
	if err := unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return fmt.Errorf("epoll_ctl add %d: %w", fd, err)
	}
	return nil
}

// Del stops watching fd. Errors mean the descriptor is gone already, which is what Del wants.
func (p *poller) Del(fd int) {
	_ = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, fd, nil)
}

// IsWake says whether an event is the poller's own wake-up.
func (p *poller) IsWake(fd int32) bool { return int(fd) == p.wakefd }

// Wait blocks up to timeoutMs (-1 forever, 0 not at all) and returns the ready events, valid
// until the next Wait.
func (p *poller) Wait(timeoutMs int) []Event {
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
// timeout epoll_pwait returns at once. epoll_pwait with no signal mask is epoll_wait, and unlike
// epoll_wait it exists on every Linux architecture (arm64 has no epoll_wait).
func epollWaitNoBlock(epfd int, events []unix.EpollEvent) (int, error) {
	r, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

var one = [8]byte{1}

// Wake makes the loop's next (or current) Wait return.
func (p *poller) Wake() {
	// EAGAIN means the counter is already non-zero: the wake-up is pending, which is all we want.
	_, _, _ = unix.RawSyscall(unix.SYS_WRITE, uintptr(p.wakefd), uintptr(unsafe.Pointer(&one[0])), 8)
}

// Close releases the poller's descriptors.
func (p *poller) Close() {
	unix.Close(p.wakefd)
	unix.Close(p.epfd)
}

// Read reads from a non-blocking socket without the scheduler bookkeeping of a blocking system
// call. n > 0: bytes read. Otherwise again says there is nothing to read now; !again means end
// of stream or a socket error.
func readSocket(fd int, b []byte) (n int, again bool) {
	if len(b) == 0 {
		return 0, true
	}
	r, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if e == 0 && r > 0 {
		return int(r), false
	}
	return 0, e == unix.EAGAIN || e == unix.EINTR
}

// Write writes to a non-blocking socket like Read reads. full says the socket buffer is full
// (wait for an Out edge); failed that the connection is broken.
func Write(fd int, b []byte) (n int, full, failed bool) {
	if len(b) == 0 {
		return 0, false, false
	}
	r, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	switch e {
	case 0:
		return int(r), false, false
	case unix.EAGAIN:
		return 0, true, false
	case unix.EINTR:
		return 0, false, false
	}
	return 0, false, true
}

// Close closes a descriptor.
func Close(fd int) { unix.Close(fd) }

// Listener is one listening socket.
type Listener struct {
	FD   int
	Unix bool
	TLS  bool   // a tls-port listener: its conns handshake first
	Addr string // host:port, or the socket's path
}

// ListenTCP opens a listening socket for one bind address ("*" and "::*" are the wildcards).
func ListenTCP(bind string, port, backlog int) (*Listener, error) {
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
	return &Listener{FD: fd, Addr: LocalAddr(fd)}, nil
}

// ListenUnix opens a listening Unix socket at path (replacing a stale one), with permissions
// perm when not 0.
func ListenUnix(path string, perm uint32, backlog int) (*Listener, error) {
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
	return &Listener{FD: fd, Unix: true, Addr: path}, nil
}

// Accept takes one pending connection, non-blocking. With none pending it returns fd -1 and a
// nil error; err is set only for failures worth logging.
func (l *Listener) Accept() (fd int, remote string, err error) {
	nfd, sa, err := unix.Accept4(l.FD, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
	if err != nil {
		if err == unix.EAGAIN || err == unix.EINTR || err == unix.ECONNABORTED {
			return -1, "", nil
		}
		return -1, "", err
	}
	return nfd, formatSockaddr(sa), nil
}

// Close closes the socket, and removes a Unix socket's file.
func (l *Listener) Close() {
	unix.Close(l.FD)
	if l.Unix {
		_ = os.Remove(l.Addr)
	}
}

// LocalAddr is a socket's own address, as CLIENT LIST's laddr shows it.
func LocalAddr(fd int) string {
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

// ConfigureConn sets the options Redis sets on every accepted TCP connection.
func ConfigureConn(fd int, keepalive int) {
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

// dupFD duplicates a descriptor, close-on-exec.
func dupFD(fd int) (int, error) { return unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0) }
