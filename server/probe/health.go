package probe

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/iocache/iocache/server/tlschain"
	"github.com/iocache/iocache/server/tlsconfig"
)

// CheckHealth is `iocache-server --check-health`: the readiness and liveness probe of the server
// pods. It sends PING (after AUTH with the password from --password-file or $IOCACHE_PASSWORD, so
// the password never appears on a command line) and exits 0 on PONG.
func CheckHealth(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("check-health", flag.ContinueOnError)
	fs.SetOutput(stderr)
	host := fs.String("host", "127.0.0.1", "server host")
	port := fs.Int("port", 6379, "server port")
	timeout := fs.Duration("timeout", 2*time.Second, "how long to wait")
	var lc localConnFlags
	lc.register(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	conn, r, err := lc.dial(*host, *port, *timeout)
	if err != nil {
		fmt.Fprintln(stderr, "health check:", err)
		return 1
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(*timeout))
	fmt.Fprint(conn, "*1\r\n$4\r\nPING\r\n")
	line, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "+PONG") {
		fmt.Fprintf(stderr, "health check: unexpected reply %q (%v)\n", strings.TrimSpace(line), err)
		return 1
	}
	return 0
}

// localConnFlags are how the probe and the preStop hook reach their own server: the password file
// and, for a TLS-only server, the certificates, as redis-cli's --tls flags.
type localConnFlags struct {
	passFile, caFile, certFile, keyFile string
	useTLS                              bool
}

func (lc *localConnFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&lc.passFile, "password-file", "", "file holding the password (else $IOCACHE_PASSWORD)")
	fs.BoolVar(&lc.useTLS, "tls", false, "connect with TLS (a tls-port), as redis-cli --tls")
	fs.StringVar(&lc.caFile, "cacert", "", "CA certificate file to verify the server with (with --tls)")
	fs.StringVar(&lc.certFile, "cert", "", "client certificate file, for tls-auth-clients yes (with --tls)")
	fs.StringVar(&lc.keyFile, "key", "", "client key file (with --tls)")
}

// dial connects and authenticates with dialLocal, over TLS when --tls was given.
func (lc *localConnFlags) dial(host string, port int, timeout time.Duration) (net.Conn, *bufio.Reader, error) {
	var secure func(net.Conn) (net.Conn, error)
	if lc.useTLS {
		secure = func(c net.Conn) (net.Conn, error) { return healthTLS(c, lc.caFile, lc.certFile, lc.keyFile, timeout) }
	}
	return dialLocal(host, port, lc.passFile, timeout, secure)
}

// dialLocal connects to the server for the probe and the preStop hook, through secure when given
// (TLS), and authenticates with the password from passFile or $IOCACHE_PASSWORD, so the password
// never appears on a command line.
func dialLocal(host string, port int, passFile string, timeout time.Duration, secure func(net.Conn) (net.Conn, error)) (net.Conn, *bufio.Reader, error) {
	pw := os.Getenv("IOCACHE_PASSWORD")
	if passFile != "" {
		b, err := os.ReadFile(passFile)
		if err != nil {
			return nil, nil, err
		}
		pw = strings.TrimRight(string(b), "\r\n")
	}
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(host, fmt.Sprint(port)), timeout)
	if err != nil {
		return nil, nil, err
	}
	if secure != nil {
		if conn, err = secure(conn); err != nil {
			return nil, nil, err
		}
	}
	_ = conn.SetDeadline(time.Now().Add(timeout))
	r := bufio.NewReader(conn)
	if pw != "" {
		fmt.Fprintf(conn, "*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n", len(pw), pw)
		if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "+OK") {
			conn.Close()
			return nil, nil, fmt.Errorf("AUTH failed")
		}
	}
	return conn, r, nil
}

// healthTLS runs the TLS handshake of the probe: the server's chain is checked against the CA
// (not its name: a probe dials 127.0.0.1, the certificate names the pod's Service; nor its expiry,
// see tlschain.Verifier), and the client certificate is presented when given.
func healthTLS(conn net.Conn, caFile, certFile, keyFile string, timeout time.Duration) (net.Conn, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true} //nolint:gosec // the chain is verified below, without the host name
	var roots *x509.CertPool
	if caFile != "" {
		var err error
		if roots, err = tlsconfig.LoadCAs(caFile, ""); err != nil {
			conn.Close()
			return nil, err
		}
	}
	cfg.VerifyPeerCertificate = tlschain.Verifier(roots, true) // nil roots: the system's
	if certFile != "" || keyFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			conn.Close()
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	tc := tls.Client(conn, cfg)
	_ = tc.SetDeadline(time.Now().Add(timeout))
	if err := tc.Handshake(); err != nil {
		_ = tc.Close()
		return nil, err
	}
	return tc, nil
}
