package rdb

import (
	"encoding/binary"

	"github.com/iocache/iocache/server/keyspace"
)

// Streams (RDB_TYPE_STREAM_LISTPACKS_2): entries in macro nodes, each a listpack keyed by its
// master ID (16 bytes big endian). A node starts with a master entry (live count, deleted count,
// the master fields, a 0 terminator); each entry then holds flags, the ID as a difference from
// the master ID, its fields unless they equal the master's (flag SAMEFIELDS), its values, and
// the count of its listpack elements. After the nodes come the length, last ID, first ID, largest
// deleted ID, entries added, and the consumer groups with their pending entries and consumers.

const (
	streamFlagDeleted    = 1
	streamFlagSameFields = 2
	streamMaxNodeBytes   = 1 << 30
)

func encodeStreamID(dst []byte, id keyspace.StreamID) []byte {
	dst = binary.BigEndian.AppendUint64(dst, id.Ms)
	return binary.BigEndian.AppendUint64(dst, id.Seq)
}

func decodeStreamID(b []byte) keyspace.StreamID {
	return keyspace.StreamID{Ms: binary.BigEndian.Uint64(b), Seq: binary.BigEndian.Uint64(b[8:])}
}

func (e *valueEncoder) stream(s *keyspace.Stream) {
	w := &e.w
	nodes := 0
	e.streamNodes(s, func(keyspace.StreamID, []byte) { nodes++ })
	w.length(uint64(nodes))
	var id [16]byte
	e.streamNodes(s, func(master keyspace.StreamID, lp []byte) {
		w.string(encodeStreamID(id[:0], master))
		w.string(lp)
	})
	w.length(uint64(s.Len()))
	w.length(s.LastID.Ms)
	w.length(s.LastID.Seq)
	first := s.FirstID()
	w.length(first.Ms)
	w.length(first.Seq)
	w.length(s.MaxDeletedID.Ms)
	w.length(s.MaxDeletedID.Seq)
	w.length(s.EntriesAdded)
	w.length(uint64(len(s.Groups)))
	for _, g := range s.SortedGroups() {
		w.string([]byte(g.Name))
		w.length(g.LastID.Ms)
		w.length(g.LastID.Seq)
		w.length(uint64(g.EntriesRead))
		w.length(uint64(len(g.Pending)))
		for _, pid := range keyspace.SortedIDs(g.Pending) {
			pe := g.Pending[pid]
			w.raw(encodeStreamID(id[:0], pid))
			w.millis(pe.DeliveryTime)
			w.length(uint64(pe.DeliveryCount))
		}
		w.length(uint64(len(g.Consumers)))
		for _, c := range g.SortedConsumers() {
			w.string([]byte(c.Name))
			w.millis(c.SeenTime)
			w.length(uint64(len(c.Pending)))
			for _, pid := range keyspace.SortedIDs(c.Pending) {
				w.raw(encodeStreamID(id[:0], pid))
			}
		}
		w.maybeFlush()
	}
}

