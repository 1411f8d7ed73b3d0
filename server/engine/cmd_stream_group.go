package engine

import (
	"fmt"
	"math"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/keyspace"
	"github.com/iocache/iocache/server/resp"
)

// Stream consumer groups: XGROUP, XREADGROUP, XACK, XPENDING, XCLAIM, XAUTOCLAIM and XINFO
// GROUPS|CONSUMERS, with Redis 7.0's replies and error texts.

const errXGroupNoKey = "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically."

// streamAndGroup finds key's stream and its group, replying errNoGroup's text when either is
// missing. noGroup formats the NOGROUP error for (key, group).
func (s *Server) streamAndGroup(c *client, key, group []byte, noGroup string, mode access) (*keyspace.Stream, *keyspace.Group, bool) {
	st, ok := s.getStream(c, key, mode)
	if !ok {
		return nil, nil, false
	}
	var g *keyspace.Group
	if st != nil {
		g = st.Groups[string(group)]
	}
	if g == nil {
		s.addError(c, fmt.Sprintf(noGroup, key, group))
		return nil, nil, false
	}
	return st, g, true
}

const (
	noGroupXPending   = "NOGROUP No such key '%s' or consumer group '%s'"
	noGroupXReadGroup = "NOGROUP No such key '%s' or consumer group '%s' in XREADGROUP with GROUP option"
)

// groupStartID reads XGROUP CREATE/SETID's ID: "$" is the stream's last ID.
func (s *Server) groupStartID(c *client, st *keyspace.Stream, b []byte) (keyspace.StreamID, bool) {
	if len(b) == 1 && b[0] == '$' {
		if st != nil {
			return st.LastID, true
		}
		return keyspace.StreamID{}, true
	}
	id, ok := parseStreamID(b, 0, true, nil)
	if !ok {
		s.addError(c, errInvalidStreamID)
	}
	return id, ok
}

// xgroupOptions reads CREATE's MKSTREAM and ENTRIESREAD, or SETID's ENTRIESREAD, from argv[5:].
func (s *Server) xgroupOptions(c *client, argv [][]byte, allowMkStream bool) (entriesRead int64, mkStream, ok bool) {
	entriesRead = keyspace.InvalidEntriesRead
	for i := 5; i < len(argv); i++ {
		switch {
		case allowMkStream && resp.EqualFold(argv[i], "mkstream"):
			mkStream = true
		case resp.EqualFold(argv[i], "entriesread") && i+1 < len(argv):
			n, ok := s.intArg(c, argv[i+1])
			if !ok {
				return 0, false, false
			}
			if n < 0 && n != keyspace.InvalidEntriesRead {
				s.addError(c, "ERR value for ENTRIESREAD must be positive or -1")
				return 0, false, false
			}
			entriesRead = n
			i++
		default:
			s.addError(c, "ERR unknown subcommand or wrong number of arguments for '"+truncate(string(argv[1]), 128)+"'. Try XGROUP HELP.")
			return 0, false, false
		}
	}
	return entriesRead, mkStream, true
}

