package engine

import (
	"bufio"
	"errors"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/rdb"
	"github.com/iocache/iocache/server/resp"
)

// MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE] [AUTH password]
// [AUTH2 username password] [KEYS key ...], as Redis 7.0 runs it on a standalone server: the keys
// are sent as RESTORE commands (DUMP payloads, with their remaining TTLs) to the instance named,
// and each one the target accepted is deleted here unless COPY is given, which replicas learn as
// DEL. Like Redis, the main thread waits for the target, each step bounded by timeout
// milliseconds; unlike Redis, no connection is kept for the next MIGRATE: the one made is used
// once and closed, so nothing stays open to an address a client named.

func cmdMigrate(s *Server, c *client, argv [][]byte) {
	var copyKeys, replace bool
	var username, password []byte
	keys := argv[3:4]
	for j := 6; j < len(argv); j++ {
		more := len(argv) - 1 - j
		switch a := argv[j]; {
		case resp.EqualFold(a, "copy"):
			copyKeys = true
		case resp.EqualFold(a, "replace"):
			replace = true
		case resp.EqualFold(a, "auth") && more >= 1:
			j++
			password = argv[j]
		case resp.EqualFold(a, "auth2") && more >= 2:
			username, password = argv[j+1], argv[j+2]
			j += 2
		case resp.EqualFold(a, "keys"):
			if len(argv[3]) != 0 {
				s.addError(c, "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string")
				return
			}
			keys = argv[j+1:]
			j = len(argv)
		default:
			s.addError(c, errSyntax)
			return
		}
	}
	timeoutMs, ok1 := parseInt(argv[5])
	dbid, ok2 := parseInt(argv[4])
	if !ok1 || !ok2 {
		s.addError(c, errNotInt)
		return
	}
	if timeoutMs <= 0 {
		timeoutMs = 1000
	}
	// The request: AUTH, SELECT, then one RESTORE per key that exists and has not expired.
	var req []byte
	if password != nil {
		if username != nil {
			req = resp.AppendCommand(req, [][]byte{[]byte("AUTH"), username, password})
		} else {
			req = resp.AppendCommand(req, [][]byte{[]byte("AUTH"), password})
		}
	}
	req = resp.AppendCommand(req, [][]byte{[]byte("SELECT"), []byte(strconv.FormatInt(dbid, 10))})
	db := s.dbs[c.db]
	// A cluster node sends RESTORE-ASKING, which the target accepts for a slot it is importing
	// (an ASKING of its own), as Redis does.
	restoreName := []byte("RESTORE")
	if s.cluster != nil {
		restoreName = []byte("RESTORE-ASKING")
	}
	var moving [][]byte
	for _, key := range keys {
		r, ok := s.lookupRead(c, key)
		if !ok {
			continue
		}
		ttl := int64(0)
		if exp, has := db.ExpireAt(r); has {
			ttl = max(exp-s.nowMs, 1)
		}
		restore := [][]byte{restoreName, key, []byte(strconv.FormatInt(ttl, 10)), rdb.Dump(recordValue(db, r), s.rdbOptions())}
		if replace {
			restore = append(restore, []byte("REPLACE"))
		}
		req = resp.AppendCommand(req, restore)
		moving = append(moving, key)
	}
	if len(moving) == 0 {
		c.w.Simple("NOKEY")
		return
	}
	n := 1 + len(moving)
	if password != nil {
		n++
	}
	replies, err := s.migrateExchange(string(argv[1]), string(argv[2]), req, n, time.Duration(timeoutMs)*time.Millisecond)
	if err != nil && len(replies) == 0 {
		s.addError(c, err.Error())
		return
	}
	// The replies to AUTH and SELECT come first: an error there fails every key, as in Redis.
	// A key the target restored is deleted here (unless COPY), also when a later one failed.
	head := n - len(moving)
	var headErr, targetErr string
	for i, r := range replies {
		failed := strings.HasPrefix(r, "-")
		if failed && targetErr == "" {
			targetErr = r[1:]
		}
		if i < head {
			if failed {
				headErr = r[1:]
			}
			continue
		}
		if failed || headErr != "" || copyKeys {
			continue
		}
		key := moving[i-head]
		if ref, ok := db.Find(key); ok {
			s.deleteKey(db, ref)
			if s.repl.feeding {
				s.propagateDeletion(c.db, key)
			}
			s.wrote(c.db, key, nil, config.NotifyGeneric, "del")
		}
	}
	switch {
	case targetErr != "":
		s.addError(c, "ERR Target instance replied with error: "+targetErr)
	case err != nil:
		s.addError(c, err.Error())
	default:
		c.w.OK()
	}
}

// migrateExchange sends req to host:port and reads n one-line replies, each step within timeout.
// It returns the replies read, and the IOERR Redis reports when the exchange broke off.
func (s *Server) migrateExchange(host, port string, req []byte, n int, timeout time.Duration) ([]string, error) {
	dialer := net.Dialer{Timeout: timeout}
	if src := s.cfg.BindSourceAddr; src != "" {
		dialer.LocalAddr = &net.TCPAddr{IP: net.ParseIP(src)}
	}
	conn, err := dialer.Dial("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, errMigrateWrite
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(timeout))
	if _, err := conn.Write(req); err != nil {
		return nil, errMigrateWrite
	}
	br := bufio.NewReaderSize(conn, 1024)
	replies := make([]string, 0, n)
	for len(replies) < n {
		_ = conn.SetReadDeadline(time.Now().Add(timeout))
		line, err := br.ReadString('\n')
		if err != nil {
			return replies, errMigrateRead
		}
		replies = append(replies, strings.TrimRight(line, "\r\n"))
	}
	return replies, nil
}

// The errors Redis reports when the exchange with the target breaks off.
var (
	errMigrateWrite = errors.New("IOERR error or timeout writing to target instance")
	errMigrateRead  = errors.New("IOERR error or timeout reading to target instance")
)

// migrateCommands registers this file's commands (see table.go).
var migrateCommands = []commandSpec{
	{name: "migrate", h: cmdMigrate},
}

// MIGRATE is @dangerous in Redis's command table (see acl_categories.go).