// streamNodes splits the stream's live entries into nodes as XADD would fill them (a new node
// when the next entry would reach stream-node-max-bytes or the node holds
// stream-node-max-entries) and calls emit with each node's master ID and listpack.
func (e *valueEncoder) streamNodes(s *keyspace.Stream, emit func(keyspace.StreamID, []byte)) {
	maxBytes := e.opts.StreamNodeMaxBytes
	if maxBytes <= 0 || maxBytes > streamMaxNodeBytes {
		maxBytes = streamMaxNodeBytes
	}
	var master keyspace.StreamEntry
	body := listpack{b: e.streamBody[:0]}
	count, headerBytes := 0, 0
	flush := func() {
		if count == 0 {
			return
		}
		lp := newListpack(e.lp)
		lp.appendInt(int64(count))
		lp.appendInt(0)
		lp.appendInt(int64(len(master.Fields) / 2))
		for i := 0; i < len(master.Fields); i += 2 {
			lp.appendString(master.Fields[i])
		}
		lp.appendInt(0)
		lp.b = append(lp.b, body.b...)
		lp.n += body.n
		e.lp = lp.finish()
		emit(master.ID, e.lp)
	}
	s.Range(keyspace.StreamID{}, keyspace.MaxStreamID, false, func(en keyspace.StreamEntry) bool {
		if count > 0 {
			total := 0
			for _, f := range en.Fields {
				total += len(f)
			}
			full := lpHeaderSize+1+headerBytes+len(body.b)+total >= maxBytes
			if full || (e.opts.StreamNodeMaxEntries > 0 && count >= e.opts.StreamNodeMaxEntries) {
				flush()
				count = 0
			}
		}
		if count == 0 {
			master = en
			body.b, body.n = body.b[:0], 0
			headerBytes = 8
			for i := 0; i < len(en.Fields); i += 2 {
				headerBytes += lpEntrySize(en.Fields[i])
			}
		}
		same := sameFields(en.Fields, master.Fields)
		nf := len(en.Fields) / 2
		flags := int64(0)
		if same {
			flags = streamFlagSameFields
		}
		body.appendInt(flags)
		body.appendInt(int64(en.ID.Ms - master.ID.Ms))
		body.appendInt(int64(en.ID.Seq - master.ID.Seq))
		if !same {
			body.appendInt(int64(nf))
		}
		for i := 0; i < len(en.Fields); i += 2 {
			if !same {
				body.appendString(en.Fields[i])
			}
			body.appendString(en.Fields[i+1])
		}
		elements := nf + 3
		if !same {
			elements += nf + 1
		}
		body.appendInt(int64(elements))
		count++
		return true
	})
	flush()
	e.streamBody = body.b
}

func sameFields(entry, master [][]byte) bool {
	if len(entry) != len(master) {
		return false
	}
	for i := 0; i < len(entry); i += 2 {
		if string(entry[i]) != string(master[i]) {
			return false
		}
	}
	return true
}

// decodeStream reads a stream of type 15 (Redis 5-6) or 19 (Redis 7.0).
func decodeStream(r *reader, t byte) (*keyspace.Stream, error) {
	s := keyspace.NewStream()
	nodes, err := r.count()
	if err != nil {
		return nil, err
	}
	var elems []lpElement
	var fields [][]byte
	var num [][20]byte
	last := keyspace.StreamID{}
	appended := 0
	for i := 0; i < nodes; i++ {
		r.reset()
		key, err := r.string()
		if err != nil {
			return nil, err
		}
		if len(key) != 16 {
			return nil, ErrFormat
		}
		master := decodeStreamID(key)
		blob, err := r.string()
		if err != nil {
			return nil, err
		}
		elems = elems[:0]
		if _, err := parseListpack(blob, func(e lpElement) error { elems = append(elems, e); return nil }); err != nil {
			return nil, err
		}
		if len(elems) == 0 {
			return nil, ErrFormat // Redis never writes an empty node
		}
		if len(num) < len(elems) {
			num = make([][20]byte, len(elems))
		}
		p := 0
		next := func() (int64, bool) {
			if p >= len(elems) {
				return 0, false
			}
			p++
			return elems[p-1].integer()
		}
		bytesAt := func(i int) []byte { return elems[i].bytes(num[i][:0]) }
		live, ok1 := next()
		deleted, ok2 := next()
		nmaster, ok3 := next()
		if !ok1 || !ok2 || !ok3 || nmaster < 0 || p+int(nmaster)+1 > len(elems) {
			return nil, ErrFormat
		}
		masterFields := p
		p += int(nmaster)
		if zero, ok := next(); !ok || zero != 0 {
			return nil, ErrFormat
		}
		var seenLive, seenDeleted int64
		for p < len(elems) {
			start := p
			flags, ok1 := next()
			ms, ok2 := next()
			seq, ok3 := next()
			if !ok1 || !ok2 || !ok3 {
				return nil, ErrFormat
			}
			id := keyspace.StreamID{Ms: master.Ms + uint64(ms), Seq: master.Seq + uint64(seq)}
			nf := nmaster
			same := flags&streamFlagSameFields != 0
			if !same {
				if nf, ok1 = next(); !ok1 || nf < 0 {
					return nil, ErrFormat
				}
			}
			per := 2
			if same {
				per = 1
			}
			if nf > int64(len(elems)) || p+int(nf)*per+1 > len(elems) {
				return nil, ErrFormat
			}
			fields = fields[:0]
			for j := 0; j < int(nf); j++ {
				if same {
					fields = append(fields, bytesAt(masterFields+j), bytesAt(p))
					p++
				} else {
					fields = append(fields, bytesAt(p), bytesAt(p+1))
					p += 2
				}
			}
			if lpCount, ok := next(); !ok || lpCount != int64(p-start-1) {
				return nil, ErrFormat
			}
			if flags&streamFlagDeleted != 0 {
				seenDeleted++
				continue
			}
			if appended > 0 && !last.Less(id) {
				return nil, ErrFormat
			}
			s.Append(id, fields)
			last = id
			appended++
			seenLive++
		}
		if seenLive != live || seenDeleted != deleted {
			return nil, ErrFormat
		}
	}
	r.reset()
	length, err := r.length()
	if err != nil {
		return nil, err
	}
	if length != uint64(s.Len()) {
		return nil, ErrFormat
	}
	var lastID, firstID, maxDeleted keyspace.StreamID
	entriesAdded := length
	ids := []*uint64{&lastID.Ms, &lastID.Seq}
	if t == typeStreamListpacks2 {
		ids = append(ids, &firstID.Ms, &firstID.Seq, &maxDeleted.Ms, &maxDeleted.Seq, &entriesAdded)
	}
	for _, p := range ids {
		if *p, err = r.length(); err != nil {
			return nil, err
		}
	}
	if appended > 0 && lastID.Less(last) {
		return nil, ErrFormat
	}
	s.LastID, s.MaxDeletedID, s.EntriesAdded = lastID, maxDeleted, entriesAdded
	if err := decodeGroups(r, s, t); err != nil {
		return nil, err
	}
	return s, nil
}

