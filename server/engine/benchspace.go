package engine

import (
	"fmt"
	"math"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"

	"github.com/iocache/iocache/server/keyspace"
)

// The bench space is a scratch keyspace of the server's own where benchmark clients work as
// guests, so that measuring a live instance leaves the user's data as it was. A connection enters
// it with BENCHSPACE ENTER and stays until it closes. Its commands then see only the bench space:
//
//   - user commands cannot see it: it is no numbered database (SELECT, MOVE, SWAPDB, DBSIZE, KEYS,
//     SCAN, INFO keyspace, RANDOMKEY and persistence walk only the user's databases);
//   - it has its own bound, benchspace-maxmemory, and makes room by evicting its own keys at
//     random; while it exists the user's memory is their keys plus the overhead measured before it
//     opened, so it never causes the eviction of a user key, and user writes never evict from it;
//   - a guest's reads count in the bench space's hits and misses, not in keyspace_hits/misses;
//     its writes fire no keyspace events, invalidate no tracked keys and touch no WATCHed key;
//   - it is dropped when its last guest disconnects, or on BENCHSPACE DROP.
//
// A guest may send only the commands a load generator needs (guestCommandNames); the handlers are
// the bench space's own, so that no user-keyspace side effect can leak in through shared code.

// guestCommandNames are the commands a guest may send; guestHandler has their handlers.
var guestCommandNames = []string{"ping", "echo", "quit", "get", "set", "incr", "lpush", "del", "exists", "dbsize", "benchspace"}

// guestHandler is the bench space's handler of a guest command. Connection commands that touch no
// keyspace run as they do for anyone.
func guestHandler(name string) func(s *Server, c *client, argv [][]byte) {
	switch name {
	case "ping":
		return cmdPing
	case "echo":
		return cmdEcho
	case "quit":
		return cmdQuit
	case "get":
		return guestGet
	case "set":
		return guestSet
	case "incr":
		return guestIncr
	case "lpush":
		return guestLPush
	case "del":
		return guestDel
	case "exists":
		return guestExists
	case "dbsize":
		return guestDBSize
	case "benchspace":
		return cmdBenchSpace
	}
	return nil
}

// guestRecordOverhead approximates what a key costs besides its bytes (record header, index entry),
// for the check that one write can fit the space at all.
const guestRecordOverhead = 64

// benchSpace is the bench space's state; the main thread owns it.
type benchSpace struct {
	db       *keyspace.DB
	commands map[string]*command // guest commands, with their own call statistics
	guests   int                 // connected guests

	// Statistics of the current session: from the first guest's ENTER to the drop.
	hits, misses, evicted, calls int64
	peakMemory                   int64

	// dropped is set when the space was dropped; settledCycle is then the garbage-collection
	// cycle after which the live heap no longer holds its keys (see benchSpaceSettling).
	dropped      bool
	settledCycle uint64
}

// enterBenchSpace makes c a guest, creating the space when it is the first.
func (s *Server) enterBenchSpace(c *client) {
	b := &s.bench
	if b.commands == nil {
		b.commands = make(map[string]*command, len(guestCommandNames))
		for _, name := range guestCommandNames {
			b.commands[name] = &command{name: name, handler: guestHandler(name)}
		}
	}
	if b.db == nil {
		b.db = s.newDB()
		b.hits, b.misses, b.evicted, b.calls, b.peakMemory = 0, 0, 0, 0, 0
	}
	b.guests++
	c.guest = true
}

// leaveBenchSpace is called for every client that goes away; the last guest drops the space.
func (s *Server) leaveBenchSpace(c *client) {
	if !c.guest {
		return
	}
	c.guest = false
	s.bench.guests--
	if s.bench.guests == 0 {
		s.dropBenchSpace()
	}
}

// dropBenchSpace forgets every key of the space. The memory goes back with the next garbage
// collection, which a background goroutine asks for, so that the server does not wait for it.
func (s *Server) dropBenchSpace() {
	b := &s.bench
	if b.db == nil {
		return
	}
	if b.guests == 0 {
		b.db = nil
		b.dropped = true
	} else {
		b.db = s.newDB()
	}
	go runtime.GC()
}

var gcCycleSample = []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}

func gcCycles() uint64 {
	metrics.Read(gcCycleSample)
	return gcCycleSample[0].Value.Uint64()
}

