//go:build !linux

package netio

// Elsewhere than on Linux every constructor fails with ErrUnsupported; the rest exists so that
// the server compiles and says so.

const (
	In     = 1 << 0
	Out    = 1 << 1
	Err    = 1 << 2
	HangUp = 1 << 3
)

type Event struct {
	Events uint32
	Fd     int32
}

type Poller struct{}

func NewPoller() (*Poller, error)            { return nil, ErrUnsupported }
func (p *Poller) AddListener(fd int) error   { return ErrUnsupported }
func (p *Poller) AddConn(fd int) error       { return ErrUnsupported }
func (p *Poller) Del(fd int)                 {}
func (p *Poller) IsWake(fd int32) bool       { return false }
func (p *Poller) Wait(timeoutMs int) []Event { return nil }
func (p *Poller) Wake()                      {}
func (p *Poller) Close()                     {}

func Read(fd int, b []byte) (n int, again bool)         { return 0, false }
func Write(fd int, b []byte) (n int, full, failed bool) { return 0, false, true }
func Close(fd int)                                      {}
func LocalAddr(fd int) string                           { return "" }
func ConfigureConn(fd int, keepalive int)               {}

type Listener struct {
	FD   int
	Unix bool
	Addr string
}

func ListenTCP(bind string, port, backlog int) (*Listener, error)         { return nil, ErrUnsupported }
func ListenUnix(path string, perm uint32, backlog int) (*Listener, error) { return nil, ErrUnsupported }
func (l *Listener) Accept() (fd int, remote string, err error)            { return -1, "", ErrUnsupported }
func (l *Listener) Close()                                                {}
