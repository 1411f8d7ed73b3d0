package engine

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"
)

// checkHealth is `iocache-server --check-health`: the readiness and liveness probe of the server
// pods. It sends PING (after AUTH with the password from --password-file or $IOCACHE_PASSWORD, so
// the password never appears on a command line) and exits 0 on PONG.
func checkHealth(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("check-health", flag.ContinueOnError)
	fs.SetOutput(stderr)
	host := fs.String("host", "127.0.0.1", "server host")
	port := fs.Int("port", 6379, "server port")
	timeout := fs.Duration("timeout", 2*time.Second, "how long to wait")
	passFile := fs.String("password-file", "", "file holding the password (else $IOCACHE_PASSWORD)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	pw := os.Getenv("IOCACHE_PASSWORD")
	if *passFile != "" {
		b, err := os.ReadFile(*passFile)
		if err != nil {
			fmt.Fprintln(stderr, "health check:", err)
			return 1
		}
		pw = strings.TrimRight(string(b), "\r\n")
	}
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(*host, fmt.Sprint(*port)), *timeout)
	if err != nil {
		fmt.Fprintln(stderr, "health check:", err)
		return 1
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(*timeout))
	r := bufio.NewReader(conn)
	if pw != "" {
		fmt.Fprintf(conn, "*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n", len(pw), pw)
		line, err := r.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "+OK") {
			fmt.Fprintln(stderr, "health check: AUTH failed")
			return 1
		}
	}
	fmt.Fprint(conn, "*1\r\n$4\r\nPING\r\n")
	line, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "+PONG") {
		fmt.Fprintf(stderr, "health check: unexpected reply %q (%v)\n", strings.TrimSpace(line), err)
		return 1
	}
	return 0
}
