package probe

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// PreStop is `iocache-server --pre-stop`, the preStop hook of a replicated instance's pods. The
// kubelet runs it before it sends SIGTERM: while the server is a primary with replicas attached
// it waits (at most --wait), so that the operator, which sees the pod being deleted (a drain, an
// eviction, a rollout), can move the primary to a replica while this one still serves. It returns
// as soon as the server is a replica, a primary without replicas (nobody to hand over to), or does
// not answer; it always exits 0, since a failed hook would only delay the stop.
func PreStop(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("pre-stop", flag.ContinueOnError)
	fs.SetOutput(stderr)
	port := fs.Int("port", 6379, "server port")
	wait := fs.Duration("wait", 20*time.Second, "how long to wait for the primary to move")
	var lc localConnFlags
	lc.register(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	deadline := time.Now().Add(*wait)
	conn, r, err := lc.dial("127.0.0.1", *port, 2*time.Second)
	if err != nil {
		fmt.Fprintln(stderr, "pre-stop: not waiting, the server did not answer:", err)
		return 0
	}
	defer conn.Close()
	_ = conn.SetDeadline(deadline.Add(2 * time.Second))
	for {
		primary, replicas, err := readRoleReply(conn, r)
		if err != nil || !primary || replicas == 0 || time.Now().After(deadline) {
			if err != nil {
				fmt.Fprintln(stderr, "pre-stop: not waiting, the server did not answer ROLE:", err)
			}
			if primary && replicas > 0 {
				fmt.Fprintf(stderr, "pre-stop: still a primary with %d replicas after %s\n", replicas, *wait)
			}
			return 0
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// readRoleReply sends ROLE and reads whether the server is a primary and how many replicas it
// lists. A primary answers *3 $6 master :offset *N ...; anything else is not a primary.
func readRoleReply(w io.Writer, r *bufio.Reader) (primary bool, replicas int, err error) {
	if _, err := io.WriteString(w, "*1\r\n$4\r\nROLE\r\n"); err != nil {
		return false, 0, err
	}
	line := func() string {
		s, e := r.ReadString('\n')
		if e != nil && err == nil {
			err = e
		}
		return strings.TrimRight(s, "\r\n")
	}
	if head := line(); head != "*3" {
		return false, 0, fmt.Errorf("ROLE: %q", head)
	}
	line() // $6
	if role := line(); role != "master" {
		return false, 0, err
	}
	line() // :offset
	n := line()
	if !strings.HasPrefix(n, "*") {
		return false, 0, fmt.Errorf("ROLE replicas: %q", n)
	}
	replicas, _ = strconv.Atoi(n[1:])
	// Each replica is *3 $ip $port $offset: read them off so the next ROLE starts clean.
	for range replicas * 7 {
		line()
	}
	return true, replicas, err
}
