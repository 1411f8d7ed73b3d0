package engine

import (
	"strconv"

	"github.com/iocache/iocache/server/keyspace"
	"github.com/iocache/iocache/server/resp"
)

// Propagation: every command that changed the data set is sent once to the replicas and the
// backlog, in Redis 7.0's form. A command runs as part of an execution unit (a command from a
// client, an EXEC, a script, an expiry outside commands); what it changed is collected as
// operations while the unit runs, and when the outermost command returns, the unit's operations
// enter the stream: one operation as it is, several wrapped in MULTI/EXEC so that the replica
// applies them atomically, as Redis's propagatePendingCommands does. Each operation carries its
// database; the stream gets a SELECT when that changes.
//
// Commands whose effect depends on the time or on chance are rewritten into their deterministic
// form from the state they left (rewriteFor): relative expiries become absolute (PEXPIREAT, SET
// ... PXAT), INCRBYFLOAT becomes SET ... KEEPTTL, XADD * carries the generated ID, blocking pops
// their non-blocking form, SPOP the SREMs of what it removed. Keys that expire or are evicted
// propagate as DEL.
//
// The AOF gets the same units (aof.go). None of this runs until a replica first attaches or the
// AOF is on: execute tests that one flag, propagating.

// replOp is one operation of the running unit: its database and its RESP encoding in unit.
type replOp struct{ db, start, end int }

// propagation is the execution unit being collected.
type propagation struct {
	nesting int
	unit    []byte
	ops     []replOp
	// accounted counts dirty-counter increments already turned into operations (nested
	// commands, expired and evicted keys), so that a command is propagated only for changes of
	// its own.
	accounted int64
	// replaced: the running command's handler propagated its effects itself (SPOP).
	replaced bool
	// unwrapped: the unit goes out without MULTI/EXEC however many operations it has (the
	// lazy-expire deletions of SCAN and RANDOMKEY; see propagateEnd).
	unwrapped bool
	// lastKey is the key the last write touched: the key a blocking or multi-key pop served.
	lastKey []byte
	// popped is how many elements the last [B]LMPOP or [B]ZMPOP took, which its rewrite
	// propagates as the count (Redis's min(count, length)).
	popped  int64
	scratch [][]byte
}

// propMark is what propagateBegin saved for propagateEnd.
type propMark struct {
	dirty, accounted int64
	replaced         bool
}

func (s *Server) propagateBegin() propMark {
	p := &s.repl.prop
	p.nesting++
	m := propMark{dirty: s.stats.dirty, accounted: p.accounted, replaced: p.replaced}
	p.replaced = false
	return m
}

// propagateEnd records the command that just ran, if it changed data, and ends the unit when it
// was the outermost command.
func (s *Server) propagateEnd(c *client, cmd *command, argv [][]byte, m propMark) {
	p := &s.repl.prop
	own := (s.stats.dirty - m.dirty) - (p.accounted - m.accounted)
	if !p.replaced && !c.guest && (own > 0 && cmd.flags&cmdWrite != 0 || propagatedAlways(cmd)) {
		if rw := rewriteFor[cmd.name]; rw != nil {
			rw(s, c, argv)
		} else {
			s.alsoPropagate(c.db, argv...)
		}
	}
	p.accounted = m.accounted + (s.stats.dirty - m.dirty)
	p.replaced = m.replaced
	p.nesting--
	if p.nesting == 0 {
		// As Redis 7.0: the keys SCAN and RANDOMKEY expire on their way, when run directly
		// rather than from a script or EXEC, are deleted one by one, as active expiry deletes
		// them, not as a transaction.
		p.unwrapped = cmd.flags&cmdTouchesArbitraryKeys != 0
		s.propagateUnit()
		p.unwrapped = false
		c.woff = s.repl.offset
	}
}

// propagatedAlways are the commands Redis propagates even when they changed nothing: PUBLISH
// (replicas' subscribers get the message too), and the flushes (an empty database stays empty,
// and the save FLUSHALL makes resets the dirty counter).
func propagatedAlways(cmd *command) bool {
	switch cmd.name {
	case "publish", "flushall", "flushdb":
		return true
	}
	return false
}

// alsoPropagate adds an operation to the running unit; outside any command (active expiry,
// eviction in the event loop) it is a unit of its own.
func (s *Server) alsoPropagate(db int, argv ...[]byte) {
	p := &s.repl.prop
	start := len(p.unit)
	p.unit = resp.AppendCommand(p.unit, argv)
	p.ops = append(p.ops, replOp{db: db, start: start, end: len(p.unit)})
	if p.nesting == 0 {
		s.propagateUnit()
	}
}

