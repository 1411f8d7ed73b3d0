package engine

import (
	"errors"
	"maps"
	"runtime/debug"
	"time"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/keyspace"
	"github.com/iocache/iocache/server/resp"
	"github.com/iocache/iocache/server/version"
)

func cmdDBSize(s *Server, c *client, argv [][]byte) { c.w.Int(int64(s.dbs[c.db].Len())) }

// flushArg reads FLUSHDB/FLUSHALL's optional ASYNC|SYNC.
func (s *Server) flushArg(c *client, argv [][]byte) bool {
	if len(argv) > 2 || (len(argv) == 2 && !resp.EqualFold(argv[1], "async") && !resp.EqualFold(argv[1], "sync")) {
		s.addError(c, errSyntax)
		return false
	}
	return true
}

// flushDB empties one database in O(1) on the main thread: the old DB, its arena pages and its
// collections are dropped whole, and the garbage collector reclaims them in the background.
func (s *Server) flushDB(i int) {
	s.stats.dirty += int64(s.dbs[i].Len())
	old := s.dbs[i]
	s.dbs[i] = s.newDB()
	s.adoptDB(s.dbs[i], i)
	s.hookNewKeys(true)
	s.touchReplacedDB(i, old, nil)
	if s.blocking.waiting > 0 {
		s.blocking.signalDB(i) // XREADGROUP waiters learn their stream is gone
	}
}

func cmdFlushDB(s *Server, c *client, argv [][]byte) {
	if !s.flushArg(c, argv) {
		return
	}
	s.flushDB(c.db)
	if s.tracking.clients > 0 {
		s.trackingInvalidateAll()
	}
	c.w.OK()
}

func cmdFlushAll(s *Server, c *client, argv [][]byte) {
	if !s.flushArg(c, argv) {
		return
	}
	// As Redis: a running BGSAVE is abandoned, and with save points the empty dataset is saved
	// at once, so that a restart does not bring the flushed keys back. An AOF rewrite goes on:
	// the FLUSHALL is in the incremental file that follows its base.
	if !s.aofRewriteRunning() {
		s.abortBGSave()
	}
	for i := range s.dbs {
		s.flushDB(i)
	}
	if s.tracking.clients > 0 {
		s.trackingInvalidateAll()
	}
	if len(s.savePoints()) > 0 {
		_ = s.saveRDB(s.rdbPath())
	}
	s.stats.dirty++
	c.w.OK()
}

func cmdSwapDB(s *Server, c *client, argv [][]byte) {
	if s.cluster != nil {
		s.addError(c, "ERR SWAPDB is not allowed in cluster mode")
		return
	}
	a, ok1 := parseInt(argv[1])
	b, ok2 := parseInt(argv[2])
	if !ok1 {
		s.addError(c, "ERR invalid first DB index")
		return
	}
	if !ok2 {
		s.addError(c, "ERR invalid second DB index")
		return
	}
	if a < 0 || b < 0 || a >= int64(len(s.dbs)) || b >= int64(len(s.dbs)) {
		s.addError(c, errInvalidDB)
		return
	}
	s.dbs[a], s.dbs[b] = s.dbs[b], s.dbs[a]
	s.touchReplacedDB(int(a), s.dbs[b], s.dbs[a])
	s.touchReplacedDB(int(b), s.dbs[a], s.dbs[b])
	// Clients blocked on keys of either DB may now be served.
	if s.blocking.waiting > 0 {
		s.blocking.signalDB(int(a))
		s.blocking.signalDB(int(b))
	}
	s.stats.dirty++
	c.w.OK()
}

func cmdTime(s *Server, c *client, argv [][]byte) {
	now := time.Now()
	c.w.Array(2)
	c.w.BulkInt(now.Unix())
	c.w.BulkInt(int64(now.Nanosecond() / 1000))
}

// cmdLOLWUT is LOLWUT [VERSION v] [...]: the server's version line. Redis draws art first for
// versions 5 and 6; iocache draws none.
func cmdLOLWUT(s *Server, c *client, argv [][]byte) {
	if len(argv) >= 3 && resp.EqualFold(argv[1], "version") {
		if _, ok := s.intArg(c, argv[2]); !ok {
			return
		}
	}
	c.w.Verbatim("Redis ver. " + version.RedisVersion + "\n")
}

