package engine

import (
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/iocache/iocache/server/acl"
	"github.com/iocache/iocache/server/resp"
	"github.com/iocache/iocache/server/version"
)

func cmdPing(s *Server, c *client, argv [][]byte) {
	if len(argv) > 2 {
		s.wrongArgs(c, "ping")
		return
	}
	if c.flags&flagPubSub != 0 && !c.w.RESP3 {
		c.w.Array(2)
		c.w.BulkString("pong")
		if len(argv) == 2 {
			c.w.Bulk(argv[1])
		} else {
			c.w.BulkString("")
		}
		return
	}
	if len(argv) == 2 {
		c.w.Bulk(argv[1])
		return
	}
	c.w.Simple("PONG")
}

func cmdEcho(s *Server, c *client, argv [][]byte) { c.w.Bulk(argv[1]) }

const errWrongPass = "WRONGPASS invalid username-password pair or user is disabled."

// cmdAuth is AUTH <password> (the default user) and AUTH <username> <password>; passwords are
// compared by their SHA-256 in constant time (acl.go).
func cmdAuth(s *Server, c *client, argv [][]byte) {
	if len(argv) > 3 {
		s.addError(c, errSyntax)
		return
	}
	user, pass := "default", argv[1]
	if len(argv) == 3 {
		user, pass = string(argv[1]), argv[2]
	} else if s.acl.users.Default().NoPass() {
		s.addError(c, "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
		return
	}
	if !s.authenticate(c, "AUTH", user, pass) {
		s.addError(c, errWrongPass)
		return
	}
	c.w.OK()
}

func cmdHello(s *Server, c *client, argv [][]byte) {
	proto := 0
	if len(argv) >= 2 {
		v, ok := parseInt(argv[1])
		if !ok {
			s.addError(c, "ERR Protocol version is not an integer or out of range")
			return
		}
		if v < 2 || v > 3 {
			s.addError(c, "NOPROTO unsupported protocol version")
			return
		}
		proto = int(v)
	}
	var setName, user, pass []byte
	hasName, hasAuth := false, false
	for i := 2; i < len(argv); i++ {
		more := len(argv) - i - 1
		switch {
		case resp.EqualFold(argv[i], "auth") && more >= 2:
			user, pass, hasAuth = argv[i+1], argv[i+2], true
			i += 2
		case resp.EqualFold(argv[i], "setname") && more >= 1:
			setName, hasName = argv[i+1], true
			i++
		default:
			s.addError(c, "ERR Syntax error in HELLO option '"+truncate(string(argv[i]), 128)+"'")
			return
		}
	}
	if hasAuth && !s.authenticate(c, "HELLO", string(user), pass) {
		s.addError(c, errWrongPass)
		return
	}
	if !c.authed {
		s.addError(c, "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	if hasName && !validClientName(setName) {
		s.addError(c, "ERR Client names cannot contain spaces, newlines or special characters.")
		return
	}
	if hasName {
		c.name = string(setName)
	}
	if proto != 0 {
		c.w.RESP3 = proto == 3
	}
	p := 2
	if c.w.RESP3 {
		p = 3
	}
	c.w.Map(7)
	c.w.BulkString("server")
	c.w.BulkString("redis")
	c.w.BulkString("version")
	c.w.BulkString(version.RedisVersion)
	c.w.BulkString("proto")
	c.w.Int(int64(p))
	c.w.BulkString("id")
	c.w.Int(c.id)
	c.w.BulkString("mode")
	c.w.BulkString("standalone")
	c.w.BulkString("role")
	c.w.BulkString("master")
	c.w.BulkString("modules")
	c.w.EmptyArray()
}

func validClientName(b []byte) bool {
	for _, ch := range b {
		if ch < '!' || ch > '~' {
			return false
		}
	}
	return true
}

func cmdSelect(s *Server, c *client, argv [][]byte) {
	v, ok := parseInt(argv[1])
	if !ok {
		s.addError(c, "ERR value is not an integer or out of range")
		return
	}
	if v < math.MinInt32 || v > math.MaxInt32 { // Redis reads the index as a C int
		s.addError(c, "ERR value is out of range, value must between -2147483648 and 2147483647")
		return
	}
	if s.cluster != nil && v != 0 {
		s.addError(c, "ERR SELECT is not allowed in cluster mode")
		return
	}
	if v < 0 || v >= int64(len(s.dbs)) {
		s.addError(c, errInvalidDB)
		return
	}
	c.db = int(v)
	c.w.OK()
}

func cmdQuit(s *Server, c *client, argv [][]byte) {
	c.w.OK()
	c.flags |= flagCloseAfterReply
}

func cmdReset(s *Server, c *client, argv [][]byte) {
	s.discardTransaction(c)
	s.pubsubUnsubscribeAll(c, false)
	if c.flags&flagMonitor != 0 {
		s.pubsub.removeMonitor(c)
	}
	c.flags &^= flagMonitor | flagNoEvict | flagAsking | flagReadonly
	s.disableTracking(c)
	c.replyOff, c.replySkip, c.replySkipNext = false, false, false
	c.db = 0
	c.name = ""
	c.w.RESP3 = false
	c.user, c.authed = s.acl.users.Default(), s.defaultAuthenticated()
	c.w.Simple("RESET")
}

func cmdClient(s *Server, c *client, argv [][]byte) {
	sub := argv[1]
	switch {
	case resp.EqualFold(sub, "id") && len(argv) == 2:
		c.w.Int(c.id)
	case resp.EqualFold(sub, "setname") && len(argv) == 3:
		if !validClientName(argv[2]) {
			s.addError(c, "ERR Client names cannot contain spaces, newlines or special characters.")
			return
		}
		c.name = string(argv[2])
		c.w.OK()
	case resp.EqualFold(sub, "getname") && len(argv) == 2:
		if c.name == "" {
			c.w.Null()
		} else {
			c.w.BulkString(c.name)
		}
	case resp.EqualFold(sub, "setinfo") && len(argv) == 4:
		attr := strings.ToLower(string(argv[2]))
		if attr != "lib-name" && attr != "lib-ver" {
			s.addError(c, "ERR Unrecognized option '"+string(argv[2])+"'")
			return
		}
		if !validClientName(argv[3]) && len(argv[3]) > 0 {
			s.addError(c, "ERR "+attr+" cannot contain spaces, newlines or special characters.")
			return
		}
		if attr == "lib-name" {
			c.libName = string(argv[3])
		} else {
			c.libVer = string(argv[3])
		}
		c.w.OK()
	case resp.EqualFold(sub, "list"):
		s.clientList(c, argv)
	case resp.EqualFold(sub, "info") && len(argv) == 2:
		c.w.Verbatim(s.clientInfoLine(c, argv) + "\n")
	case resp.EqualFold(sub, "kill") && len(argv) >= 3: // Redis's arity -3
		s.clientKill(c, argv)
	case resp.EqualFold(sub, "no-evict") && len(argv) == 3:
		switch {
		case resp.EqualFold(argv[2], "on"):
			c.flags |= flagNoEvict
		case resp.EqualFold(argv[2], "off"):
			c.flags &^= flagNoEvict
		default:
			s.addError(c, errSyntax)
			return
		}
		c.w.OK()
	case resp.EqualFold(sub, "pause") && (len(argv) == 3 || len(argv) == 4):
		s.clientPause(c, argv)
	case resp.EqualFold(sub, "unpause") && len(argv) == 2:
		s.clientUnpause(c)
	case resp.EqualFold(sub, "no-touch") && len(argv) == 3:
		switch {
		case resp.EqualFold(argv[2], "on"):
			c.flags |= flagNoTouch
		case resp.EqualFold(argv[2], "off"):
			c.flags &^= flagNoTouch
		default:
			s.addError(c, errSyntax)
			return
		}
		c.w.OK()
	case resp.EqualFold(sub, "reply") && len(argv) == 3:
		// OFF and SKIP take effect in process, which drops the replies they silence (this
		// command's own included).
		switch {
		case resp.EqualFold(argv[2], "on"):
			c.replyOff, c.replySkipNext = false, false
			c.replySkip = false
			c.w.OK()
		case resp.EqualFold(argv[2], "off"):
			c.replyOff = true
		case resp.EqualFold(argv[2], "skip"):
			if !c.replyOff {
				c.replySkipNext = true
			}
		default:
			s.addError(c, errSyntax)
		}
	case resp.EqualFold(sub, "tracking") && len(argv) >= 3:
		cmdClientTracking(s, c, argv)
	case resp.EqualFold(sub, "caching") && len(argv) == 3:
		cmdClientCaching(s, c, argv)
	case resp.EqualFold(sub, "getredir") && len(argv) == 2:
		cmdClientGetRedir(s, c)
	case resp.EqualFold(sub, "trackinginfo") && len(argv) == 2:
		cmdClientTrackingInfo(s, c)
	case resp.EqualFold(sub, "unblock") && (len(argv) == 3 || len(argv) == 4):
		s.clientUnblock(c, argv)
	case resp.EqualFold(sub, "help") && len(argv) == 2:
		writeHelp(c, "CLIENT", []string{
			"GETNAME", "    Return the name of the current connection.",
			"ID", "    Return the ID of the current connection.",
			"INFO", "    Return information about the current client connection.",
			"KILL <ip:port>", "    Kill connection made from <ip:port>.",
			"KILL <option> <value> [<option> <value> [...]]", "    Kill connections. Options are: ID, ADDR, LADDR, SKIPME, USER.",
			"LIST [options ...]", "    Return information about client connections. Options: TYPE, ID.",
			"NO-EVICT (ON|OFF)", "    Protect current client connection from eviction.",
			"PAUSE <timeout> [WRITE|ALL]", "    Suspend all, or just write, clients for <timeout> milliseconds.",
			"UNPAUSE", "    Stop the current client pause, resuming traffic.",
			"SETNAME <name>", "    Assign the name <name> to the current connection.",
			"UNBLOCK <clientid> [TIMEOUT|ERROR]", "    Unblock the specified blocked client.",
		})
	default:
		s.subcommandError(c, argv)
	}
}

// clientInfoLine formats one CLIENT LIST line with Redis 7.0's fields, in its order; argv is the
// CLIENT command being run, whose arguments are the caller's argv-mem.
func (s *Server) clientInfoLine(x *client, argv [][]byte) string {
	var b strings.Builder
	// In Redis's order (getClientInfoString).
	flags := ""
	add := func(on bool, letter string) {
		if on {
			flags += letter
		}
	}
	add(x.flags&flagMonitor != 0, "O") // a monitor is a replica to Redis, flagged O instead of S
	add(x.replLink != nil && x.flags&flagMonitor == 0, "S")
	add(x.isMaster, "M")
	add(x.flags&flagPubSub != 0, "P")
	add(x.flags&flagMulti != 0, "x")
	add(x.flags&flagBlocked != 0, "b")
	add(x.tracking != nil, "t")
	add(x.tracking != nil && x.tracking.redirect > 0 && s.clients[x.tracking.redirect] == nil, "R")
	add(x.tracking != nil && x.tracking.bcast, "B")
	add(x.flags&flagDirtyCAS != 0, "d")
	add(x.flags&flagCloseAfterReply != 0, "c")
	add(x.flags&flagCloseASAP != 0, "A")
	add(x.unix, "U")
	add(x.flags&flagReadonly != 0, "r")
	add(x.flags&flagNoEvict != 0, "e")
	add(x.flags&flagNoTouch != 0, "T")
	if flags == "" {
		flags = "N"
	}
	multi := -1
	if x.flags&flagMulti != 0 {
		multi = len(x.multiQueue)
	}
	resp := 2
	if x.w.RESP3 {
		resp = 3
	}
	cmd := x.lastCmd
	if cmd == "" {
		cmd = "NULL"
	}
	redir := int64(-1)
	if x.tracking != nil {
		redir = x.tracking.redirect
	}
	// argv-mem is the command being run: CLIENT LIST's or CLIENT INFO's own, for the caller.
	var argvMem int64
	if x == s.executing {
		for _, a := range argv {
			argvMem += int64(len(a))
		}
	}
	var multiMem int64
	for _, q := range x.multiQueue {
		for _, a := range q.argv {
			multiMem += int64(len(a)) + 8 // and its pointer, as Redis counts argv_len_sums
		}
	}
	events := "r"
	if x != s.executing && x.pendingOutput() > 0 {
		events = "rw"
	}
	now := s.unixtime
	qbuf := x.conn.QbufLen.Load()
	omem := x.conn.Omem.Load()
	b.WriteString("id=" + itoa(x.id))
	b.WriteString(" addr=" + x.addr)
	b.WriteString(" laddr=" + x.laddr)
	b.WriteString(" fd=" + itoa(int64(x.conn.FD)))
	b.WriteString(" name=" + x.name)
	b.WriteString(" age=" + itoa(now-x.ctime))
	b.WriteString(" idle=" + itoa(now-x.lastInteraction.Load()))
	b.WriteString(" flags=" + flags)
	b.WriteString(" db=" + itoa(int64(x.db)))
	b.WriteString(" sub=" + itoa(int64(len(x.channels))))
	b.WriteString(" psub=" + itoa(int64(len(x.patterns))))
	b.WriteString(" ssub=" + itoa(int64(len(x.shardChannels))))
	b.WriteString(" multi=" + itoa(int64(multi)))
	b.WriteString(" qbuf=" + itoa(qbuf))
	b.WriteString(" qbuf-free=0")
	b.WriteString(" argv-mem=" + itoa(argvMem))
	b.WriteString(" multi-mem=" + itoa(multiMem))
	b.WriteString(" rbs=1024 rbp=0 obl=0 oll=0")
	b.WriteString(" omem=" + itoa(omem))
	b.WriteString(" tot-mem=" + itoa(qbuf+omem+argvMem+multiMem))
	b.WriteString(" events=" + events)
	b.WriteString(" cmd=" + cmd)
	user := "default"
	if x.user != nil {
		user = x.user.Name()
	}
	b.WriteString(" user=" + user)
	b.WriteString(" redir=" + itoa(redir))
	b.WriteString(" resp=" + strconv.Itoa(resp))
	b.WriteString(" lib-name=" + x.libName) // Redis 7.2's, after resp as there
	b.WriteString(" lib-ver=" + x.libVer)
	return b.String()
}

func (s *Server) sortedClients() []*client {
	out := make([]*client, 0, len(s.clients))
	for _, x := range s.clients {
		out = append(out, x)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

func (s *Server) clientList(c *client, argv [][]byte) {
	var ids map[int64]bool
	typ := ""
	for i := 2; i < len(argv); i++ {
		switch {
		case resp.EqualFold(argv[i], "type") && i+1 < len(argv):
			typ = strings.ToLower(string(argv[i+1]))
			switch typ {
			case "normal", "pubsub", "master", "replica", "slave":
			default:
				s.addError(c, "ERR Unknown client type '"+string(argv[i+1])+"'")
				return
			}
			i++
		case resp.EqualFold(argv[i], "id") && i+1 < len(argv):
			ids = map[int64]bool{}
			for j := i + 1; j < len(argv); j++ {
				v, ok := parseInt(argv[j])
				if !ok || v <= 0 {
					s.addError(c, "ERR Invalid client ID")
					return
				}
				ids[v] = true
			}
			i = len(argv)
		default:
			s.addError(c, errSyntax)
			return
		}
	}
	var b strings.Builder
	for _, x := range s.sortedClients() {
		if ids != nil && !ids[x.id] {
			continue
		}
		switch typ {
		case "pubsub":
			if x.flags&flagPubSub == 0 {
				continue
			}
		case "normal":
			if x.flags&flagPubSub != 0 {
				continue
			}
		case "master", "replica", "slave":
			if clientTypeName(x) != canonicalClientType(typ) {
				continue
			}
		}
		b.WriteString(s.clientInfoLine(x, argv))
		b.WriteByte('\n')
	}
	c.w.Verbatim(b.String())
}

func (s *Server) clientKill(c *client, argv [][]byte) {
	if len(argv) == 3 {
		for _, x := range s.clients {
			if x.addr == string(argv[2]) {
				s.killClient(x)
				c.w.OK()
				return
			}
		}
		s.addError(c, "ERR No such client")
		return
	}
	if len(argv)%2 != 0 {
		s.addError(c, errSyntax)
		return
	}
	var id int64
	addr, laddr, typ := "", "", ""
	var user *acl.User
	skipMe := true
	for i := 2; i < len(argv); i += 2 {
		v := string(argv[i+1])
		switch {
		case resp.EqualFold(argv[i], "id"):
			n, ok := parseInt(argv[i+1])
			if !ok || n <= 0 {
				s.addError(c, "ERR client-id should be greater than 0")
				return
			}
			id = n
		case resp.EqualFold(argv[i], "addr"):
			addr = v
		case resp.EqualFold(argv[i], "laddr"):
			laddr = v
		case resp.EqualFold(argv[i], "user"):
			if user = s.acl.users.Get(v); user == nil {
				s.addError(c, "ERR No such user '"+v+"'")
				return
			}
		case resp.EqualFold(argv[i], "skipme"):
			switch strings.ToLower(v) {
			case "yes":
				skipMe = true
			case "no":
				skipMe = false
			default:
				s.addError(c, errSyntax)
				return
			}
		case resp.EqualFold(argv[i], "type"):
			switch typ = canonicalClientType(strings.ToLower(v)); typ {
			case "normal", "pubsub", "master", "replica":
			default:
				s.addError(c, "ERR Unknown client type '"+v+"'")
				return
			}
		case resp.EqualFold(argv[i], "maxage"):
		default:
			s.addError(c, errSyntax)
			return
		}
	}
	killed := 0
	for _, x := range s.clients {
		if (id != 0 && x.id != id) || (addr != "" && x.addr != addr) || (laddr != "" && x.laddr != laddr) ||
			(user != nil && x.user != user) || (skipMe && x == c) || (typ != "" && clientTypeName(x) != typ) {
			continue
		}
		if x == c {
			c.flags |= flagCloseAfterReply
		} else {
			s.killClient(x)
		}
		killed++
	}
	c.w.Int(int64(killed))
}

func (s *Server) clientUnblock(c *client, argv [][]byte) {
	id, ok := parseInt(argv[2])
	if !ok {
		s.addError(c, errNotInt)
		return
	}
	withError := len(argv) == 4 && resp.EqualFold(argv[3], "error")
	if len(argv) == 4 && !withError && !resp.EqualFold(argv[3], "timeout") {
		s.addError(c, "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
		return
	}
	x := s.clients[id]
	if x == nil || x.blocked == nil {
		c.w.Int(0)
		return
	}
	name := x.blocked.cmd.name
	s.blocking.remove(x)
	switch {
	case withError:
		s.addError(x, "UNBLOCKED client unblocked via CLIENT UNBLOCK")
	case name == "blmove" || name == "brpoplpush":
		x.w.Null()
	default:
		x.w.NullArray()
	}
	s.resume(x)
	c.w.Int(1)
}

// connCommands registers this file's commands (see table.go).
var connCommands = []commandSpec{
	{name: "ping", h: cmdPing, own: cmdSubscribed}, // allowed in RESP2 subscribed mode
	{name: "echo", h: cmdEcho},
	{name: "hello", h: cmdHello},
	{name: "auth", h: cmdAuth},
	{name: "select", h: cmdSelect},
	{name: "quit", h: cmdQuit, own: cmdSubscribed},                         // allowed in RESP2 subscribed mode
	{name: "reset", h: cmdReset, own: cmdSubscribed},                       // allowed in RESP2 subscribed mode
	{name: "client", h: cmdClient, own: cmdAdmin | cmdStale | cmdNoScript}, // a container: Redis flags its subcommands
}

// clientTypeName is the client's type as CLIENT KILL/LIST TYPE name it.
func clientTypeName(c *client) string {
	switch {
	case c.replLink != nil:
		return "replica"
	case c.isMaster:
		return "master"
	case c.flags&flagPubSub != 0:
		return "pubsub"
	}
	return "normal"
}

// canonicalClientType reads "slave" as "replica", as Redis does.
func canonicalClientType(t string) string {
	if t == "slave" {
		return "replica"
	}
	return t
}