// propagateStrings is alsoPropagate for arguments built as strings.
func (s *Server) propagateStrings(db int, args ...string) {
	p := &s.repl.prop
	p.scratch = p.scratch[:0]
	for _, a := range args {
		p.scratch = append(p.scratch, []byte(a))
	}
	s.alsoPropagate(db, p.scratch...)
}

// replacePropagation says that the running command propagated its effects itself.
func (s *Server) replacePropagation() { s.repl.prop.replaced = true }

// propagateDeletion records a key that expired or was evicted, as Redis's DEL.
func (s *Server) propagateDeletion(db int, key []byte) {
	s.repl.prop.accounted++ // the modified() that follows
	s.alsoPropagate(db, bDEL, key)
}

// noteWrittenKey remembers the key a write touched, for the pops' rewrites.
func (s *Server) noteWrittenKey(key []byte) {
	s.repl.prop.lastKey = append(s.repl.prop.lastKey[:0], key...)
}

// propagateUnit moves the unit's operations into the stream.
func (s *Server) propagateUnit() {
	p := &s.repl.prop
	n := len(p.ops)
	if n == 0 {
		return
	}
	if s.aof.feeding {
		s.aofFeedUnit(p)
	}
	// A replica's stream is its primary's, fed as it arrives (masterApplied).
	if s.repl.feeding {
		wrap := n > 1 && !p.unwrapped
		if wrap {
			s.feedCommand(p.ops[0].db, p.unit[:0], true)
		}
		for _, op := range p.ops {
			s.feedCommand(op.db, p.unit[op.start:op.end], false)
		}
		if wrap {
			s.feed(respEXEC)
		}
	}
	p.ops = p.ops[:0]
	p.unit = p.unit[:0]
}

// feedCommand feeds one encoded command (MULTI when multi), preceded by a SELECT when the
// stream is in another database (db -1: a command of no database, PING, REPLCONF GETACK).
func (s *Server) feedCommand(db int, enc []byte, multi bool) {
	if db >= 0 && db != s.repl.streamDB {
		s.repl.streamDB = db
		var b [64]byte
		n := strconv.AppendInt(b[:0], int64(db), 10)
		out := append(b[len(n):len(n)], "*2\r\n$6\r\nSELECT\r\n$"...)
		out = strconv.AppendInt(out, int64(len(n)), 10)
		out = append(out, "\r\n"...)
		out = append(out, n...)
		out = append(out, "\r\n"...)
		s.feed(out)
	}
	if multi {
		s.feed(respMULTI)
		return
	}
	s.feed(enc)
}

var (
	respMULTI = []byte("*1\r\n$5\r\nMULTI\r\n")
	respEXEC  = []byte("*1\r\n$4\r\nEXEC\r\n")
	bDEL      = []byte("DEL")
)

// rewriteFor holds the commands that are not propagated as they were sent.
var rewriteFor map[string]func(s *Server, c *client, argv [][]byte)

func init() {
	rewriteFor = map[string]func(s *Server, c *client, argv [][]byte){
		"set":          rewriteSet,
		"setex":        func(s *Server, c *client, argv [][]byte) { s.propagateSetAt(c, argv[1], argv[3]) },
		"psetex":       func(s *Server, c *client, argv [][]byte) { s.propagateSetAt(c, argv[1], argv[3]) },
		"expire":       rewriteExpire,
		"pexpire":      rewriteExpire,
		"expireat":     rewriteExpire,
		"pexpireat":    rewriteExpire,
		"getex":        rewriteGetEx,
		"getdel":       func(s *Server, c *client, argv [][]byte) { s.alsoPropagate(c.db, bDEL, argv[1]) },
		"incrbyfloat":  rewriteIncrByFloat,
		"hincrbyfloat": rewriteHIncrByFloat,
		"xadd":         rewriteXAdd,
		"xtrim":        rewriteXTrim,
		"restore":      rewriteRestore,
		"blpop":        func(s *Server, c *client, argv [][]byte) { s.propagatePop(c, "LPOP", "") },
		"brpop":        func(s *Server, c *client, argv [][]byte) { s.propagatePop(c, "RPOP", "") },
		"bzpopmin":     func(s *Server, c *client, argv [][]byte) { s.propagatePop(c, "ZPOPMIN", "") },
		"bzpopmax":     func(s *Server, c *client, argv [][]byte) { s.propagatePop(c, "ZPOPMAX", "") },
		"blmpop":       func(s *Server, c *client, argv [][]byte) { rewriteMPop(s, c, argv, 2) },
		"bzmpop":       func(s *Server, c *client, argv [][]byte) { rewriteMPop(s, c, argv, 2) },
		"lmpop":        func(s *Server, c *client, argv [][]byte) { rewriteMPop(s, c, argv, 1) },
		"zmpop":        func(s *Server, c *client, argv [][]byte) { rewriteMPop(s, c, argv, 1) },
		"blmove":       func(s *Server, c *client, argv [][]byte) { s.propagateRenamed(c, "LMOVE", argv[1:5]) },
		"brpoplpush":   func(s *Server, c *client, argv [][]byte) { s.propagateRenamed(c, "RPOPLPUSH", argv[1:3]) },
		// DEBUG RELOAD and the like change this server's memory, not the data set's history.
		"debug": func(*Server, *client, [][]byte) {},

		// RESTORE-ASKING is RESTORE (cmd_cluster.go).
		"restore-asking": rewriteRestore,
	}
}