func cmdConfig(s *Server, c *client, argv [][]byte) {
	sub := argv[1]
	switch {
	case resp.EqualFold(sub, "get") && len(argv) >= 3:
		seen := map[string]bool{}
		var pairs [][2]string
		for _, p := range argv[2:] {
			for _, kv := range s.cfg.Get(string(p)) {
				if !seen[kv[0]] {
					seen[kv[0]] = true
					pairs = append(pairs, kv)
				}
			}
		}
		c.w.Map(len(pairs))
		for _, kv := range pairs {
			c.w.BulkString(kv[0])
			c.w.BulkString(kv[1])
		}
	case resp.EqualFold(sub, "set") && len(argv) >= 4 && len(argv)%2 == 0:
		s.configSet(c, argv[2:])
	case resp.EqualFold(sub, "resetstat") && len(argv) == 2:
		s.resetStats()
		c.w.OK()
	case resp.EqualFold(sub, "rewrite") && len(argv) == 2:
		if err := s.cfg.Rewrite(); err != nil {
			if errors.Is(err, config.ErrNoConfigFile) {
				s.addError(c, "ERR "+err.Error())
			} else {
				s.logf(logWarning, "CONFIG REWRITE failed: %v", err)
				s.addError(c, "ERR Rewriting config file: "+err.Error())
			}
			return
		}
		s.logf(logNotice, "CONFIG REWRITE executed with success.")
		c.w.OK()
	case resp.EqualFold(sub, "help") && len(argv) == 2:
		writeHelp(c, "CONFIG", []string{
			"GET <pattern>", "    Return parameters matching the glob-like <pattern> and their values.",
			"SET <directive> <value>", "    Set the configuration <directive> to <value>.",
			"RESETSTAT", "    Reset statistics reported by the INFO command.",
		})
	default:
		s.subcommandError(c, argv)
	}
}

// configSet applies CONFIG SET name value [name value ...] atomically: all or nothing.
func (s *Server) configSet(c *client, args [][]byte) {
	next := *s.cfg
	next.Bind = append([]string(nil), s.cfg.Bind...)
	// The compat directives' values too, so that a refused CONFIG SET leaves them as they were
	// and reconfigureTLS can tell what changed.
	next.Compat = maps.Clone(s.cfg.Compat)
	for i := 0; i < len(args); i += 2 {
		name := string(args[i])
		if err := next.SetLive(name, string(args[i+1])); err != nil {
			switch {
			case errors.Is(err, config.ErrUnknown):
				s.addError(c, "ERR Unknown option or number of arguments for CONFIG SET - '"+name+"'")
			case errors.Is(err, config.ErrImmutable):
				s.addError(c, "ERR CONFIG SET failed (possibly related to argument '"+name+"') - can't set immutable config")
			default:
				s.addError(c, "ERR CONFIG SET failed (possibly related to argument '"+name+"') - "+err.Error())
			}
			return
		}
	}
	names := make([]string, 0, len(args)/2)
	for i := 0; i < len(args); i += 2 {
		names = append(names, string(args[i]))
	}
	effects := config.EffectsOf(names...)
	// The effects that may fail run first, before the new values are in effect: a refusal
	// leaves everything as it was.
	if effects&config.EffectLayout != 0 && layoutChanged(s.cfg, &next) {
		plan, err := s.planFor(&next)
		if err == nil {
			err = s.applyPlan(plan)
		}
		if err != nil {
			s.addError(c, "ERR CONFIG SET failed (possibly related to argument '"+layoutArgument(s.cfg, &next)+"') - "+err.Error())
			return
		}
	}
	if effects&config.EffectMaxClients != 0 && next.MaxClients > s.cfg.MaxClients {
		if err := checkMaxClients(next.MaxClients); err != nil {
			s.addError(c, "ERR CONFIG SET failed (possibly related to argument 'maxclients') - "+err.Error())
			return
		}
	}
	if effects&config.EffectTLS != 0 {
		if msg := s.reconfigureTLS(&next, args); msg != "" {
			s.addError(c, msg)
			return
		}
	}
	turnOn, turnOff := next.AppendOnly && !s.cfg.AppendOnly, !next.AppendOnly && s.cfg.AppendOnly
	*s.cfg = next
	if effects&config.EffectAppendOnly != 0 {
		switch {
		case turnOn:
			if err := s.startAppendOnly(); err != nil {
				s.cfg.AppendOnly = false
				s.logf(logWarning, "%v", err)
				s.addError(c, "ERR CONFIG SET failed (possibly related to argument 'appendonly') - Unable to turn on AOF. Check server logs.")
				return
			}
		case turnOff:
			s.stopAppendOnly()
		}
		s.updatePropagation()
	}
	s.applyEffects(effects)
	c.w.OK()
}

func (s *Server) resetStats() {
	errs := s.stats.errorCodes
	clear(errs)
	s.stats = stats{errorCodes: errs}
	for _, cmd := range s.statCommands() {
		cmd.calls, cmd.usecNs, cmd.failed, cmd.rejected = 0, 0, 0, 0
		cmd.hist = [latencyBuckets]int64{}
	}
	s.slowlog.entries.Reset()
}

