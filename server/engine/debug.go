package engine

import (
	"strconv"
	"time"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/resp"
	"github.com/iocache/iocache/server/scripting"
)

// DEBUG: the subcommands Redis's own test suite relies on, where iocache can answer them
// truthfully (enable-debug-command gates the command, see bounds.go). Those that report or tune
// an internal iocache does not have (HTSTATS, LISTPACK, REPLYBUFFER, JMAP...) get Redis's error
// for an unknown subcommand. QUICKLIST-PACKED-THRESHOLD is the exception: it is accepted and
// validated as Redis does, and changes nothing: iocache's quicklist nodes take elements of any
// size (one larger than a node gets a node of its own), and the tests that set it then check
// list behaviour, which does not depend on it.

func cmdDebug(s *Server, c *client, argv [][]byte) {
	sub := argv[1]
	switch {
	case resp.EqualFold(sub, "sleep") && len(argv) == 3:
		f, ok := parseFloat(argv[2])
		if !ok {
			s.addError(c, errNotFloat)
			return
		}
		time.Sleep(time.Duration(f * float64(time.Second)))
		c.w.OK()
	case resp.EqualFold(sub, "object") && len(argv) == 3:
		// As Redis's dictFind: a key that expired and is not yet deleted is still there, and
		// looking does not touch it (the suite checks a key's presence so).
		db := s.dbs[c.db]
		r, ok := db.Find(argv[2])
		if !ok {
			s.addError(c, errNoKey)
			return
		}
		c.w.Simple("Value at:0x0 refcount:1 encoding:" + s.encodingOf(db, r) + " serializedlength:" + itoa(s.keyMemoryUsage(db, r)) + " lru:" + itoa(int64(db.LRU(r))) + " lru_seconds_idle:" + itoa(s.idleMs(db.LRU(r))/1000))
	case resp.EqualFold(sub, "set-active-expire") && len(argv) == 3:
		// As Redis's atoi: anything but a non-zero integer turns it off.
		n, _ := parseInt(argv[2])
		s.activeExpireOff = n == 0
		c.w.OK()
	case resp.EqualFold(sub, "pause-cron") && len(argv) == 3:
		// As Redis's atoi: a non-zero integer pauses what cron does (tests use it to hold the
		// expire cycle, memory measurement and eviction still).
		n, _ := parseInt(argv[2])
		s.cronPaused = n != 0
		c.w.OK()
	case resp.EqualFold(sub, "set-disable-deny-scripts") && len(argv) == 3:
		// Lets scripts call commands they may not (DEBUG among them), as Redis's test suite does.
		n, _ := parseInt(argv[2])
		s.scriptDenyOff = n != 0
		c.w.OK()
	case resp.EqualFold(sub, "reload"):
		s.debugReload(c, argv[2:])
	case resp.EqualFold(sub, "loadaof") && len(argv) == 2:
		s.debugLoadAOF(c)
	case resp.EqualFold(sub, "digest") && len(argv) == 2:
		s.debugDigest(c)
	case resp.EqualFold(sub, "digest-value") && len(argv) >= 2:
		s.debugDigestValue(c, argv[2:])
	case resp.EqualFold(sub, "populate") && len(argv) >= 3 && len(argv) <= 5:
		s.debugPopulate(c, argv)
	case resp.EqualFold(sub, "protocol") && len(argv) == 3:
		debugProtocol(s, c, argv[2])
	case resp.EqualFold(sub, "quicklist-packed-threshold") && len(argv) == 3:
		n, err := config.ParseMemory(string(argv[2]))
		if err != nil || n > 1<<32-1<<20 {
			s.addError(c, "ERR argument must be a memory value bigger than 1 and smaller than 4gb")
			return
		}
		c.w.OK()
	case resp.EqualFold(sub, "help") && len(argv) == 2:
		writeHelp(c, "DEBUG", []string{
			"DIGEST", "    Output a hex signature representing the current DB content.",
			"DIGEST-VALUE <key> [<key> ...]", "    Output a hex signature of the values of all the specified keys.",
			"LOADAOF", "    Flush the AOF buffers on disk and reload the AOF in memory.",
			"OBJECT <key>", "    Show low level info about the <key> and associated value.",
			"POPULATE <count> [<prefix>] [<size>]", "    Create <count> string keys named key:<num>. If <prefix> is specified then",
			"    it is used instead of the 'key' prefix. These are not propagated to",
			"    replicas. Cache master will be dirty.",
			"PAUSE-CRON <0|1>", "    Stop periodic cron job processing.",
			"PROTOCOL <type>", "    Reply with a test value of the specified type. <type> can be: string,",
			"    integer, double, bignum, null, array, set, map, attrib, push, verbatim,", "    true, false.",
			"QUICKLIST-PACKED-THRESHOLD <size>", "    Accepted for compatibility; iocache's list nodes take elements of any size.",
			"RELOAD [MERGE] [NOFLUSH] [NOSAVE]", "    Save the RDB on disk and reload it back to memory. By default it will save",
			"    the RDB file and load it back.", "    * MERGE: merge the RDB file with the current dataset (replacing what", "      it holds twice).",
			"    * NOFLUSH: Do not empty the current database before loading the RDB file.", "    * NOSAVE: the database will be loaded from an existing RDB file.",
			"SET-ACTIVE-EXPIRE <0|1>", "    Setting it to 0 disables expiring keys in background when they are not",
			"    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the", "    default.",
			"SET-DISABLE-DENY-SCRIPTS <0|1>", "    Enable/disable the deny scripts flag of commands (DEBUG among them) in scripts.",
			"SLEEP <seconds>", "    Stop the server for <seconds>. Decimals allowed."})
	default:
		s.subcommandError(c, argv)
	}
}

