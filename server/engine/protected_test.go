package engine

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/iocache/iocache/server/config"
)

// nonLoopbackIPv4 is an address of this machine off the loopback interface, from which a test
// can connect to a server bound to it as a stranger would; "" when the machine has none.
func nonLoopbackIPv4(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && n.IP.IsGlobalUnicast() {
			return n.IP.String()
		}
	}
	return ""
}

// firstReply connects from the local address from (port 0) to addr, sends PING and returns what
// the server answers until it closes or a line arrives.
func firstReply(t *testing.T, from, addr string) string {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.WriteString(c, "PING\r\n")
	var b strings.Builder
	buf := make([]byte, 4096)
	for !strings.HasSuffix(b.String(), "\r\n") {
		n, err := c.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return b.String()
}

// listenerOn is the address of the server's TCP listener bound to ip.
func listenerOn(t *testing.T, s *Server, ip string) string {
	for _, l := range s.listeners {
		if strings.HasPrefix(l.Addr, ip+":") {
			return l.Addr
		}
	}
	t.Fatalf("no listener on %s", ip)
	return ""
}

func TestProtectedModeDecision(t *testing.T) {
	for _, tc := range []struct {
		protected, noPass, unix bool
		remote                  string
		deny                    bool
	}{
		{true, true, false, "192.0.2.7:5000", true},
		{true, true, false, "[2001:db8::1]:5000", true},
		{true, true, false, "127.0.0.1:5000", false},
		{true, true, false, "127.3.4.5:5000", false},
		{true, true, false, "[::1]:5000", false},
		{true, true, false, "[::ffff:127.0.0.1]:5000", false},
		{true, true, true, "/unixsocket", false},
		{true, false, false, "192.0.2.7:5000", false},
		{false, true, false, "192.0.2.7:5000", false},
		{true, true, false, "garbage", true},
	} {
		if got := protectedModeDenies(tc.protected, tc.noPass, tc.unix, tc.remote); got != tc.deny {
			t.Errorf("%+v: denies=%v", tc, got)
		}
	}
}

// A client from a non-loopback address gets Redis's DENIED text, byte for byte, and is closed;
// loopback clients are served; a password or protected-mode no opens the door, live.
func TestProtectedModeMatchesRedis(t *testing.T) {
	ip := nonLoopbackIPv4(t)
	if ip == "" {
		t.Skip("this machine has no non-loopback IPv4 address to connect from; TestProtectedModeDecision covers the rule")
	}
	redisAddr := startRedisPeerWithConfig(t, "bind 127.0.0.1 "+ip)
	_, redisPort, _ := net.SplitHostPort(redisAddr)
	s, loop := startServer(t, func(c *config.Config) { c.Bind = []string{"127.0.0.1", ip} })
	if !s.cfg.ProtectedMode {
		t.Fatal("protected-mode is not on by default")
	}
	outside := listenerOn(t, s, ip)

	want := firstReply(t, ip, net.JoinHostPort(ip, redisPort))
	if !strings.HasPrefix(want, "-DENIED ") {
		t.Fatalf("redis-server did not deny a non-loopback client: %q", want)
	}
	if got := firstReply(t, ip, outside); got != want {
		t.Errorf("non-loopback client:\n redis:   %q\n iocache: %q", want, got)
	}
	if got := firstReply(t, "127.0.0.1", loop); got != "+PONG\r\n" {
		t.Errorf("loopback client: %q", got)
	}
	rc := dialPeer(t, loop)
	if info := rc.do("INFO", "stats"); !strings.Contains(info, "rejected_connections:1\r\n") {
		t.Errorf("rejected_connections not counted: %q", info)
	}
	rc.do("CONFIG", "SET", "requirepass", "s3cret")
	if got := firstReply(t, ip, outside); got != "-NOAUTH Authentication required.\r\n" {
		t.Errorf("with a password, non-loopback client got %q", got)
	}
	rc.do("AUTH", "s3cret")
	rc.do("CONFIG", "SET", "requirepass", "")
	rc.do("CONFIG", "SET", "protected-mode", "no")
	if got := firstReply(t, ip, outside); got != "+PONG\r\n" {
		t.Errorf("with protected-mode no, non-loopback client got %q", got)
	}
}