// benchSpaceSettling is true while the bench space, or the garbage it left, is in the live heap
// that measureMemory reads. The user's memory overhead is then kept as it was measured before the
// space opened: the space's keys, the slack of its index, the garbage of its evictions and its
// guests' buffers are the benchmark's, and taking them for user memory would evict user keys.
// Cron calls it, so the cycle count is read a few times a second at most.
func (s *Server) benchSpaceSettling() bool {
	b := &s.bench
	if b.db != nil {
		return true
	}
	if !b.dropped {
		return false
	}
	cycles := gcCycles()
	if b.settledCycle == 0 {
		// A cycle already running at the drop may have marked the keys live: the one after the
		// next is the first that certainly did not.
		b.settledCycle = cycles + 2
	}
	if cycles < b.settledCycle {
		return true
	}
	b.dropped, b.settledCycle = false, 0
	return false
}

// callGuest runs a guest's command, found in the user table as name, in place of the
// user-keyspace path of call.
func (s *Server) callGuest(c *client, name string, argv [][]byte) {
	cmd := s.bench.commands[name]
	if cmd == nil {
		s.addError(c, "ERR '"+name+"' is not available in the bench space: a connection that sent BENCHSPACE ENTER may only send "+guestCommandList())
		return
	}
	s.bench.calls++
	s.execute(c, cmd, argv)
}

