package engine

import (
	"sync/atomic"

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
)

// client is one connection. Its fields fall in three groups, and ownership is what keeps them
// safe without locks:
//
//   - socket state (qbuf, parse position, out) belongs to the client's I/O thread, except while
//     the client is handed to the main thread (inFlight): then the main thread owns all of it,
//     and the hand-off through the thread's mutex orders the two threads' accesses;
//   - session state (db, resp version, auth, name, MULTI, subscriptions) is touched only by
//     commands, so only by the main thread;
//   - a few statistics are atomics, readable from anywhere (CLIENT LIST, INFO).
type client struct {
	id     int64
	fd     int
	thread *ioThread
	addr   string
	laddr  string
	unix   bool
	ctime  int64 // creation, unix seconds

	// Socket state (I/O thread, or main while inFlight).
	qbuf        []byte
	qpos        int           // bytes of qbuf consumed by parsed commands
	need        int           // parse again only when len(qbuf) >= need
	progress    resp.Progress // how far the parse got into a request that has not arrived in full
	argv        [][]byte
	cmdEnds     []int // end of each parsed command in argv
	protoErr    string
	w           resp.Writer // w.Buf is the output buffer
	outPos      int         // bytes of w.Buf already written
	writable    bool
	readPending bool
	moreToParse bool
	scheduled   bool // on its thread's pending list
	inFlight    bool
	closed      bool
	pendingPush [][]byte // pub/sub messages that arrived while inFlight
	// pendingPushBytes is pendingPush's size; pushClass the output-limit class of the last push
	// (both the I/O thread's, even while inFlight).
	pendingPushBytes int64
	pushClass        uint8
	killPending      bool // a kill arrived while inFlight

	// Main-thread state.
	mainOwned bool
	// moving: the client's thread was asked to detach it (it moves to another thread) and has
	// not handed it back yet. What the main thread would send that thread meanwhile waits here
	// and follows the client to its new thread.
	moving        bool
	deferReturn   bool
	deferKill     bool
	deferPush     [][]byte
	nextCmd       int // index into cmdEnds of the next command to run (blocking resumes here)
	flags         int
	db            int
	name          string
	authed        bool
	guest         bool // in the bench space (benchspace.go)
	lastCmd       string
	multiQueue    []queuedCommand
	watched       []watchedKey
	channels      map[string]struct{}
	patterns      map[string]struct{}
	blocked       *blockState
	rerunDeadline int64 // while a blocked command runs again: its deadline (-1: none)
	// CLIENT REPLY: replyOff drops every reply; replySkip drops this command's, and
	// replySkipNext turns into replySkip for the command after CLIENT REPLY SKIP.
	replyOff, replySkip, replySkipNext bool
	tracking                           *trackingOptions // CLIENT TRACKING; nil when off
	pendingInvalidations               [][]byte         // to send after the current reply
	obufSoftAt                         int64            // unix ms when the output first went over the soft limit (0 = not over)
	lastInteraction                    atomic.Int64     // unix seconds of the last read or command
	qbufLen                            atomic.Int64
	omem                               atomic.Int64
	// peerGone is set by the I/O thread when the peer hangs up while the main thread holds the
	// client (blocked): the main thread then drops it instead of serving it.
	peerGone atomic.Bool
}

type queuedCommand struct {
	cmd  *command
	argv [][]byte
}

type watchedKey struct {
	db  int
	key string
}

// Defaults for buffer sizing: a read asks for at least readChunk bytes; a query buffer that
// grew past bigBuffer while serving a large request is released once empty.
const (
	readChunk       = 16 << 10
	bigBuffer       = 256 << 10
	maxCmdsPerBatch = 1024
)

func newClient(id int64, fd int, now int64) *client {
	c := &client{id: id, fd: fd, ctime: now, writable: true, authed: false}
	c.lastInteraction.Store(now)
	return c
}

// subscriptions counts channels and patterns, as SUBSCRIBE replies report it.
func (c *client) subscriptions() int { return len(c.channels) + len(c.patterns) }

// pendingOutput is the bytes waiting to be written.
func (c *client) pendingOutput() int { return len(c.w.Buf) - c.outPos }
