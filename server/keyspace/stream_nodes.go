package keyspace

import (
	"encoding/binary"
	"math"
	"sort"

	"github.com/iocache/iocache/server/resp"
)

// Redis keeps a stream as a radix tree of listpacks, "nodes": XADD starts a new node when the
// last one holds stream-node-max-entries entries (deleted ones included) or the new entry's
// fields and values would take it to stream-node-max-bytes. XADD and XTRIM with "~" then remove
// only whole nodes, so how many entries survive depends on where the nodes begin, and XINFO
// counts them. The entries here live in one slice; the nodes are modelled alongside, with what
// Redis's rules read: each node's live and deleted counts, its last ID, and the size its listpack
// would have in bytes, computed with listpack's encodings (server/rdb/listpack.go writes them).

// streamNode is one modelled node.
type streamNode struct {
	master, last  StreamID // the IDs of its first and last entries, deleted or not
	masterFields  [][]byte // the field names of its first entry
	live, deleted int64
	fixedBytes    int64 // the listpack without its live and deleted counters
}

const (
	// streamMaxNodeBytes is what stream-node-max-bytes 0 (or more) means: 1 GB, Redis's
	// STREAM_LISTPACK_MAX_SIZE.
	streamMaxNodeBytes = 1 << 30
	// lpFixedBytes is a listpack's header and end byte.
	lpFixedBytes = 6 + 1
)

// bytes is the node's listpack size.
func (n *streamNode) bytes() int64 {
	return n.fixedBytes + lpIntSize(n.live) + lpIntSize(n.deleted)
}

// NodeLimits are stream-node-max-bytes and stream-node-max-entries.
type NodeLimits struct{ MaxBytes, MaxEntries int64 }

// DefaultNodeLimits are Redis's defaults, used where no configuration applies (loading).
var DefaultNodeLimits = NodeLimits{MaxBytes: 4096, MaxEntries: 100}

// Nodes is the number of nodes Redis would hold the stream in (XINFO's radix-tree-keys).
func (s *Stream) Nodes() int { return len(s.nodes) }

// RadixNodes is the number of nodes of the radix tree Redis would index the nodes with, by their
// first IDs as 16 big-endian bytes (XINFO's radix-tree-nodes): a compressed node for each run
// without branches, a node for each branch, a leaf for each key, and the root.
func (s *Stream) RadixNodes() int {
	keys := make([][16]byte, len(s.nodes))
	for i, n := range s.nodes {
		binary.BigEndian.PutUint64(keys[i][:8], n.master.Ms)
		binary.BigEndian.PutUint64(keys[i][8:], n.master.Seq)
	}
	return radixNodes(keys, 0)
}

// radixNodes counts the nodes below (and including) the one where the sorted, distinct keys
// share their first depth bytes.
func radixNodes(keys [][16]byte, depth int) int {
	if len(keys) == 0 || depth == 16 {
		return 1 // the root of an empty tree, or a leaf
	}
	first, last := keys[0], keys[len(keys)-1]
	if first[depth] == last[depth] {
		common := depth
		for common < 16 && first[common] == last[common] {
			common++
		}
		return 1 + radixNodes(keys, common) // a compressed node
	}
	n := 1 // a branch node, then one subtree per distinct byte
	for i := 0; i < len(keys); {
		j := i
		for j < len(keys) && keys[j][depth] == keys[i][depth] {
			j++
		}
		n += radixNodes(keys[i:j], depth+1)
		i = j
	}
	return n
}

// placeInNode records an appended entry in the node model.
func (s *Stream) placeInNode(id StreamID, fields [][]byte, lim NodeLimits) {
	var tail *streamNode
	if len(s.nodes) > 0 {
		tail = &s.nodes[len(s.nodes)-1]
		var total int64
		for _, f := range fields {
			total += int64(len(f))
		}
		maxBytes := lim.MaxBytes
		if maxBytes <= 0 || maxBytes > streamMaxNodeBytes {
			maxBytes = streamMaxNodeBytes
		}
		if tail.bytes()+total >= maxBytes || (lim.MaxEntries > 0 && tail.live+tail.deleted >= lim.MaxEntries) {
			tail = nil
		}
	}
	same := true
	if tail == nil {
		n := streamNode{master: id}
		n.fixedBytes = lpFixedBytes + lpIntSize(int64(len(fields)/2)) + lpIntSize(0)
		for i := 0; i < len(fields); i += 2 {
			name := append([]byte(nil), fields[i]...)
			n.masterFields = append(n.masterFields, name)
			n.fixedBytes += lpStringSize(name)
		}
		s.nodes = append(s.nodes, n)
		tail = &s.nodes[len(s.nodes)-1]
	} else {
		same = len(fields)/2 == len(tail.masterFields)
		for i := 0; same && i < len(fields); i += 2 {
			same = string(fields[i]) == string(tail.masterFields[i/2])
		}
	}
	numFields := int64(len(fields) / 2)
	flags, elements := int64(2), numFields+3 // STREAM_ITEM_FLAG_SAMEFIELDS; flags, ms and seq deltas
	size := lpIntSize(int64(id.Ms-tail.master.Ms)) + lpIntSize(int64(id.Seq-tail.master.Seq))
	if !same {
		flags, elements = 0, elements+numFields+1
		size += lpIntSize(numFields)
	}
	for i := 0; i < len(fields); i += 2 {
		if !same {
			size += lpStringSize(fields[i])
		}
		size += lpStringSize(fields[i+1])
	}
	tail.fixedBytes += size + lpIntSize(flags) + lpIntSize(elements)
	tail.live++
	tail.last = id
}

