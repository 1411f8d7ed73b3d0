// Command redis-commands writes server/engine/redis_commands.resp: the RESP3 replies of
// `COMMAND INFO` and `COMMAND DOCS` from Debian's redis-server, the Redis 7.0 that iocache
// follows. iocache answers COMMAND INFO, COMMAND DOCS and COMMAND GETKEYS[ANDFLAGS] for the
// commands it shares with Redis from this file, so the metadata clients read (key specs, ACL
// categories, arguments, tips) is Redis's own rather than a copy kept by hand.
//
// Run it with `make redis-commands` after a Redis upgrade; TestCommandMetadataIsRedis fails while
// the file and the installed redis-server disagree.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

func main() {
	server := flag.String("redis-server", "redis-server", "the redis-server to ask")
	out := flag.String("out", "server/engine/redis_commands.resp", "the file to write")
	flag.Parse()
	if err := run(*server, *out); err != nil {
		fmt.Fprintln(os.Stderr, "redis-commands:", err)
		os.Exit(1)
	}
}

func run(server, out string) error {
	dir, err := os.MkdirTemp("", "redis-commands")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }() // a temporary folder: best effort
	sock := filepath.Join(dir, "redis.sock")
	cmd := exec.Command(server, "--port", "0", "--unixsocket", sock, "--save", "", "--dir", dir)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", server, err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var conn net.Conn
	for i := 0; i < 100; i++ {
		if conn, err = net.Dial("unix", sock); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", server, err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "HELLO 3\r\nCOMMAND INFO\r\nCOMMAND DOCS\r\n"); err != nil {
		return err
	}
	br := bufio.NewReader(conn)
	var hello, info, docs strings.Builder
	for _, b := range []*strings.Builder{&hello, &info, &docs} {
		if err := copyReply(br, b); err != nil {
			return fmt.Errorf("reading replies: %w", err)
		}
	}
	return os.WriteFile(out, []byte(info.String()+docs.String()), 0o644)
}

// copyReply copies one complete RESP3 reply.
func copyReply(br *bufio.Reader, out *strings.Builder) error {
	line, err := br.ReadString('\n')
	if err != nil {
		return err
	}
	out.WriteString(line)
	n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
	switch line[0] {
	case '$', '=', '!':
		if n >= 0 {
			buf := make([]byte, n+2)
			if _, err := io.ReadFull(br, buf); err != nil {
				return err
			}
			out.Write(buf)
		}
	case '*', '~', '>', '%', '|':
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		for i := 0; i < n; i++ {
			if err := copyReply(br, out); err != nil {
				return err
			}
		}
	}
	return nil
}