// debugProtocol is DEBUG PROTOCOL <type>: one reply of each RESP type, with Redis's values.
func debugProtocol(s *Server, c *client, name []byte) {
	w := c.w
	switch {
	case resp.EqualFold(name, "string"):
		w.BulkString("Hello World")
	case resp.EqualFold(name, "integer"):
		w.Int(12345)
	case resp.EqualFold(name, "double"):
		w.Double(3.141)
	case resp.EqualFold(name, "bignum"):
		const n = "1234567999999999999999999999999999999"
		if w.RESP3 {
			w.Buf = append(append(append(w.Buf, '('), n...), '\r', '\n')
		} else {
			w.BulkString(n)
		}
	case resp.EqualFold(name, "null"):
		w.Null()
	case resp.EqualFold(name, "array"), resp.EqualFold(name, "set"):
		if resp.EqualFold(name, "set") {
			w.Set(3)
		} else {
			w.Array(3)
		}
		for j := range int64(3) {
			w.Int(j)
		}
	case resp.EqualFold(name, "map"):
		w.Map(3)
		for j := range int64(3) {
			w.Int(j)
			w.Bool(j == 1)
		}
	case resp.EqualFold(name, "attrib"):
		if w.RESP3 {
			w.Buf = append(w.Buf, "|1\r\n"...)
			w.BulkString("key-popularity")
			w.Array(2)
			w.BulkString("key:123")
			w.Int(90)
		}
		w.BulkString("Some real reply following the attribute")
	case resp.EqualFold(name, "push"):
		if !w.RESP3 {
			s.addError(c, "ERR RESP2 is not supported by this command")
			return
		}
		w.Push(2)
		w.BulkString("server-cpu-usage")
		w.Int(42)
		w.BulkString("Some real reply following the push reply")
	case resp.EqualFold(name, "true"):
		w.Bool(true)
	case resp.EqualFold(name, "false"):
		w.Bool(false)
	case resp.EqualFold(name, "verbatim"):
		w.Verbatim("This is a verbatim\nstring")
	default:
		s.addError(c, "ERR Wrong protocol type name. Please use one of the following: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false")
	}
}

// debugLoadAOF is DEBUG LOADAOF: write out the AOF buffer, empty every database and replay the
// AOF the manifest lists, as Redis does. What is replayed is not propagated again (Redis zeroes
// server.dirty for it). Where Redis exits on an AOF it cannot load, iocache answers an error and
// keeps what it could load: no command may take the server down.
func (s *Server) debugLoadAOF(c *client) {
	m := s.aof.manifest
	if s.aof.on {
		s.flushAOF(true)
	} else {
		var err error
		if m, err = s.readManifest(); err != nil {
			s.logf(logWarning, "%v", err)
			m = nil
		}
	}
	for i := range s.dbs {
		old := s.dbs[i]
		s.dbs[i] = s.newDB()
		s.touchReplacedDB(i, old, nil)
	}
	s.functions = scripting.Registry{} // the AOF holds them
	if m == nil || m.Empty() {
		s.logf(logNotice, "Append Only File loaded by DEBUG LOADAOF (no AOF: empty)")
		c.w.OK()
		return
	}
	propagating, dirty := s.propagating, s.stats.dirty
	s.propagating = false
	err := s.loadAOF(m)
	s.propagating, s.stats.dirty = propagating, dirty
	if err != nil {
		s.logf(logWarning, "DEBUG LOADAOF: %v", err)
		s.addError(c, "ERR Error loading the append only file, check server logs.")
		return
	}
	s.logf(logNotice, "Append Only File loaded by DEBUG LOADAOF")
	c.w.OK()
}

// debugPopulate is DEBUG POPULATE count [prefix] [size]: string keys prefix:N holding value:N
// (zero-padded or cut to size bytes), existing keys left alone, nothing propagated, as in Redis.
// Redis would fill memory until the kernel kills it on a count too large; iocache stops with the
// OOM error once used memory passes maxmemory, or the memory limit of its cgroup.
func (s *Server) debugPopulate(c *client, argv [][]byte) {
	// getPositiveLongFromObjectOrReply: one error text for a non-number and a negative one.
	const notPositive = "ERR value is out of range, must be positive"
	count, ok := parseInt(argv[2])
	if !ok || count < 0 {
		s.addError(c, notPositive)
		return
	}
	var size int64
	if len(argv) == 5 {
		if size, ok = parseInt(argv[4]); !ok || size < 0 {
			s.addError(c, notPositive)
			return
		}
	}
	prefix := []byte("key")
	if len(argv) >= 4 {
		prefix = argv[3]
	}
	// Redis formats the name into a 128-byte buffer: longer prefixes are cut.
	const nameMax = 127
	limit := s.cfg.MaxMemory
	if limit == 0 || (s.goMemLimit > 0 && s.goMemLimit < limit) {
		limit = s.goMemLimit
	}
	db := s.dbs[c.db]
	var key, val []byte
	for j := int64(0); j < count; j++ {
		if j%1024 == 0 && limit > 0 && s.usedMemory() > limit {
			s.addError(c, "OOM command not allowed when used memory > 'maxmemory'.")
			return
		}
		key = strconv.AppendInt(append(append(key[:0], prefix...), ':'), j, 10)
		if len(key) > nameMax {
			key = key[:nameMax]
		}
		if _, exists := s.lookupWrite(c, key); exists {
			continue
		}
		val = strconv.AppendInt(append(val[:0], "value:"...), j, 10)
		if size > 0 {
			v := make([]byte, size)
			copy(v, val)
			val = v
		}
		db.SetString(key, val, 0, false, s.initialClock())
		s.modified(c.db, key)
	}
	c.w.OK()
}