// XGROUP CREATE|SETID|DESTROY|CREATECONSUMER|DELCONSUMER|HELP, checked in Redis 7.0's order.
func cmdXGroup(s *Server, c *client, argv [][]byte) {
	sub := argv[1]
	create, setID := resp.EqualFold(sub, "create"), resp.EqualFold(sub, "setid")
	switch {
	case resp.EqualFold(sub, "help") && len(argv) == 2:
		writeHelp(c, "XGROUP", []string{
			"CREATE <key> <groupname> <id|$> [option]", "    Create a new consumer group. Options are:",
			"    * MKSTREAM", "      Create the empty stream if it does not exist.",
			"    * ENTRIESREAD entries_read", "      Set the group's entries_read counter (internal use).",
			"CREATECONSUMER <key> <groupname> <consumer>", "    Create a new consumer in the specified group.",
			"DELCONSUMER <key> <groupname> <consumer>", "    Remove the specified consumer.",
			"DESTROY <key> <groupname>", "    Remove the specified group.",
			"SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]", "    Set the current group ID and entries_read counter.",
		})
		return
	case (create || setID) && len(argv) >= 5:
	case resp.EqualFold(sub, "destroy") && len(argv) == 4:
	case (resp.EqualFold(sub, "createconsumer") || resp.EqualFold(sub, "delconsumer")) && len(argv) == 5:
	default:
		s.subcommandError(c, argv)
		return
	}
	key, group := argv[2], argv[3]
	entriesRead := int64(keyspace.InvalidEntriesRead)
	mkStream := false
	if create || setID {
		var ok bool
		if entriesRead, mkStream, ok = s.xgroupOptions(c, argv, create); !ok {
			return
		}
	}
	db := s.dbs[c.db]
	st, ok := s.getStream(c, key, forWrite)
	if !ok {
		return
	}
	if st == nil && (!create || !mkStream) {
		s.addError(c, errXGroupNoKey)
		return
	}
	var g *keyspace.Group
	if st != nil {
		g = st.Groups[string(group)]
	}
	if g == nil && !create && !resp.EqualFold(sub, "destroy") {
		s.addError(c, fmt.Sprintf("NOGROUP No such consumer group '%s' for key name '%s'", group, key))
		return
	}
	switch {
	case create:
		id, ok := s.groupStartID(c, st, argv[4])
		if !ok {
			return
		}
		if st == nil {
			st = keyspace.NewStream()
			db.CreateObject(key, keyspace.TypeStream, st, s.initialClock())
			s.modified(c.db, key)
		}
		created := st.CreateGroup(string(group), id, entriesRead)
		if !created {
			s.addError(c, "BUSYGROUP Consumer Group name already exists")
			return
		}
		s.notify(config.NotifyStream, "xgroup-create", key, c.db)
		c.w.OK()
	case setID:
		var id keyspace.StreamID
		if len(argv[4]) == 1 && argv[4][0] == '$' {
			id = st.LastID
		} else if id, ok = parseStreamID(argv[4], 0, false, nil); !ok {
			s.addError(c, errInvalidStreamID)
			return
		}
		g.LastID, g.EntriesRead = id, entriesRead
		s.notify(config.NotifyStream, "xgroup-setid", key, c.db)
		c.w.OK()
	case resp.EqualFold(sub, "destroy"):
		if g == nil {
			c.w.Int(0)
			return
		}
		delete(st.Groups, string(group))
		if s.blocking.waiting > 0 {
			s.blocking.signalKey(c.db, key) // its blocked XREADGROUP clients get NOGROUP
		}
		s.notify(config.NotifyStream, "xgroup-destroy", key, c.db)
		c.w.Int(1)
	case resp.EqualFold(sub, "createconsumer"):
		_, created := g.Consumer(string(argv[4]), s.nowMs, true)
		if !created {
			c.w.Int(0)
			return
		}
		s.notify(config.NotifyStream, "xgroup-createconsumer", key, c.db)
		c.w.Int(1)
	case resp.EqualFold(sub, "delconsumer"):
		existed := g.Consumers[string(argv[4])] != nil
		c.w.Int(int64(g.DeleteConsumer(string(argv[4]))))
		if !existed {
			return // Redis neither announces nor counts a consumer that was not there
		}
		s.notify(config.NotifyStream, "xgroup-delconsumer", key, c.db)
	}
	s.stats.dirty++
}

