//go:build !linux

package netio

// Elsewhere than on Linux every constructor fails with ErrUnsupported; the rest exists so that
// the server compiles and says so.

const (
	evIn     = 1 << 0
	evOut    = 1 << 1
	evErr    = 1 << 2
	evHangUp = 1 << 3
)

type Event struct {
	Events uint32
	Fd     int32
}

type poller struct{}

func newPoller() (*poller, error)            { return nil, ErrUnsupported }
func (p *poller) addListener(fd int) error   { return ErrUnsupported }
func (p *poller) addConn(fd int) error       { return ErrUnsupported }
func (p *poller) Del(fd int)                 {}
func (p *poller) IsWake(fd int32) bool       { return false }
func (p *poller) Wait(timeoutMs int) []Event { return nil }
func (p *poller) Wake()                      {}
func (p *poller) Close()                     {}

func readSocket(fd int, b []byte) (n int, again bool)   { return 0, false }
func Write(fd int, b []byte) (n int, full, failed bool) { return 0, false, true }
func Close(fd int)                                      {}
func LocalAddr(fd int) string                           { return "" }
func ConfigureConn(fd int, keepalive int)               {}

type Listener struct {
	FD   int
	Unix bool
	TLS  bool // a tls-port listener: its conns handshake first
	Addr string
}

func ListenTCP(bind string, port, backlog int) (*Listener, error)         { return nil, ErrUnsupported }
func ListenUnix(path string, perm uint32, backlog int) (*Listener, error) { return nil, ErrUnsupported }
func (l *Listener) Accept() (fd int, remote string, err error)            { return -1, "", ErrUnsupported }
func (l *Listener) Close()                                                {}

func dupFD(fd int) (int, error) { return -1, ErrUnsupported }
