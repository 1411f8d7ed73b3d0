package engine

import (
	"bytes"
	"math"
	"strconv"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/keyspace"
	"github.com/iocache/iocache/server/resp"
)

// Streams: XADD, XLEN, XRANGE, XREVRANGE, XDEL, XTRIM, XREAD (with BLOCK) and XINFO, with Redis
// 7.0's arguments, replies and error texts; consumer groups are in cmd_stream_group.go. As in
// Redis, a stream key stays when its last entry goes.

const (
	errInvalidStreamID = "ERR Invalid stream ID specified as stream command argument"
	errStreamTopItem   = "ERR The ID specified in XADD is equal or smaller than the target stream top item"
	errStreamExhausted = "ERR The stream has exhausted the last possible ID, unable to add more items"
)

func (s *Server) getStream(c *client, key []byte, mode access) (*keyspace.Stream, bool) {
	return getObject(s, c, key, keyspace.TypeStream, mode, keyspace.NewStream)
}

// parseStreamID reads <ms>[-<seq>] as Redis's streamParseID does. A missing sequence is
// missingSeq. Unless strict, "-" and "+" are the smallest and largest IDs. With autoSeq non-nil,
// "<ms>-*" is accepted and sets *autoSeq.
func parseStreamID(b []byte, missingSeq uint64, strict bool, autoSeq *bool) (keyspace.StreamID, bool) {
	if len(b) > 127 {
		return keyspace.StreamID{}, false
	}
	if !strict && len(b) == 1 {
		switch b[0] {
		case '-':
			return keyspace.StreamID{}, true
		case '+':
			return keyspace.MaxStreamID, true
		}
	}
	msPart, seqPart, hasSeq := bytes.Cut(b, []byte{'-'})
	ms, err := strconv.ParseUint(string(msPart), 10, 64)
	if err != nil {
		return keyspace.StreamID{}, false
	}
	if !hasSeq {
		return keyspace.StreamID{Ms: ms, Seq: missingSeq}, true
	}
	if autoSeq != nil && len(seqPart) == 1 && seqPart[0] == '*' {
		*autoSeq = true
		return keyspace.StreamID{Ms: ms}, true
	}
	seq, err := strconv.ParseUint(string(seqPart), 10, 64)
	if err != nil {
		return keyspace.StreamID{}, false
	}
	return keyspace.StreamID{Ms: ms, Seq: seq}, true
}

// trimSpec is the MAXLEN/MINID part of XADD and XTRIM.
type trimSpec struct {
	maxLen   int64
	minID    keyspace.StreamID
	strategy byte // 0, 'l' (MAXLEN) or 'i' (MINID)
	approx   bool
	limit    int64 // -1: none given
}

// parseTrimArg reads one MAXLEN/MINID/LIMIT option at argv[i]; it returns the next index, or -1
// after replying with an error, or i itself when argv[i] is not a trimming option.
func (s *Server) parseTrimArg(c *client, argv [][]byte, i int, t *trimSpec) int {
	a := argv[i]
	more := len(argv) - 1 - i
	switch {
	case (resp.EqualFold(a, "maxlen") || resp.EqualFold(a, "minid")) && more >= 1:
		strategy := byte('l')
		if resp.EqualFold(a, "minid") {
			strategy = 'i'
		}
		if t.strategy != 0 && t.strategy != strategy {
			s.addError(c, "ERR syntax error, MAXLEN and MINID options at the same time are not compatible")
			return -1
		}
		t.strategy = strategy
		i++
		if next := argv[i]; more >= 2 && len(next) == 1 && (next[0] == '~' || next[0] == '=') {
			t.approx = next[0] == '~'
			i++
		}
		if strategy == 'l' {
			n, ok := parseInt(argv[i])
			if !ok {
				s.addError(c, errNotInt)
				return -1
			}
			if n < 0 {
				s.addError(c, "ERR The MAXLEN argument must be >= 0.")
				return -1
			}
			t.maxLen = n
		} else {
			id, ok := parseStreamID(argv[i], 0, true, nil)
			if !ok {
				s.addError(c, errInvalidStreamID)
				return -1
			}
			t.minID = id
		}
		return i + 1
	case resp.EqualFold(a, "limit") && more >= 1:
		n, ok := parseInt(argv[i+1])
		if !ok {
			s.addError(c, errNotInt)
			return -1
		}
		if n < 0 {
			s.addError(c, "ERR The LIMIT argument must be >= 0.")
			return -1
		}
		t.limit = n
		return i + 2
	}
	return i
}

