package backup

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/iocache/iocache/server/replication"
)

// Source is the server a backup snapshots: an iocache or a redis-server, primary or replica.
type Source struct {
	Addr           string // host:port
	User, Password string // AUTH, when Password is set (User "" is the default user)
	TLS            *tls.Config
	// Timeout bounds each read (a stalled server ends the backup instead of holding it) and
	// the connection's setup. 0 means 60 s, Redis's repl-timeout.
	Timeout time.Duration
}

// snapshot is an open rdb-only sync: the payload's reader and what the server said of it.
type snapshot struct {
	conn          net.Conn
	payload       io.Reader
	replID        string
	replOffset    int64
	serverVersion string // INFO server's redis_version
	serverName    string // iocache, or redis
}

func (s *snapshot) Close() error { return s.conn.Close() }

// open connects, authenticates and asks for a snapshot alone (REPLCONF rdb-only 1, the payload
// in the disk-less form when the server offers it), as redis-cli --rdb does.
func (src Source) open(ctx context.Context) (*snapshot, error) {
	timeout := src.Timeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	d := &net.Dialer{Timeout: timeout}
	var conn net.Conn
	var err error
	if src.TLS != nil {
		conn, err = (&tls.Dialer{NetDialer: d, Config: src.TLS}).DialContext(ctx, "tcp", src.Addr)
	} else {
		conn, err = d.DialContext(ctx, "tcp", src.Addr)
	}
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", src.Addr, err)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	sn := &snapshot{conn: conn}
	ok := false
	defer func() {
		stop()
		if !ok {
			_ = conn.Close()
		}
	}()
	r := bufio.NewReaderSize(replication.DeadlineConn{Conn: conn, Timeout: timeout}, 256<<10)
	do := func(args ...string) (string, error) {
		_ = conn.SetWriteDeadline(time.Now().Add(timeout))
		if _, err := conn.Write(command(args)); err != nil {
			return "", err
		}
		return reply(r)
	}
	if src.Password != "" {
		args := []string{"AUTH", src.Password}
		if src.User != "" {
			args = []string{"AUTH", src.User, src.Password}
		}
		if _, err := do(args...); err != nil {
			return nil, fmt.Errorf("AUTH: %w", err) // the server's text, never the password
		}
	}
	info, err := do("INFO", "server")
	if err != nil {
		return nil, fmt.Errorf("INFO server: %w", err)
	}
	sn.serverVersion, sn.serverName = infoField(info, "redis_version"), "redis"
	if v := infoField(info, "iocache_version"); v != "" {
		sn.serverVersion, sn.serverName = v, "iocache"
	}
	if _, err := do("REPLCONF", "capa", "eof", "capa", "psync2"); err != nil {
		return nil, fmt.Errorf("REPLCONF capa: %w", err)
	}
	if _, err := do("REPLCONF", "rdb-only", "1"); err != nil {
		return nil, fmt.Errorf("REPLCONF rdb-only: %w (the server must be Redis 7.0 or later, or iocache)", err)
	}
	line, err := do("PSYNC", "?", "-1")
	for err == nil && line == "" {
		line, err = reply(r) // a primary's keepalives while its snapshot waits to start
	}
	if err != nil {
		return nil, fmt.Errorf("PSYNC: %w", err)
	}
	f := strings.Fields(line)
	if len(f) != 3 || f[0] != "FULLRESYNC" {
		return nil, fmt.Errorf("PSYNC answered %q, not +FULLRESYNC", line)
	}
	sn.replID = f[1]
	if sn.replOffset, err = strconv.ParseInt(f[2], 10, 64); err != nil {
		return nil, fmt.Errorf("PSYNC answered %q: %w", line, err)
	}
	if sn.payload, err = replication.OpenPayload(r); err != nil {
		return nil, err
	}
	ok = true
	return sn, nil
}

// command is args as a RESP array.
func command(args []string) []byte {
	b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = append(b, "$"+strconv.Itoa(len(a))+"\r\n"+a+"\r\n"...)
	}
	return b
}

// reply reads one simple, error or bulk reply (all the handshake gets); an error reply is an
// error with the server's text.
func reply(r *bufio.Reader) (string, error) {
	// ReadSlice stops at the reader's buffer (256 KiB): a source that never sends a newline
	// cannot make a line grow without bound.
	b, err := r.ReadSlice('\n')
	if err != nil {
		return "", err
	}
	line := strings.TrimRight(string(b), "\r\n")
	if line == "" {
		return "", nil // a keepalive: only PSYNC's wait may see one
	}
	switch line[0] {
	case '+':
		return line[1:], nil
	case '-':
		return "", errors.New(line[1:])
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 || n > 1<<20 {
			return "", fmt.Errorf("bad bulk header %q", line)
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return "", err
		}
		return string(b[:n]), nil
	}
	return "", fmt.Errorf("unexpected reply %q", line)
}

// infoField is one "name:value" line of an INFO reply.
func infoField(info, name string) string {
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), name+":"); ok {
			return v
		}
	}
	return ""
}