func cmdMemory(s *Server, c *client, argv [][]byte) {
	sub := argv[1]
	switch {
	case resp.EqualFold(sub, "usage") && (len(argv) == 3 || len(argv) == 5):
		r, ok := s.lookupWrite(c, argv[2])
		if !ok {
			c.w.Null()
			return
		}
		c.w.Int(s.keyMemoryUsage(s.dbs[c.db], r))
	case resp.EqualFold(sub, "stats") && len(argv) == 2:
		used := s.usedMemory()
		c.w.Map(3)
		c.w.BulkString("total.allocated")
		c.w.Int(used)
		c.w.BulkString("keys.count")
		c.w.Int(int64(s.totalKeys()))
		c.w.BulkString("dataset.bytes")
		c.w.Int(used - s.memOverhead)
	case resp.EqualFold(sub, "doctor") && len(argv) == 2:
		c.w.Verbatim("Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.")
	case resp.EqualFold(sub, "purge") && len(argv) == 2:
		// Redis asks jemalloc to give dirty pages back; Go's equivalent is a full collection
		// that returns freed memory to the system. It runs on the bio thread: a collection of
		// a large heap would hold the main thread for as long as it takes.
		s.bio.submit(debug.FreeOSMemory)
		c.w.OK()
	case resp.EqualFold(sub, "malloc-stats") && len(argv) == 2:
		c.w.Verbatim(mallocStats())
	case resp.EqualFold(sub, "help") && len(argv) == 2:
		writeHelp(c, "MEMORY", []string{
			"DOCTOR", "    Return memory problems reports.",
			"MALLOC-STATS", "    Return internal statistics report from the memory allocator.",
			"PURGE", "    Attempt to purge dirty pages for reclamation by the allocator.",
			"STATS", "    Return information about the memory usage of the server.",
			"USAGE <key> [SAMPLES <count>]", "    Return memory in bytes used by <key> and its value. Nested values are",
			"    sampled up to <count> times (default: 5, 0 means sample all).",
		})
	default:
		s.subcommandError(c, argv)
	}
}

func (s *Server) totalKeys() int {
	n := 0
	for _, db := range s.dbs {
		n += db.Len()
	}
	return n
}

// keyMemoryUsage estimates a key's bytes: its record plus its index share, plus its collection.
func (s *Server) keyMemoryUsage(db *keyspace.DB, r keyspace.Ref) int64 {
	n := int64(16 + len(db.Key(r)) + 32)
	if db.Type(r) == keyspace.TypeString {
		n += int64(len(db.Str(r)))
	} else if b, inline := db.InlineBytes(r); inline {
		n += int64(b) // the collection's bytes are in its record: no object, no table slot
	} else {
		n += objectBytes(db.Obj(r))
	}
	return n
}

func cmdLatency(s *Server, c *client, argv [][]byte) {
	sub := argv[1]
	switch {
	case resp.EqualFold(sub, "latest") && len(argv) == 2:
		s.latencyLatest(c)
	case resp.EqualFold(sub, "reset"):
		var n int64
		if len(argv) == 2 {
			n = s.resetLatency("")
		}
		for _, ev := range argv[2:] {
			n += s.resetLatency(string(ev))
		}
		c.w.Int(n)
	case resp.EqualFold(sub, "histogram"):
		s.cmdLatencyHistogram(c, argv[2:])
	case resp.EqualFold(sub, "history") && len(argv) == 3:
		s.latencyHistory(c, string(argv[2]))
	case resp.EqualFold(sub, "graph") && len(argv) == 3:
		s.latencyGraph(c, string(argv[2]))
	case resp.EqualFold(sub, "doctor") && len(argv) == 2:
		s.latencyDoctor(c)
	case resp.EqualFold(sub, "help") && len(argv) == 2:
		writeHelp(c, "LATENCY", []string{"DOCTOR", "    Return a human readable latency analysis report.",
			"GRAPH <event>", "    Return an ASCII latency graph for the <event> class.",
			"HISTORY <event>", "    Return time-latency samples for the <event> class.",
			"LATEST", "    Return the latest latency samples for all events.", "RESET [<event> ...]", "    Reset latency data of one or more <event> classes.",
			"    (default: reset all data for all event classes)",
			"HISTOGRAM [COMMAND ...]", "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
			"    If no commands are specified then all histograms are replied."})
	default:
		s.subcommandError(c, argv)
	}
}

// serverCommands registers this file's commands (see table.go).
var serverCommands = []commandSpec{
	{name: "config", h: cmdConfig, own: cmdAdmin | cmdStale | cmdNoScript}, // a container: Redis flags its subcommands
	{name: "command", h: cmdCommand},
	{name: "dbsize", h: cmdDBSize},
	{name: "flushdb", h: cmdFlushDB},
	{name: "flushall", h: cmdFlushAll},
	{name: "swapdb", h: cmdSwapDB},
	{name: "time", h: cmdTime},
	{name: "memory", h: cmdMemory, own: cmdReadonly},           // a container: Redis flags its subcommands
	{name: "latency", h: cmdLatency, own: cmdAdmin | cmdStale}, // a container: Redis flags its subcommands
	{name: "debug", h: cmdDebug},
	{name: "lolwut", h: cmdLOLWUT},
}