// checkTrim validates the combination of trimming options.
func (s *Server) checkTrim(c *client, t *trimSpec) bool {
	if t.limit >= 0 && !t.approx {
		s.addError(c, "ERR syntax error, LIMIT cannot be used without the special ~ option")
		return false
	}
	return true
}

// streamNodeLimits are stream-node-max-bytes and stream-node-max-entries.
func (s *Server) streamNodeLimits() keyspace.NodeLimits {
	return keyspace.NodeLimits{MaxBytes: s.cfg.StreamNodeMaxBytes, MaxEntries: s.cfg.StreamNodeMaxEntries}
}

// trimStream applies a trimSpec as Redis does: with "~", whole nodes only (stream_nodes.go).
// LIMIT caps the entries removed; with "~" and no LIMIT, Redis's default cap of 100 nodes' worth
// applies, and LIMIT 0 lifts the cap.
func (s *Server) trimStream(st *keyspace.Stream, t *trimSpec) int {
	spec := keyspace.TrimSpec{MaxLen: t.maxLen, MinID: t.minID, ByMinID: t.strategy == 'i', Approx: t.approx}
	switch {
	case t.limit >= 0:
		spec.Limit = t.limit
	case t.approx:
		spec.Limit = 100 * s.cfg.StreamNodeMaxEntries
		if spec.Limit <= 0 {
			spec.Limit = 100 * 100
		}
	}
	return int(st.Trim(spec))
}

func (s *Server) writeStreamID(c *client, id keyspace.StreamID) {
	var tmp [48]byte
	c.w.Bulk(id.AppendTo(tmp[:0]))
}

func (s *Server) writeStreamEntry(c *client, e keyspace.StreamEntry) {
	c.w.Array(2)
	s.writeStreamID(c, e.ID)
	c.w.Array(len(e.Fields))
	for _, f := range e.Fields {
		c.w.Bulk(f)
	}
}

// XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] *|id field value [...]
func cmdXAdd(s *Server, c *client, argv [][]byte) {
	trim := trimSpec{limit: -1}
	noMkStream := false
	i := 2
	for ; i < len(argv); i++ {
		if resp.EqualFold(argv[i], "nomkstream") {
			noMkStream = true
			continue
		}
		next := s.parseTrimArg(c, argv, i, &trim)
		if next < 0 {
			return
		}
		if next == i {
			break // the ID
		}
		i = next - 1
	}
	if !s.checkTrim(c, &trim) {
		return
	}
	if fields := len(argv) - i - 1; i >= len(argv) || fields < 2 || fields%2 == 1 {
		s.wrongArgs(c, "xadd")
		return
	}
	autoID := len(argv[i]) == 1 && argv[i][0] == '*'
	var id keyspace.StreamID
	autoSeq := false
	if !autoID {
		var ok bool
		if id, ok = parseStreamID(argv[i], 0, true, &autoSeq); !ok {
			s.addError(c, errInvalidStreamID)
			return
		}
		if !autoSeq && id.IsZero() {
			s.addError(c, "ERR The ID specified in XADD must be greater than 0-0")
			return
		}
	}
	mode := forCreate
	if noMkStream {
		mode = forWrite
	}
	st, ok := s.getStream(c, argv[1], mode)
	if !ok {
		return
	}
	if st == nil {
		c.w.Null()
		return
	}
	last := st.LastID
	switch {
	case autoID:
		if last.Ms == math.MaxUint64 && last.Seq == math.MaxUint64 {
			s.addError(c, errStreamExhausted)
			return
		}
		now := uint64(max(s.nowMs, 0))
		if now > last.Ms {
			id = keyspace.StreamID{Ms: now}
		} else {
			id, _ = last.Next()
		}
	case autoSeq:
		if id.Ms < last.Ms || (id.Ms == last.Ms && last.Seq == math.MaxUint64) {
			s.addError(c, errStreamTopItem)
			return
		}
		if id.Ms == last.Ms {
			id.Seq = last.Seq + 1
		}
	default:
		if !last.Less(id) {
			s.addError(c, errStreamTopItem)
			return
		}
	}
	st.AppendIn(id, argv[i+1:], s.streamNodeLimits())
	s.writeStreamID(c, id)
	trimmed := 0
	if trim.strategy != 0 {
		trimmed = s.trimStream(st, &trim)
	}
	s.wrote(c.db, argv[1], nil, config.NotifyStream, "xadd")
	if trimmed > 0 {
		s.notify(config.NotifyStream, "xtrim", argv[1], c.db)
	}
}