// XREADGROUP GROUP group consumer [COUNT count] [BLOCK ms] [NOACK] STREAMS key [key ...] id [id ...]
func cmdXReadGroup(s *Server, c *client, argv [][]byte) {
	a, ok := s.parseXReadArgs(c, argv, true)
	if !ok {
		return
	}
	type target struct {
		st      *keyspace.Stream
		g       *keyspace.Group
		newOnly bool
		after   keyspace.StreamID
	}
	targets := make([]target, len(a.keys))
	for i, k := range a.keys {
		st, ok := s.getStream(c, k, forReadWrite)
		if !ok {
			return
		}
		var g *keyspace.Group
		if st != nil {
			g = st.Groups[string(a.group)]
		}
		if g == nil {
			s.addError(c, fmt.Sprintf(noGroupXReadGroup, k, a.group))
			return
		}
		t := target{st: st, g: g}
		switch id := a.ids[i]; {
		case len(id) == 1 && id[0] == '>':
			t.newOnly = true
		case len(id) == 1 && id[0] == '$':
			s.addError(c, "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.")
			return
		default:
			parsed, ok := parseStreamID(id, 0, true, nil)
			if !ok {
				s.addError(c, errInvalidStreamID)
				return
			}
			t.after = parsed
		}
		targets[i] = t
	}
	var res []streamReply
	for i, t := range targets {
		f := streamReply{key: a.keys[i]}
		if t.newOnly {
			// Served only when there is something after the group's last ID; only then is the
			// consumer created, as in Redis.
			start, ok := t.g.LastID.Next()
			if !ok {
				continue
			}
			t.st.Range(start, keyspace.MaxStreamID, false, func(e keyspace.StreamEntry) bool {
				f.entries = append(f.entries, e)
				return a.count == 0 || int64(len(f.entries)) < a.count
			})
			if len(f.entries) == 0 {
				continue
			}
			consumer := s.groupConsumer(t.g, a.consumer, a.keys[i], c.db)
			for _, e := range f.entries {
				t.st.Advance(t.g, e.ID)
				if !a.noAck {
					t.g.Deliver(e.ID, consumer, s.nowMs)
				}
			}
			s.stats.dirty++
		} else {
			// History: this consumer's pending entries after the ID, delivered again.
			consumer := s.groupConsumer(t.g, a.consumer, a.keys[i], c.db)
			for _, id := range keyspace.SortedIDs(consumer.Pending) {
				if !t.after.Less(id) {
					continue
				}
				if a.count > 0 && int64(len(f.entries)) >= a.count {
					break
				}
				e, ok := t.st.Lookup(id)
				f.entries = append(f.entries, keyspace.StreamEntry{ID: id, Fields: e.Fields})
				f.missing = append(f.missing, !ok)
				if ok {
					pe := t.g.Pending[id]
					pe.DeliveryTime = s.nowMs
					pe.DeliveryCount++
				}
			}
		}
		res = append(res, f)
	}
	if len(res) > 0 {
		s.writeStreamReplies(c, res)
		return
	}
	if !a.block || c.flags&flagExecuting != 0 {
		c.w.NullArray()
		return
	}
	s.block(c, s.builtin["xreadgroup"], argv, a.keys, c.blockDeadline(a.deadline), keyspace.TypeStream)
}

// parseIDs reads stream IDs (a missing sequence is 0; no "-" or "+"), as XDEL and XACK take them.
func parseIDs(s *Server, c *client, args [][]byte) ([]keyspace.StreamID, bool) {
	ids := make([]keyspace.StreamID, 0, len(args))
	for _, a := range args {
		id, ok := parseStreamID(a, 0, true, nil)
		if !ok {
			s.addError(c, errInvalidStreamID)
			return nil, false
		}
		ids = append(ids, id)
	}
	return ids, true
}

// groupConsumer finds or creates the consumer name of g and marks it seen; a consumer created
// here is announced as xgroup-createconsumer, as Redis's streamCreateConsumer does.
func (s *Server) groupConsumer(g *keyspace.Group, name, key []byte, dbIndex int) *keyspace.Consumer {
	consumer, created := g.Consumer(string(name), s.nowMs, true)
	consumer.SeenTime = s.nowMs
	if created {
		s.stats.dirty++ // a new consumer is a change, which XREADGROUP propagates
		s.notify(config.NotifyStream, "xgroup-createconsumer", key, dbIndex)
	}
	return consumer
}

// XACK key group id [id ...]: a missing key or group acknowledges nothing, before any ID is read.
func cmdXAck(s *Server, c *client, argv [][]byte) {
	st, ok := s.getStream(c, argv[1], forReadWrite)
	if !ok {
		return
	}
	var g *keyspace.Group
	if st != nil {
		g = st.Groups[string(argv[2])]
	}
	if g == nil {
		c.w.Int(0)
		return
	}
	ids, ok := parseIDs(s, c, argv[3:])
	if !ok {
		return
	}
	n := 0
	for _, id := range ids {
		if g.Ack(id) {
			n++
		}
	}
	if n > 0 {
		s.stats.dirty++
	}
	c.w.Int(int64(n))
}

