package engine

import (
	"sync/atomic"

	"github.com/iocache/iocache/server/acl"
	"github.com/iocache/iocache/server/netio"
	"github.com/iocache/iocache/server/resp"
)

// Client flags, as CLIENT LIST prints them.
const (
	flagMulti           = 1 << iota // inside MULTI
	flagDirtyCAS                    // a WATCHed key changed: EXEC fails
	flagDirtyExec                   // a queued command had an error: EXEC fails with EXECABORT
	flagBlocked                     // waiting in a blocking command
	flagPubSub                      // has subscriptions
	flagMonitor                     // MONITOR
	flagCloseASAP                   // close without waiting for replies to be written
	flagCloseAfterReply             // QUIT, protocol error, KILL: close once the reply is written
	flagNoEvict                     // CLIENT NO-EVICT on
	flagNoTouch                     // CLIENT NO-TOUCH on: its reads leave keys' LRU/LFU alone
	flagAsking                      // ASKING: the next command may use a slot being imported
	flagReadonly                    // READONLY: reads of the primary's slots served by a replica
)

// client is one connection's session: what commands read and change (database, resp version,
// auth, name, MULTI, subscriptions), touched only by the main thread. Its socket half, conn, is
// package netio's: the serving thread's, except while the main thread holds the client (from the
// batch that brings it until it is returned), when Argv, CmdEnds, ProtoErr and the reply writer
// w (conn.Out) are the main thread's. Atomics are readable from anywhere (CLIENT LIST, INFO).
type client struct {
	id    int64
	conn  *netio.Conn
	w     *resp.Writer // &conn.Out: replies are appended here
	addr  string
	laddr string
	unix  bool
	ctime int64 // creation, unix seconds

	// Main-thread state. mainOwned: the main thread holds the client (executing it, or keeping it
	// blocked or paused) and owns its conn's Argv and Out.
	mainOwned bool
	nextCmd   int // index into cmdEnds of the next command to run (blocking resumes here)
	flags     int
	db        int
	name      string
	// libName and libVer are what CLIENT SETINFO told (Redis 7.2), shown by CLIENT LIST.
	libName, libVer string
	authed          bool
	user            *acl.User // the ACL user: the default user until AUTH or HELLO AUTH
	guest           bool      // in the bench space (benchspace.go)
	lastCmd         string
	// The name this client last sent, byte for byte, and the command it named: a pipeline of
	// one command, the usual case, looks the table up once (lookupFor).
	lookupName    [16]byte
	lookupLen     uint8
	lookupCmd     *command
	multiQueue    []queuedCommand
	watched       []clientWatch
	channels      map[string]struct{}
	patterns      map[string]struct{}
	shardChannels map[string]struct{}
	blocked       *blockState
	rerunDeadline int64 // while a blocked command runs again: its deadline (-1: none)
	// CLIENT REPLY: replyOff drops every reply; replySkip drops this command's, and
	// replySkipNext turns into replySkip for the command after CLIENT REPLY SKIP.
	replyOff, replySkip, replySkipNext bool
	// scriptAllowOOM: this is the scripting client running a script flagged allow-oom, whose
	// writes are not checked against maxmemory.
	scriptAllowOOM       bool
	tracking             *trackingOptions // CLIENT TRACKING; nil when off
	pendingInvalidations [][]byte         // to send after the current reply
	lastInteraction      atomic.Int64     // unix seconds of the last read or command

	// Replication (replication_primary.go): the stream offset after this client's last write,
	// for WAIT, and how many replicas its WAIT wants; replconf holds what REPLCONF announced
	// before PSYNC, replLink the replica this connection became.
	woff         int64
	waitReplicas int64
	replconf     *replicaLink
	replLink     *replicaLink
	isMaster     bool // the link to this replica's primary: its commands are the stream
}

type queuedCommand struct {
	cmd  *command
	argv [][]byte
}

type watchedKey struct {
	db  int
	key string
}

// clientWatch is one key a client WATCHes. expired says the key had expired (not yet deleted)
// when WATCH was called: Redis 7.0 does not count a stale key's going as a change.
type clientWatch struct {
	watchedKey
	expired bool
}

func newClient(id int64, fd int, now int64) *client {
	c := &client{id: id, ctime: now}
	c.conn = netio.NewConn(fd, c)
	c.w = &c.conn.Out
	c.lastInteraction.Store(now)
	return c
}

// subscriptions counts channels and patterns, as SUBSCRIBE replies report it.
func (c *client) subscriptions() int { return len(c.channels) + len(c.patterns) }

// pendingOutput is the bytes waiting to be written; for whoever owns the conn's output.
func (c *client) pendingOutput() int { return c.conn.PendingOutput() }