func cmdXLen(s *Server, c *client, argv [][]byte) {
	cardinality(s, c, argv[1], keyspace.TypeStream, keyspace.NewStream)
}

// parseRangeID reads an XRANGE bound: "-", "+", an ID (a missing sequence is missingSeq) or,
// with "(", an exclusive ID.
func (s *Server) parseRangeID(c *client, b []byte, missingSeq uint64, isStart bool) (keyspace.StreamID, bool) {
	if len(b) > 0 && b[0] == '(' {
		id, ok := parseStreamID(b[1:], missingSeq, true, nil)
		if !ok {
			s.addError(c, errInvalidStreamID)
			return id, false
		}
		if isStart {
			if id, ok = id.Next(); !ok {
				s.addError(c, "ERR invalid start ID for the interval")
			}
		} else if id, ok = id.Prev(); !ok {
			s.addError(c, "ERR invalid end ID for the interval")
		}
		return id, ok
	}
	id, ok := parseStreamID(b, missingSeq, false, nil)
	if !ok {
		s.addError(c, errInvalidStreamID)
	}
	return id, ok
}

func xrangeGeneric(s *Server, c *client, argv [][]byte, rev bool) {
	startArg, endArg := argv[2], argv[3]
	if rev {
		startArg, endArg = endArg, startArg
	}
	start, ok := s.parseRangeID(c, startArg, 0, true)
	if !ok {
		return
	}
	end, ok := s.parseRangeID(c, endArg, math.MaxUint64, false)
	if !ok {
		return
	}
	count := int64(-1)
	for i := 4; i < len(argv); i++ {
		if resp.EqualFold(argv[i], "count") && i+1 < len(argv) {
			n, ok := s.intArg(c, argv[i+1])
			if !ok {
				return
			}
			count = max(n, 0)
			i++
			continue
		}
		s.addError(c, errSyntax)
		return
	}
	st, ok := s.getStream(c, argv[1], forRead)
	if !ok {
		return
	}
	if st == nil {
		c.w.EmptyArray()
		return
	}
	if count == 0 {
		c.w.NullArray() // Redis's reply to COUNT 0 or a negative COUNT on an existing stream
		return
	}
	var entries []keyspace.StreamEntry
	st.Range(start, end, rev, func(e keyspace.StreamEntry) bool {
		entries = append(entries, e)
		return count < 0 || int64(len(entries)) < count
	})
	c.w.Array(len(entries))
	for _, e := range entries {
		s.writeStreamEntry(c, e)
	}
}

func cmdXRange(s *Server, c *client, argv [][]byte)    { xrangeGeneric(s, c, argv, false) }
func cmdXRevRange(s *Server, c *client, argv [][]byte) { xrangeGeneric(s, c, argv, true) }

func cmdXDel(s *Server, c *client, argv [][]byte) {
	// As Redis: a missing key deletes nothing and a key of another type is refused before the
	// IDs are read.
	st, ok := s.getStream(c, argv[1], forWrite)
	if !ok {
		return
	}
	if st == nil {
		c.w.Int(0)
		return
	}
	ids, ok := parseIDs(s, c, argv[2:])
	if !ok {
		return
	}
	n := 0
	for _, id := range ids {
		if st.Delete(id) {
			n++
		}
	}
	if n > 0 {
		s.wrote(c.db, argv[1], nil, config.NotifyStream, "xdel")
	}
	c.w.Int(int64(n))
}

// removeFromStream runs remove on key's stream (XDEL, XTRIM) and replies with how many entries
// went; a missing key removes none. A change is a write and announces event.
func (s *Server) removeFromStream(c *client, key []byte, event string, remove func(*keyspace.Stream) int) {
	st, ok := s.getStream(c, key, forWrite)
	if !ok {
		return
	}
	if st == nil {
		c.w.Int(0)
		return
	}
	n := remove(st)
	if n > 0 {
		s.wrote(c.db, key, nil, config.NotifyStream, event)
	}
	c.w.Int(int64(n))
}

// XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count]
func cmdXTrim(s *Server, c *client, argv [][]byte) {
	trim := trimSpec{limit: -1}
	for i := 2; i < len(argv); {
		next := s.parseTrimArg(c, argv, i, &trim)
		if next < 0 {
			return
		}
		if next == i {
			s.addError(c, errSyntax)
			return
		}
		i = next
	}
	if trim.strategy == 0 {
		s.addError(c, "ERR syntax error, XTRIM must be called with a trimming strategy")
		return
	}
	if !s.checkTrim(c, &trim) {
		return
	}
	s.removeFromStream(c, argv[1], "xtrim", func(st *keyspace.Stream) int { return s.trimStream(st, &trim) })
}

// XREAD [COUNT count] [BLOCK milliseconds] STREAMS key [key ...] id [id ...]
func cmdXRead(s *Server, c *client, argv [][]byte) {
	a, ok := s.parseXReadArgs(c, argv, false)
	if !ok {
		return
	}
	db := s.dbs[c.db]
	after := make([]keyspace.StreamID, len(a.keys))
	for i, k := range a.keys {
		var st *keyspace.Stream
		if r, ok := s.lookupLive(db, c.db, k); ok {
			if db.Type(r) != keyspace.TypeStream {
				s.wrongType(c)
				return
			}
			st = db.Obj(r).(*keyspace.Stream)
		}
		switch id := a.ids[i]; {
		case len(id) == 1 && id[0] == '$':
			if st != nil {
				after[i] = st.LastID
			}
		case len(id) == 1 && id[0] == '>':
			s.addError(c, "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.")
			return
		default:
			parsed, ok := parseStreamID(id, 0, true, nil)
			if !ok {
				s.addError(c, errInvalidStreamID)
				return
			}
			after[i] = parsed
		}
	}
	if res := s.streamsAfter(c, a.keys, after, a.count); len(res) > 0 {
		s.writeStreamReplies(c, res)
		return
	}
	if !a.block || c.flags&flagExecuting != 0 {
		c.w.NullArray()
		return
	}
	// Run again with concrete IDs, so "$" keeps meaning "after what was there when I blocked".
	rerun := make([][]byte, 0, len(argv))
	rerun = append(rerun, argv[:a.streamsAt+len(a.keys)]...)
	for _, id := range after {
		rerun = append(rerun, id.AppendTo(nil))
	}
	s.block(c, s.builtin["xread"], rerun, a.keys, c.blockDeadline(a.deadline), keyspace.TypeStream)
}

// streamsAfter collects, for each key, the entries after its ID (up to count; 0: all).
func (s *Server) streamsAfter(c *client, keys [][]byte, after []keyspace.StreamID, count int64) []streamReply {
	db := s.dbs[c.db]
	var res []streamReply
	for i, k := range keys {
		r, ok := s.lookupRead(c, k)
		if !ok {
			continue
		}
		st := db.Obj(r).(*keyspace.Stream)
		if !after[i].Less(st.LastID) {
			continue
		}
		start, ok := after[i].Next()
		if !ok {
			continue
		}
		var entries []keyspace.StreamEntry
		st.Range(start, keyspace.MaxStreamID, false, func(e keyspace.StreamEntry) bool {
			entries = append(entries, e)
			return count == 0 || int64(len(entries)) < count
		})
		if len(entries) > 0 {
			res = append(res, streamReply{key: k, entries: entries})
		}
	}
	return res
}