// XPENDING key group [[IDLE min-idle-time] start end count [consumer]]
func cmdXPending(s *Server, c *client, argv [][]byte) {
	extended := len(argv) > 3
	var minIdle int64
	var start, end keyspace.StreamID
	var count int64
	var consumerName []byte
	if extended {
		i := 3
		if resp.EqualFold(argv[i], "idle") {
			if len(argv) < 8 {
				s.addError(c, errSyntax)
				return
			}
			v, ok := s.intArg(c, argv[i+1])
			if !ok {
				return
			}
			minIdle = v
			i += 2
		}
		if len(argv)-i < 3 {
			s.addError(c, errSyntax)
			return
		}
		var ok bool
		if start, ok = s.parseRangeID(c, argv[i], 0, true); !ok {
			return
		}
		if end, ok = s.parseRangeID(c, argv[i+1], math.MaxUint64, false); !ok {
			return
		}
		if count, ok = s.intArg(c, argv[i+2]); !ok {
			return
		}
		count = max(count, 0)
		if len(argv)-i >= 4 {
			consumerName = argv[i+3] // Redis ignores what follows the consumer
		}
	}
	st, g, ok := s.streamAndGroup(c, argv[1], argv[2], noGroupXPending, forReadWrite)
	if !ok {
		return
	}
	_ = st
	if !extended {
		if len(g.Pending) == 0 {
			c.w.Array(4)
			c.w.Int(0)
			c.w.Null()
			c.w.Null()
			c.w.NullArray()
			return
		}
		ids := keyspace.SortedIDs(g.Pending)
		c.w.Array(4)
		c.w.Int(int64(len(ids)))
		s.writeStreamID(c, ids[0])
		s.writeStreamID(c, ids[len(ids)-1])
		var holders []*keyspace.Consumer
		for _, cons := range g.SortedConsumers() {
			if len(cons.Pending) > 0 {
				holders = append(holders, cons)
			}
		}
		c.w.Array(len(holders))
		for _, cons := range holders {
			c.w.Array(2)
			c.w.BulkString(cons.Name)
			c.w.BulkInt(int64(len(cons.Pending)))
		}
		return
	}
	pel := g.Pending
	if consumerName != nil {
		cons := g.Consumers[string(consumerName)]
		if cons == nil {
			c.w.EmptyArray()
			return
		}
		pel = cons.Pending
	}
	type row struct {
		id keyspace.StreamID
		pe *keyspace.PendingEntry
	}
	var rows []row
	for _, id := range keyspace.SortedIDs(pel) {
		if int64(len(rows)) >= count {
			break
		}
		if id.Less(start) || end.Less(id) {
			continue
		}
		pe := pel[id]
		if minIdle > 0 && s.nowMs-pe.DeliveryTime < minIdle {
			continue
		}
		rows = append(rows, row{id, pe})
	}
	c.w.Array(len(rows))
	for _, r := range rows {
		c.w.Array(4)
		s.writeStreamID(c, r.id)
		c.w.BulkString(r.pe.Consumer.Name)
		c.w.Int(max(s.nowMs-r.pe.DeliveryTime, 0))
		c.w.Int(r.pe.DeliveryCount)
	}
}

// XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME unix-ms] [RETRYCOUNT count]
// [FORCE] [JUSTID] [LASTID lastid]
func cmdXClaim(s *Server, c *client, argv [][]byte) {
	// Redis looks the key up (a read: hit or miss, keymiss) before it parses the arguments.
	s.lookupRead(c, argv[1])
	const lookupMode = forWrite // looked up above
	// The key's type and the group come before the arguments, as in Redis.
	st, g, ok := s.streamAndGroup(c, argv[1], argv[2], noGroupXPending, lookupMode)
	if !ok {
		return
	}
	minIdle, ok := parseInt(argv[4])
	if !ok {
		s.addError(c, "ERR Invalid min-idle-time argument for XCLAIM")
		return
	}
	minIdle = max(minIdle, 0)
	var ids []keyspace.StreamID
	i := 5
	for ; i < len(argv); i++ {
		id, ok := parseStreamID(argv[i], 0, true, nil)
		if !ok {
			break
		}
		ids = append(ids, id)
	}
	deliveryTime := int64(-1)
	retryCount := int64(-1)
	force, justID := false, false
	var lastID keyspace.StreamID
	for ; i < len(argv); i++ {
		more := i+1 < len(argv)
		switch {
		case resp.EqualFold(argv[i], "force"):
			force = true
		case resp.EqualFold(argv[i], "justid"):
			justID = true
		case (resp.EqualFold(argv[i], "idle") || resp.EqualFold(argv[i], "time") || resp.EqualFold(argv[i], "retrycount")) && more:
			v, ok := parseInt(argv[i+1])
			opt := upper(string(argv[i]))
			if !ok {
				s.addError(c, "ERR Invalid "+opt+" option argument for XCLAIM")
				return
			}
			switch opt {
			case "IDLE":
				deliveryTime = s.nowMs - v
			case "TIME":
				deliveryTime = v
			default:
				retryCount = v
			}
			i++
		case resp.EqualFold(argv[i], "lastid") && more:
			id, ok := parseStreamID(argv[i+1], 0, true, nil)
			if !ok {
				s.addError(c, errInvalidStreamID)
				return
			}
			lastID = id
			i++
		default:
			s.addError(c, fmt.Sprintf("ERR Unrecognized XCLAIM option '%s'", argv[i]))
			return
		}
	}
	if deliveryTime != -1 && (deliveryTime < 0 || deliveryTime > s.nowMs) {
		deliveryTime = s.nowMs // Redis clamps a future or negative time to now
	}
	if deliveryTime == -1 {
		deliveryTime = s.nowMs
	}
	changed := false // Redis counts a change only for what XCLAIM did: a claim, an ack, LASTID
	if g.LastID.Less(lastID) {
		g.LastID = lastID
		changed = true
	}
	var consumer *keyspace.Consumer // created only when it claims something, as in Redis
	var claimed []keyspace.StreamEntry
	for _, id := range ids {
		e, exists := st.Lookup(id)
		pe := g.Pending[id]
		if !exists {
			if pe != nil {
				g.Ack(id) // deleted since its delivery: it can never be processed
				changed = true
			}
			continue
		}
		if pe == nil && !force {
			continue
		}
		if pe != nil && minIdle > 0 && s.nowMs-pe.DeliveryTime < minIdle {
			continue
		}
		if consumer == nil {
			consumer = s.groupConsumer(g, argv[3], argv[1], c.db)
		}
		pe = g.Claim(id, consumer)
		pe.DeliveryTime = deliveryTime
		if retryCount >= 0 {
			pe.DeliveryCount = retryCount
		} else if !justID {
			pe.DeliveryCount++
		}
		claimed = append(claimed, e)
	}
	if changed || len(claimed) > 0 {
		s.stats.dirty++
	}
	c.w.Array(len(claimed))
	for _, e := range claimed {
		if justID {
			s.writeStreamID(c, e.ID)
		} else {
			s.writeStreamEntry(c, e)
		}
	}
}

// XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]
func cmdXAutoClaim(s *Server, c *client, argv [][]byte) {
	// Redis looks the key up (a read: hit or miss, keymiss) before it parses the arguments.
	s.lookupRead(c, argv[1])
	const lookupMode = forWrite // looked up above
	minIdle, ok := parseInt(argv[4])
	if !ok {
		s.addError(c, "ERR Invalid min-idle-time argument for XAUTOCLAIM")
		return
	}
	minIdle = max(minIdle, 0)
	start, ok := s.parseRangeID(c, argv[5], 0, true)
	if !ok {
		return
	}
	count := int64(100)
	justID := false
	for i := 6; i < len(argv); i++ {
		switch {
		case resp.EqualFold(argv[i], "count") && i+1 < len(argv):
			n, ok := parseInt(argv[i+1])
			if !ok || n < 1 || n > math.MaxInt64/10 {
				s.addError(c, "ERR COUNT must be > 0")
				return
			}
			count = n
			i++
		case resp.EqualFold(argv[i], "justid"):
			justID = true
		default:
			s.addError(c, errSyntax)
			return
		}
	}
	st, g, ok := s.streamAndGroup(c, argv[1], argv[2], noGroupXPending, lookupMode)
	if !ok {
		return
	}
	var consumer *keyspace.Consumer // created on the first claim, as Redis 7.0 does
	var claimed []keyspace.StreamEntry
	var deleted []keyspace.StreamID
	ids := keyspace.SortedIDs(g.Pending)
	i := 0
	for i < len(ids) && ids[i].Less(start) {
		i++
	}
	// Redis looks at no more than 10 x COUNT PEL entries; deleted entries count against COUNT.
	for attempts, room := count*10, count; i < len(ids) && attempts > 0 && room > 0; i++ {
		attempts--
		id := ids[i]
		pe := g.Pending[id]
		e, exists := st.Lookup(id)
		if !exists {
			g.Ack(id)
			deleted = append(deleted, id)
			room--
			continue
		}
		if minIdle > 0 && s.nowMs-pe.DeliveryTime < minIdle {
			continue
		}
		if consumer == nil {
			consumer = s.groupConsumer(g, argv[3], argv[1], c.db)
		}
		g.Claim(id, consumer)
		pe.DeliveryTime = s.nowMs
		if !justID {
			pe.DeliveryCount++
		}
		claimed = append(claimed, e)
		room--
	}
	next := keyspace.StreamID{} // the cursor for the next call; 0-0 when the scan is complete
	if i < len(ids) {
		next = ids[i]
	}
	if len(claimed)+len(deleted) > 0 { // as Redis, which counts each claim and each ack
		s.stats.dirty++
	}
	c.w.Array(3)
	s.writeStreamID(c, next)
	c.w.Array(len(claimed))
	for _, e := range claimed {
		if justID {
			s.writeStreamID(c, e.ID)
		} else {
			s.writeStreamEntry(c, e)
		}
	}
	c.w.Array(len(deleted))
	for _, id := range deleted {
		s.writeStreamID(c, id)
	}
}

// writeGroupProgress writes a group's entries-read and lag fields, nil where Redis cannot tell.
func (s *Server) writeGroupProgress(c *client, st *keyspace.Stream, g *keyspace.Group) {
	c.w.BulkString("entries-read")
	if g.EntriesRead != keyspace.InvalidEntriesRead {
		c.w.Int(g.EntriesRead)
	} else {
		c.w.Null()
	}
	c.w.BulkString("lag")
	if lag, ok := st.Lag(g); ok {
		c.w.Int(lag)
	} else {
		c.w.Null()
	}
}

// writeStreamFigures writes the fields XINFO STREAM and XINFO STREAM FULL open with, from
// length to recorded-first-entry-id.
func (s *Server) writeStreamFigures(c *client, st *keyspace.Stream, firstID keyspace.StreamID) {
	c.w.BulkString("length")
	c.w.Int(int64(st.Len()))
	c.w.BulkString("radix-tree-keys")
	c.w.Int(int64(st.Nodes()))
	c.w.BulkString("radix-tree-nodes")
	c.w.Int(int64(st.RadixNodes()))
	c.w.BulkString("last-generated-id")
	s.writeStreamID(c, st.LastID)
	c.w.BulkString("max-deleted-entry-id")
	s.writeStreamID(c, st.MaxDeletedID)
	c.w.BulkString("entries-added")
	c.w.Int(int64(st.EntriesAdded))
	c.w.BulkString("recorded-first-entry-id")
	s.writeStreamID(c, firstID)
}

// xinfoGroups is XINFO GROUPS key.
func (s *Server) xinfoGroups(c *client, st *keyspace.Stream) {
	groups := st.SortedGroups()
	c.w.Array(len(groups))
	for _, g := range groups {
		c.w.Map(6)
		c.w.BulkString("name")
		c.w.BulkString(g.Name)
		c.w.BulkString("consumers")
		c.w.Int(int64(len(g.Consumers)))
		c.w.BulkString("pending")
		c.w.Int(int64(len(g.Pending)))
		c.w.BulkString("last-delivered-id")
		s.writeStreamID(c, g.LastID)
		s.writeGroupProgress(c, st, g)
	}
}

