package keyspace

import (
	"math"
	"sort"
	"strconv"
)

// StreamID is a stream entry ID, <milliseconds>-<sequence>, ordered as a pair.
type StreamID struct{ Ms, Seq uint64 }

// MaxStreamID is the largest ID, what "+" means in a range.
var MaxStreamID = StreamID{math.MaxUint64, math.MaxUint64}

// Less orders IDs.
func (a StreamID) Less(b StreamID) bool {
	return a.Ms < b.Ms || (a.Ms == b.Ms && a.Seq < b.Seq)
}

// IsZero reports 0-0.
func (a StreamID) IsZero() bool { return a.Ms == 0 && a.Seq == 0 }

// Next is the smallest ID after a; ok is false for the largest ID.
func (a StreamID) Next() (StreamID, bool) {
	switch {
	case a.Seq < math.MaxUint64:
		return StreamID{a.Ms, a.Seq + 1}, true
	case a.Ms < math.MaxUint64:
		return StreamID{a.Ms + 1, 0}, true
	}
	return a, false
}

// Prev is the largest ID before a; ok is false for 0-0.
func (a StreamID) Prev() (StreamID, bool) {
	switch {
	case a.Seq > 0:
		return StreamID{a.Ms, a.Seq - 1}, true
	case a.Ms > 0:
		return StreamID{a.Ms - 1, math.MaxUint64}, true
	}
	return a, false
}

// AppendTo writes the ID as Redis prints it.
func (a StreamID) AppendTo(b []byte) []byte {
	b = strconv.AppendUint(b, a.Ms, 10)
	b = append(b, '-')
	return strconv.AppendUint(b, a.Seq, 10)
}

func (a StreamID) String() string { return string(a.AppendTo(nil)) }

// StreamEntry is one entry: its ID and its field-value pairs, flattened. Fields is nil for an
// entry deleted by XDEL that has not been compacted away yet.
type StreamEntry struct {
	ID     StreamID
	Fields [][]byte
}

// Stream is an append-mostly log of entries in ID order. Entries live in one slice: appends are
// amortised O(1), ranges start with a binary search, trimming from the front advances a head
// index, and XDEL leaves a tombstone that is compacted away once tombstones outnumber live
// entries, so no command moves the whole log.
type Stream struct {
	entries      []StreamEntry // entries[head:] in ID order, tombstones included
	head         int
	tombstones   int
	bytes        int64
	LastID       StreamID // the last ID ever added, even if deleted since
	MaxDeletedID StreamID
	EntriesAdded uint64
	Groups       map[string]*Group // consumer groups by name; nil until the first
	nodes        []streamNode      // Redis's nodes, modelled (stream_nodes.go)
}

// NewStream returns an empty stream.
func NewStream() *Stream { return &Stream{} }

// Len is the number of live entries.
func (s *Stream) Len() int { return len(s.entries) - s.head - s.tombstones }

// Bytes is the memory the stream accounts for.
func (s *Stream) Bytes() int64 {
	return s.bytes + int64(cap(s.entries))*int64(streamEntryOverhead) + int64(cap(s.nodes))*streamNodeOverhead + s.groupBytes()
}

// streamNodeOverhead is a modelled node's own size (stream_nodes.go) and its field names'.
const streamNodeOverhead = 96

// streamEntryOverhead is a StreamEntry's own size: ID, slice header.
const streamEntryOverhead = 16 + 24

func fieldBytes(fields [][]byte) int64 {
	n := int64(24 * cap(fields))
	for _, f := range fields {
		n += int64(len(f))
	}
	return n
}

// Append adds an entry with copies of fields, in nodes of Redis's default sizes; the caller checks
// that id is above LastID.
func (s *Stream) Append(id StreamID, fields [][]byte) { s.AppendIn(id, fields, DefaultNodeLimits) }