// XINFO STREAM key [FULL [COUNT count]], XINFO GROUPS, XINFO CONSUMERS and XINFO HELP.
func cmdXInfo(s *Server, c *client, argv [][]byte) {
	if resp.EqualFold(argv[1], "help") && len(argv) == 2 {
		writeHelp(c, "XINFO", []string{
			"CONSUMERS <key> <groupname>", "    Show consumers of <groupname>.",
			"GROUPS <key>", "    Show the stream consumer groups.",
			"STREAM <key> [FULL [COUNT <count>]", "    Show information about the stream.",
		})
		return
	}
	switch {
	case resp.EqualFold(argv[1], "stream") && len(argv) >= 3:
	case resp.EqualFold(argv[1], "groups") && len(argv) == 3:
	case resp.EqualFold(argv[1], "consumers") && len(argv) == 4:
	default:
		s.subcommandError(c, argv)
		return
	}
	db := s.dbs[c.db]
	r, ok := s.lookupRead(c, argv[2])
	if !ok {
		s.addError(c, errNoKey)
		return
	}
	if db.Type(r) != keyspace.TypeStream {
		s.wrongType(c)
		return
	}
	st := db.Obj(r).(*keyspace.Stream)
	switch {
	case resp.EqualFold(argv[1], "groups"):
		s.xinfoGroups(c, st)
		return
	case resp.EqualFold(argv[1], "consumers"):
		s.xinfoConsumers(c, argv[2], st, argv[3])
		return
	}
	full, count := false, int64(0)
	if len(argv) > 3 {
		if (len(argv) != 4 && len(argv) != 6) || !resp.EqualFold(argv[3], "full") || (len(argv) == 6 && !resp.EqualFold(argv[4], "count")) {
			s.addError(c, "ERR unknown subcommand or wrong number of arguments for '"+truncate(string(argv[1]), 128)+"'. Try XINFO HELP.")
			return
		}
		full, count = true, 10
		if len(argv) == 6 {
			if count, ok = s.intArg(c, argv[5]); !ok {
				return
			}
			if count < 0 {
				count = 10
			}
		}
	}
	if full {
		s.xinfoStreamFull(c, st, count)
		return
	}
	first, hasFirst := st.First()
	last, hasLast := st.Last()
	// The nodes and the radix tree are those Redis would have (stream_nodes.go).
	c.w.Map(10)
	s.writeStreamFigures(c, st, first.ID)
	c.w.BulkString("groups")
	c.w.Int(int64(len(st.Groups)))
	c.w.BulkString("first-entry")
	if hasFirst {
		s.writeStreamEntry(c, first)
	} else {
		c.w.Null()
	}
	c.w.BulkString("last-entry")
	if hasLast {
		s.writeStreamEntry(c, last)
	} else {
		c.w.Null()
	}
}

// XSETID key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id] sets the
// stream's bookkeeping, with Redis 7.0.15's checks in its order: the arguments first, then the
// key, then the ID against the newest live entry (not against the stream's own max deleted ID,
// which 7.0 does not check).
func cmdXSetID(s *Server, c *client, argv [][]byte) {
	id, ok := parseStreamID(argv[2], 0, true, nil)
	if !ok {
		s.addError(c, errInvalidStreamID)
		return
	}
	entriesAdded := int64(-1)
	var maxDeleted keyspace.StreamID
	for i := 3; i < len(argv); i += 2 {
		switch {
		case resp.EqualFold(argv[i], "entriesadded") && i+1 < len(argv):
			n, ok := s.intArg(c, argv[i+1])
			if !ok {
				return
			}
			if n < 0 {
				s.addError(c, "ERR entries_added must be positive")
				return
			}
			entriesAdded = n
		case resp.EqualFold(argv[i], "maxdeletedid") && i+1 < len(argv):
			if maxDeleted, ok = parseStreamID(argv[i+1], 0, true, nil); !ok {
				s.addError(c, errInvalidStreamID)
				return
			}
			if id.Less(maxDeleted) {
				s.addError(c, "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id")
				return
			}
		default:
			s.addError(c, errSyntax)
			return
		}
	}
	st, ok := s.getStream(c, argv[1], forWrite)
	if !ok {
		return
	}
	if st == nil {
		s.addError(c, errNoKey)
		return
	}
	if top, ok := st.Last(); ok {
		if id.Less(top.ID) {
			s.addError(c, "ERR The ID specified in XSETID is smaller than the target stream top item")
			return
		}
		if entriesAdded >= 0 && int64(st.Len()) > entriesAdded {
			s.addError(c, "ERR The entries_added specified in XSETID is smaller than the target stream length")
			return
		}
	}
	st.LastID = id
	if entriesAdded >= 0 {
		st.EntriesAdded = uint64(entriesAdded)
	}
	if !maxDeleted.IsZero() {
		st.MaxDeletedID = maxDeleted
	}
	// Redis counts and announces XSETID (replication's command) but signals no one: WATCH and
	// tracking do not see it.
	s.stats.dirty++
	s.notify(config.NotifyStream, "xsetid", argv[1], c.db)
	c.w.OK()
}

// streamCommands registers this file's commands (see table.go).
var streamCommands = []commandSpec{
	{name: "xadd", h: cmdXAdd},
	{name: "xlen", h: cmdXLen},
	{name: "xrange", h: cmdXRange},
	{name: "xrevrange", h: cmdXRevRange},
	{name: "xdel", h: cmdXDel},
	{name: "xtrim", h: cmdXTrim},
	{name: "xread", h: cmdXRead},
	{name: "xsetid", h: cmdXSetID},
	{name: "xinfo", h: cmdXInfo, own: cmdReadonly}, // a container: Redis flags its subcommands
}