// xinfoConsumers is XINFO CONSUMERS key group.
func (s *Server) xinfoConsumers(c *client, key []byte, st *keyspace.Stream, group []byte) {
	g := st.Groups[string(group)]
	if g == nil {
		s.addError(c, fmt.Sprintf("NOGROUP No such consumer group '%s' for key name '%s'", group, key))
		return
	}
	consumers := g.SortedConsumers()
	c.w.Array(len(consumers))
	for _, cons := range consumers {
		c.w.Map(3)
		c.w.BulkString("name")
		c.w.BulkString(cons.Name)
		c.w.BulkString("pending")
		c.w.Int(int64(len(cons.Pending)))
		c.w.BulkString("idle")
		c.w.Int(max(s.nowMs-cons.SeenTime, 0))
	}
}

// xinfoStreamFull is XINFO STREAM key FULL [COUNT count]: the stream's figures, its first count
// entries (all for 0), and each group with its first count pending entries and its consumers with
// theirs, as Redis 7.0 lays them out.
func (s *Server) xinfoStreamFull(c *client, st *keyspace.Stream, count int64) {
	first, _ := st.First()
	c.w.Map(9)
	s.writeStreamFigures(c, st, first.ID)
	c.w.BulkString("entries")
	var entries []keyspace.StreamEntry
	st.Range(keyspace.StreamID{}, keyspace.MaxStreamID, false, func(e keyspace.StreamEntry) bool {
		entries = append(entries, e)
		return count == 0 || int64(len(entries)) < count
	})
	c.w.Array(len(entries))
	for _, e := range entries {
		s.writeStreamEntry(c, e)
	}
	limited := func(ids []keyspace.StreamID) []keyspace.StreamID {
		if count > 0 && int64(len(ids)) > count {
			return ids[:count]
		}
		return ids
	}
	c.w.BulkString("groups")
	groups := st.SortedGroups()
	c.w.Array(len(groups))
	for _, g := range groups {
		c.w.Map(7)
		c.w.BulkString("name")
		c.w.BulkString(g.Name)
		c.w.BulkString("last-delivered-id")
		s.writeStreamID(c, g.LastID)
		s.writeGroupProgress(c, st, g)
		c.w.BulkString("pel-count")
		c.w.Int(int64(len(g.Pending)))
		c.w.BulkString("pending")
		ids := limited(keyspace.SortedIDs(g.Pending))
		c.w.Array(len(ids))
		for _, id := range ids {
			p := g.Pending[id]
			c.w.Array(4)
			s.writeStreamID(c, id)
			c.w.BulkString(p.Consumer.Name)
			c.w.Int(p.DeliveryTime)
			c.w.Int(p.DeliveryCount)
		}
		c.w.BulkString("consumers")
		consumers := g.SortedConsumers()
		c.w.Array(len(consumers))
		for _, cons := range consumers {
			c.w.Map(4)
			c.w.BulkString("name")
			c.w.BulkString(cons.Name)
			c.w.BulkString("seen-time")
			c.w.Int(cons.SeenTime)
			c.w.BulkString("pel-count")
			c.w.Int(int64(len(cons.Pending)))
			c.w.BulkString("pending")
			ids := limited(keyspace.SortedIDs(cons.Pending))
			c.w.Array(len(ids))
			for _, id := range ids {
				p := cons.Pending[id]
				c.w.Array(3)
				s.writeStreamID(c, id)
				c.w.Int(p.DeliveryTime)
				c.w.Int(p.DeliveryCount)
			}
		}
	}
}

// streamGroupCommands registers this file's commands (see table.go).
var streamGroupCommands = []commandSpec{
	{name: "xgroup", h: cmdXGroup, own: cmdWrite}, // a container: Redis flags its subcommands
	{name: "xreadgroup", h: cmdXReadGroup},
	{name: "xack", h: cmdXAck},
	{name: "xpending", h: cmdXPending},
	{name: "xclaim", h: cmdXClaim},
	{name: "xautoclaim", h: cmdXAutoClaim},
}