// nodeOf is the index of the node that holds id.
func (s *Stream) nodeOf(id StreamID) int {
	return sort.Search(len(s.nodes), func(i int) bool { return !s.nodes[i].last.Less(id) })
}

// deleteFromNode records an XDEL: Redis drops a node when its last live entry goes.
func (s *Stream) deleteFromNode(id StreamID) {
	i := s.nodeOf(id)
	if i == len(s.nodes) {
		return
	}
	n := &s.nodes[i]
	if n.live <= 1 {
		s.nodes = append(s.nodes[:i], s.nodes[i+1:]...)
		return
	}
	n.live--
	n.deleted++
}

// TrimSpec is XADD's and XTRIM's trimming: to at most MaxLen entries, or (ByMinID) to entries
// from MinID on; Approx ("~") removes whole nodes only; Limit, when not 0, caps the entries
// removed (Redis's default for "~" is 100 nodes' worth).
type TrimSpec struct {
	MaxLen          int64
	MinID           StreamID
	ByMinID, Approx bool
	Limit           int64
}

// Trim trims as Redis's streamTrim does: whole nodes from the oldest while they may all go (and
// Limit allows), then, unless Approx, entries of the next node one by one. It returns how many
// entries it removed.
func (s *Stream) Trim(t TrimSpec) int64 {
	var removed int64
	for len(s.nodes) > 0 {
		if !t.ByMinID && int64(s.Len()) <= t.MaxLen {
			break
		}
		n := &s.nodes[0]
		if t.Limit > 0 && removed+n.live > t.Limit {
			break
		}
		var whole bool
		if t.ByMinID {
			whole = n.last.Less(t.MinID)
		} else {
			whole = int64(s.Len())-n.live >= t.MaxLen
		}
		if whole {
			last := n.last
			removed += int64(s.trimEntries(func(e StreamEntry) bool { return !last.Less(e.ID) }))
			s.nodes = s.nodes[1:]
			continue
		}
		if t.Approx {
			break
		}
		var gone int
		if t.ByMinID {
			gone = s.trimEntries(func(e StreamEntry) bool { return e.ID.Less(t.MinID) })
		} else {
			excess := int64(s.Len()) - t.MaxLen
			gone = s.trimEntries(func(StreamEntry) bool { excess--; return excess >= 0 })
		}
		n.live -= int64(gone)
		n.deleted += int64(gone)
		removed += int64(gone)
		break
	}
	if len(s.nodes) == 0 && cap(s.nodes) > 0 {
		s.nodes = nil
	}
	return removed
}

// trimEntries removes live entries from the front while remove says so and returns how many.
// Trimming, unlike XDEL, leaves MaxDeletedID alone, as in Redis 7.0.
func (s *Stream) trimEntries(remove func(StreamEntry) bool) int {
	removed := 0
	for s.head < len(s.entries) {
		e := s.entries[s.head]
		if e.Fields != nil {
			if !remove(e) {
				break
			}
			s.bytes -= fieldBytes(e.Fields)
			removed++
		} else {
			s.tombstones--
		}
		s.entries[s.head] = StreamEntry{}
		s.head++
	}
	s.dropLeadingTombstones()
	if s.head > 1024 && s.head > len(s.entries)/2 {
		s.compact()
	}
	return removed
}

// lpIntSize is the bytes an integer takes in a listpack, back-length included.
func lpIntSize(v int64) int64 {
	switch {
	case v >= 0 && v <= 127:
		return 2
	case v >= -4096 && v <= 4095:
		return 3
	case v >= math.MinInt16 && v <= math.MaxInt16:
		return 4
	case v >= -1<<23 && v < 1<<23:
		return 5
	case v >= math.MinInt32 && v <= math.MaxInt32:
		return 6
	}
	return 10
}

// lpStringSize is the bytes a string takes in a listpack, back-length included: as an integer
// when it is a canonical one.
func lpStringSize(b []byte) int64 {
	if v, ok := resp.ParseInt(b); ok {
		return lpIntSize(v)
	}
	n := int64(len(b))
	switch {
	case n < 64:
		n++
	case n < 4096:
		n += 2
	default:
		n += 5
	}
	return n + lpBacklenSize(n)
}

// lpBacklenSize is the size of an element's back-length, with listpack's thresholds.
func lpBacklenSize(l int64) int64 {
	switch {
	case l <= 127:
		return 1
	case l < 16383:
		return 2
	case l < 2097151:
		return 3
	case l < 268435455:
		return 4
	}
	return 5
}