func decodeGroups(r *reader, s *keyspace.Stream, t byte) error {
	groups, err := r.count()
	if err != nil {
		return err
	}
	for i := 0; i < groups; i++ {
		r.reset()
		name, err := r.string()
		if err != nil {
			return err
		}
		var gid keyspace.StreamID
		if gid.Ms, err = r.length(); err != nil {
			return err
		}
		if gid.Seq, err = r.length(); err != nil {
			return err
		}
		read := s.EstimateEntriesRead(gid)
		if t == typeStreamListpacks2 {
			n, err := r.length()
			if err != nil {
				return err
			}
			read = int64(n)
			if read < keyspace.InvalidEntriesRead {
				return ErrFormat
			}
		}
		if !s.CreateGroup(string(name), gid, read) {
			return ErrFormat
		}
		g := s.Groups[string(name)]
		pending, err := r.count()
		if err != nil {
			return err
		}
		for j := 0; j < pending; j++ {
			a, err := r.fixed(16)
			if err != nil {
				return err
			}
			id := decodeStreamID(a[:])
			pe := &keyspace.PendingEntry{}
			if pe.DeliveryTime, err = r.millis(); err != nil {
				return err
			}
			n, err := r.length()
			if err != nil {
				return err
			}
			pe.DeliveryCount = int64(n)
			if g.Pending[id] != nil {
				return ErrFormat
			}
			g.Pending[id] = pe
		}
		consumers, err := r.count()
		if err != nil {
			return err
		}
		for j := 0; j < consumers; j++ {
			r.reset()
			cname, err := r.string()
			if err != nil {
				return err
			}
			seen, err := r.millis()
			if err != nil {
				return err
			}
			c, created := g.Consumer(string(cname), seen, true)
			if !created {
				return ErrFormat
			}
			n, err := r.count()
			if err != nil {
				return err
			}
			for k := 0; k < n; k++ {
				a, err := r.fixed(16)
				if err != nil {
					return err
				}
				id := decodeStreamID(a[:])
				pe := g.Pending[id]
				if pe == nil || pe.Consumer != nil {
					return ErrFormat // a consumer's entry must be in the group's PEL, once
				}
				pe.Consumer = c
				c.Pending[id] = pe
			}
		}
		for _, pe := range g.Pending {
			if pe.Consumer == nil {
				return ErrFormat // every pending entry belongs to a consumer
			}
		}
	}
	return nil
}