func guestCommandList() string {
	names := make([]string, len(guestCommandNames))
	for i, n := range guestCommandNames {
		names[i] = strings.ToUpper(n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// makeGuestRoom evicts random keys of the space until need more bytes fit under its bound. It
// reports false, having evicted nothing, when need alone exceeds the bound.
func (s *Server) makeGuestRoom(c *client, need int64) bool {
	b := &s.bench
	limit := s.cfg.BenchSpaceMaxMemory
	if need+guestRecordOverhead > limit {
		s.addError(c, "OOM the value does not fit the bench space (benchspace-maxmemory "+strconv.FormatInt(limit, 10)+")")
		return false
	}
	for b.db.UsedMemory()+need > limit {
		r, ok := b.db.RandomKey()
		if !ok {
			break
		}
		s.deleteKey(b.db, r)
		b.evicted++
	}
	return true
}

// afterGuestWrite records the space's peak and trims it back under its bound (a collection that
// grew, a bound lowered by CONFIG SET).
func (s *Server) afterGuestWrite() {
	b := &s.bench
	for b.db.UsedMemory() > s.cfg.BenchSpaceMaxMemory {
		r, ok := b.db.RandomKey()
		if !ok {
			break
		}
		s.deleteKey(b.db, r)
		b.evicted++
	}
	if m := b.db.UsedMemory(); m > b.peakMemory {
		b.peakMemory = m
	}
}

func guestGet(s *Server, c *client, argv [][]byte) {
	db := s.bench.db
	r, ok := db.Find(argv[1])
	if !ok {
		s.bench.misses++
		c.w.Null()
		return
	}
	s.bench.hits++
	db.Touch(r, s.lruClock)
	if db.Type(r) != keyspace.TypeString {
		s.wrongType(c)
		return
	}
	c.w.Bulk(db.Str(r))
}

// guestSet is SET key value: a load generator needs no options.
func guestSet(s *Server, c *client, argv [][]byte) {
	if len(argv) != 3 {
		s.addError(c, errSyntax)
		return
	}
	db := s.bench.db
	if _, exists := db.Find(argv[1]); !exists && !s.makeGuestRoom(c, int64(len(argv[1])+len(argv[2]))) {
		return
	}
	if _, old := db.SetString(argv[1], argv[2], 0, false, s.lruClock); old != nil {
		s.freeObject(db, old)
	}
	s.afterGuestWrite()
	c.w.Simple("OK")
}

func guestIncr(s *Server, c *client, argv [][]byte) {
	db := s.bench.db
	var cur int64
	r, exists := db.Find(argv[1])
	if exists {
		if db.Type(r) != keyspace.TypeString {
			s.wrongType(c)
			return
		}
		v, ok := parseInt(db.Str(r))
		if !ok {
			s.addError(c, errNotInt)
			return
		}
		if v == math.MaxInt64 {
			s.addError(c, errOverflow)
			return
		}
		cur = v
	} else if !s.makeGuestRoom(c, int64(len(argv[1])+20)) {
		return
	}
	cur++
	var buf [20]byte
	out := strconv.AppendInt(buf[:0], cur, 10)
	if exists {
		_, v := db.ResizeString(r, len(out))
		copy(v, out)
	} else {
		db.SetString(argv[1], out, 0, false, s.lruClock)
	}
	s.afterGuestWrite()
	c.w.Int(cur)
}

func guestLPush(s *Server, c *client, argv [][]byte) {
	db := s.bench.db
	var need int64
	for _, v := range argv[2:] {
		need += int64(len(v)) + 24
	}
	var l *keyspace.List
	r, exists := db.Find(argv[1])
	if exists {
		if db.Type(r) != keyspace.TypeList {
			s.wrongType(c)
			return
		}
		l = db.ObjForWrite(r).(*keyspace.List)
	}
	if !s.makeGuestRoom(c, need) {
		return
	}
	if l == nil || !keyExists(db, argv[1]) {
		// New, or evicted to make room.
		l = keyspace.NewList()
		db.CreateObject(argv[1], keyspace.TypeList, l, s.lruClock)
	}
	for _, v := range argv[2:] {
		l.PushFront(v)
	}
	n := l.Len()
	s.afterGuestWrite()
	c.w.Int(int64(n))
}

func keyExists(db *keyspace.DB, key []byte) bool {
	_, ok := db.Find(key)
	return ok
}

func guestDel(s *Server, c *client, argv [][]byte) {
	var n int64
	for _, k := range argv[1:] {
		if r, ok := s.bench.db.Find(k); ok {
			s.deleteKey(s.bench.db, r)
			n++
		}
	}
	c.w.Int(n)
}

func guestExists(s *Server, c *client, argv [][]byte) {
	var n int64
	for _, k := range argv[1:] {
		if keyExists(s.bench.db, k) {
			n++
		}
	}
	c.w.Int(n)
}

func guestDBSize(s *Server, c *client, argv [][]byte) { c.w.Int(int64(s.bench.db.Len())) }

// cmdBenchSpace is BENCHSPACE ENTER | STATS | DROP.
func cmdBenchSpace(s *Server, c *client, argv [][]byte) {
	sub := strings.ToLower(string(argv[1]))
	if len(argv) != 2 {
		s.addError(c, "ERR wrong number of arguments for 'benchspace|"+truncate(sub, 32)+"' command")
		return
	}
	switch sub {
	case "enter":
		switch {
		case s.cfg.BenchSpaceMaxMemory <= 0:
			s.addError(c, "ERR the bench space is disabled (benchspace-maxmemory is 0)")
		case c.guest:
			c.w.Simple("OK")
		case c.flags&(flagMulti|flagPubSub|flagMonitor) != 0 || c.tracking != nil || len(c.watched) > 0:
			s.addError(c, "ERR BENCHSPACE ENTER needs a plain connection: no MULTI, WATCH, subscriptions, MONITOR or tracking")
		default:
			s.enterBenchSpace(c)
			c.w.Simple("OK")
		}
	case "stats":
		c.w.Bulk([]byte(s.benchSpaceStats()))
	case "drop":
		s.dropBenchSpace()
		c.w.Simple("OK")
	default:
		s.addError(c, "ERR unknown subcommand '"+truncate(sub, 32)+"'. Try BENCHSPACE ENTER, BENCHSPACE STATS or BENCHSPACE DROP.")
	}
}

// benchSpaceStats is BENCHSPACE STATS in INFO's field:value format.
func (s *Server) benchSpaceStats() string {
	b := &s.bench
	var keys, used int64
	if b.db != nil {
		keys, used = int64(b.db.Len()), b.db.UsedMemory()
	}
	return fmt.Sprintf("benchspace_guests:%d\r\nbenchspace_keys:%d\r\nbenchspace_used_memory:%d\r\nbenchspace_peak_memory:%d\r\n"+
		"benchspace_maxmemory:%d\r\nbenchspace_commands:%d\r\nbenchspace_hits:%d\r\nbenchspace_misses:%d\r\nbenchspace_evicted_keys:%d\r\n",
		b.guests, keys, used, b.peakMemory, s.cfg.BenchSpaceMaxMemory, b.calls, b.hits, b.misses, b.evicted)
}

// benchspaceCommands registers this file's commands (see table.go).
var benchspaceCommands = []commandSpec{
	{name: "benchspace", h: cmdBenchSpace, meta: &commandMeta{-2, cmdAdmin | cmdNoMulti | cmdStale | cmdNoScript, 0, 0, 0, "server", "Works in a scratch keyspace apart from the user's data (iocache: for benchmarks)."}},
}