// propagateSetAt is SET key value PXAT <the key's expiry>, or DEL when the key is gone.
func (s *Server) propagateSetAt(c *client, key, val []byte) {
	db := s.dbs[c.db]
	r, ok := db.Find(key)
	if !ok {
		s.alsoPropagate(c.db, bDEL, key)
		return
	}
	exp, has := db.ExpireAt(r)
	if !has {
		s.propagateRenamed(c, "SET", [][]byte{key, val})
		return
	}
	s.propagateStrings(c.db, "SET", string(key), string(val), "PXAT", strconv.FormatInt(exp, 10))
}

// rewriteSet turns an expiry (EX, PX, EXAT, PXAT) into PXAT and drops the other options, as
// Redis 7.0 does; a SET without one goes as it was.
func rewriteSet(s *Server, c *client, argv [][]byte) {
	for _, a := range argv[3:] {
		if resp.EqualFold(a, "ex") || resp.EqualFold(a, "px") || resp.EqualFold(a, "exat") || resp.EqualFold(a, "pxat") {
			s.propagateSetAt(c, argv[1], argv[2])
			return
		}
	}
	s.alsoPropagate(c.db, argv...)
}

// rewriteExpire is PEXPIREAT with the expiry the key now has, or DEL when a time in the past
// deleted it.
func rewriteExpire(s *Server, c *client, argv [][]byte) {
	db := s.dbs[c.db]
	r, ok := db.Find(argv[1])
	if !ok {
		s.alsoPropagate(c.db, bDEL, argv[1])
		return
	}
	exp, _ := db.ExpireAt(r)
	s.propagateStrings(c.db, "PEXPIREAT", string(argv[1]), strconv.FormatInt(exp, 10))
}

func rewriteGetEx(s *Server, c *client, argv [][]byte) {
	db := s.dbs[c.db]
	r, ok := db.Find(argv[1])
	switch {
	case !ok:
		s.alsoPropagate(c.db, bDEL, argv[1])
	default:
		if exp, has := db.ExpireAt(r); has {
			s.propagateStrings(c.db, "PEXPIREAT", string(argv[1]), strconv.FormatInt(exp, 10))
		} else {
			s.propagateStrings(c.db, "PERSIST", string(argv[1]))
		}
	}
}

func rewriteIncrByFloat(s *Server, c *client, argv [][]byte) {
	db := s.dbs[c.db]
	if r, ok := db.Find(argv[1]); ok && db.Type(r) == keyspace.TypeString {
		s.propagateStrings(c.db, "SET", string(argv[1]), string(db.Str(r)), "KEEPTTL")
	}
}

func rewriteHIncrByFloat(s *Server, c *client, argv [][]byte) {
	db := s.dbs[c.db]
	if r, ok := db.Find(argv[1]); ok && db.Type(r) == keyspace.TypeHash {
		if v, ok := db.Obj(r).(*keyspace.Hash).Get(argv[2]); ok {
			s.propagateStrings(c.db, "HSET", string(argv[1]), string(argv[2]), string(v))
		}
	}
}

// rewriteXAdd puts the ID the entry got in place of "*" (or of a sequence left to the server),
// and an approximate trim ("~") as the exact one it turned into.
func rewriteXAdd(s *Server, c *client, argv [][]byte) {
	st := s.streamAt(c, argv[1])
	if st == nil {
		s.alsoPropagate(c.db, argv...)
		return
	}
	out := append(s.repl.prop.scratch[:0], argv[:2]...)
	i := 2
	for i < len(argv) {
		if resp.EqualFold(argv[i], "nomkstream") {
			out = append(out, argv[i])
			i++
			continue
		}
		if resp.EqualFold(argv[i], "maxlen") || resp.EqualFold(argv[i], "minid") {
			out, i = appendExactTrim(out, argv, i, st)
			continue
		}
		break
	}
	if i < len(argv) {
		out = append(out, st.LastID.AppendTo(nil))
		out = append(out, argv[i+1:]...)
	}
	s.repl.prop.scratch = out[:0]
	s.alsoPropagate(c.db, out...)
}