// AppendIn is Append with the node limits configured.
func (s *Stream) AppendIn(id StreamID, fields [][]byte, lim NodeLimits) {
	if s.head > 0 && s.head >= len(s.entries)/2 && len(s.entries) == cap(s.entries) {
		s.compact()
	}
	own := make([][]byte, len(fields))
	for i, f := range fields {
		own[i] = append([]byte(nil), f...)
	}
	s.entries = append(s.entries, StreamEntry{ID: id, Fields: own})
	s.placeInNode(id, own, lim)
	s.bytes += fieldBytes(own)
	s.LastID = id
	s.EntriesAdded++
}

// compact drops trimmed slots and tombstones.
func (s *Stream) compact() {
	live := make([]StreamEntry, 0, max(s.Len()*5/4, 8))
	for _, e := range s.entries[s.head:] {
		if e.Fields != nil {
			live = append(live, e)
		}
	}
	s.entries, s.head, s.tombstones = live, 0, 0
}

// search is the position in entries of the first entry with ID >= id.
func (s *Stream) search(id StreamID) int {
	live := s.entries[s.head:]
	return s.head + sort.Search(len(live), func(i int) bool { return !live[i].ID.Less(id) })
}

// First is the oldest live entry.
func (s *Stream) First() (StreamEntry, bool) {
	for _, e := range s.entries[s.head:] {
		if e.Fields != nil {
			return e, true
		}
	}
	return StreamEntry{}, false
}

// Last is the newest live entry.
func (s *Stream) Last() (StreamEntry, bool) {
	for i := len(s.entries) - 1; i >= s.head; i-- {
		if s.entries[i].Fields != nil {
			return s.entries[i], true
		}
	}
	return StreamEntry{}, false
}

// Range calls fn for live entries with start <= ID <= end, oldest first (newest first when rev),
// until fn returns false.
func (s *Stream) Range(start, end StreamID, rev bool, fn func(StreamEntry) bool) {
	if end.Less(start) {
		return
	}
	lo, hi := s.search(start), len(s.entries)
	if next, ok := end.Next(); ok {
		hi = s.search(next)
	}
	if !rev {
		for i := lo; i < hi; i++ {
			if e := s.entries[i]; e.Fields != nil && !fn(e) {
				return
			}
		}
		return
	}
	for i := hi - 1; i >= lo; i-- {
		if e := s.entries[i]; e.Fields != nil && !fn(e) {
			return
		}
	}
}

// Delete removes the entry with this ID and reports whether it was there.
func (s *Stream) Delete(id StreamID) bool {
	i := s.search(id)
	if i == len(s.entries) || s.entries[i].ID != id || s.entries[i].Fields == nil {
		return false
	}
	s.bytes -= fieldBytes(s.entries[i].Fields)
	s.entries[i].Fields = nil
	s.tombstones++
	s.deleteFromNode(id)
	if s.MaxDeletedID.Less(id) {
		s.MaxDeletedID = id
	}
	s.dropLeadingTombstones()
	if s.tombstones > 64 && s.tombstones > s.Len() {
		s.compact()
	}
	return true
}

// dropLeadingTombstones advances head past deleted entries at the front.
func (s *Stream) dropLeadingTombstones() {
	for s.head < len(s.entries) && s.entries[s.head].Fields == nil {
		s.entries[s.head] = StreamEntry{}
		s.head++
		s.tombstones--
	}
	if s.head == len(s.entries) {
		s.entries, s.head = s.entries[:0], 0
	}
}

// Clone returns a deep copy of the stream.
func (s *Stream) Clone() *Stream {
	n := &Stream{LastID: s.LastID, MaxDeletedID: s.MaxDeletedID, EntriesAdded: s.EntriesAdded}
	n.nodes = make([]streamNode, len(s.nodes))
	copy(n.nodes, s.nodes) // master field names are never changed, so they may be shared
	n.entries = make([]StreamEntry, 0, s.Len())
	for _, e := range s.entries[s.head:] {
		if e.Fields == nil {
			continue
		}
		own := make([][]byte, len(e.Fields))
		for i, f := range e.Fields {
			own[i] = append([]byte(nil), f...)
		}
		n.entries = append(n.entries, StreamEntry{ID: e.ID, Fields: own})
		n.bytes += fieldBytes(own)
	}
	s.cloneGroups(n)
	return n
}