// rewriteXTrim gives an approximate trim as the exact one it turned into.
func rewriteXTrim(s *Server, c *client, argv [][]byte) {
	st := s.streamAt(c, argv[1])
	if st == nil || len(argv) < 4 {
		s.alsoPropagate(c.db, argv...)
		return
	}
	out, _ := appendExactTrim(append(s.repl.prop.scratch[:0], argv[:2]...), argv, 2, st)
	s.repl.prop.scratch = out[:0]
	s.alsoPropagate(c.db, out...)
}

// streamAt is the stream at key in c's database, or nil.
func (s *Server) streamAt(c *client, key []byte) *keyspace.Stream {
	db := s.dbs[c.db]
	if r, ok := db.Find(key); ok && db.Type(r) == keyspace.TypeStream {
		return db.Obj(r).(*keyspace.Stream)
	}
	return nil
}

// appendExactTrim copies the trim options at argv[i] ("MAXLEN|MINID [=|~] threshold [LIMIT
// count]") to out. An approximate trim becomes "= <what is left>": the stream's length, or its
// first ID; its LIMIT goes, since an exact trim takes none. It returns out and the index after
// the options.
func appendExactTrim(out, argv [][]byte, i int, st *keyspace.Stream) ([][]byte, int) {
	maxlen := resp.EqualFold(argv[i], "maxlen")
	out = append(out, argv[i])
	i++
	approx := false
	if i < len(argv) && len(argv[i]) == 1 && (argv[i][0] == '~' || argv[i][0] == '=') {
		approx = argv[i][0] == '~'
		out = append(out, []byte("="))
		i++
	}
	if i < len(argv) {
		switch {
		case !approx:
			out = append(out, argv[i])
		case maxlen:
			out = append(out, strconv.AppendInt(nil, int64(st.Len()), 10))
		default:
			if e, ok := st.First(); ok {
				out = append(out, e.ID.AppendTo(nil))
			} else {
				out = append(out, argv[i])
			}
		}
		i++
	}
	if i+1 < len(argv) && resp.EqualFold(argv[i], "limit") {
		if !approx {
			out = append(out, argv[i], argv[i+1])
		}
		i += 2
	}
	return out, i
}

// rewriteRestore gives a relative TTL as the absolute time, with ABSTTL appended, as Redis 7.0
// does.
func rewriteRestore(s *Server, c *client, argv [][]byte) {
	for _, a := range argv[4:] {
		if resp.EqualFold(a, "absttl") {
			s.alsoPropagate(c.db, argv...)
			return
		}
	}
	db := s.dbs[c.db]
	var exp int64
	has := false
	if r, ok := db.Find(argv[1]); ok {
		exp, has = db.ExpireAt(r)
	}
	if !has {
		s.alsoPropagate(c.db, argv...)
		return
	}
	out := append(s.repl.prop.scratch[:0], argv...)
	out[2] = strconv.AppendInt(nil, exp, 10)
	out = append(out, []byte("ABSTTL"))
	s.repl.prop.scratch = out[:0]
	s.alsoPropagate(c.db, out...)
}

// propagatePop is a blocking pop served, as the non-blocking pop of the key it served.
func (s *Server) propagatePop(c *client, name, count string) {
	key := s.repl.prop.lastKey
	if count == "" {
		s.propagateStrings(c.db, name, string(key))
		return
	}
	s.propagateStrings(c.db, name, string(key), count)
}

// rewriteMPop is [B]LMPOP/[B]ZMPOP as LPOP/RPOP/ZPOPMIN/ZPOPMAX key count, as Redis does.
func rewriteMPop(s *Server, c *client, argv [][]byte, numkeysAt int) {
	n, ok := parseInt(argv[numkeysAt])
	if !ok || int(n)+numkeysAt+1 >= len(argv) {
		return
	}
	dir := argv[numkeysAt+1+int(n)]
	count := strconv.FormatInt(s.repl.prop.popped, 10)
	name := "LPOP"
	switch {
	case resp.EqualFold(dir, "right"):
		name = "RPOP"
	case resp.EqualFold(dir, "min"):
		name = "ZPOPMIN"
	case resp.EqualFold(dir, "max"):
		name = "ZPOPMAX"
	}
	s.propagatePop(c, name, count)
}

// propagateRenamed propagates args under another command name.
func (s *Server) propagateRenamed(c *client, name string, args [][]byte) {
	out := append(s.repl.prop.scratch[:0], []byte(name))
	out = append(out, args...)
	s.repl.prop.scratch = out[:0]
	s.alsoPropagate(c.db, out...)
}
