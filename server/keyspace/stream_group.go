package keyspace

import (
	"slices"
	"sort"
)

// Consumer groups, as in Redis: a group remembers the last ID it delivered and keeps a pending
// entries list (PEL) of what it delivered and nobody acknowledged yet, shared with the consumer
// that holds each entry.

// InvalidEntriesRead marks a group's read counter as unknown (Redis's SCG_INVALID_ENTRIES_READ).
const InvalidEntriesRead = -1

// PendingEntry is one delivered, unacknowledged entry.
type PendingEntry struct {
	Consumer      *Consumer
	DeliveryTime  int64 // unix ms of the last delivery
	DeliveryCount int64
}

// Consumer is one named reader of a group.
type Consumer struct {
	Name     string
	SeenTime int64 // unix ms of its last read or claim
	Pending  map[StreamID]*PendingEntry
}

// Group is a consumer group.
type Group struct {
	Name        string
	LastID      StreamID
	EntriesRead int64
	Pending     map[StreamID]*PendingEntry
	Consumers   map[string]*Consumer
}

// pendingOverhead is what one PEL entry costs in the group's and the consumer's maps.
const pendingOverhead = 2*(16+8+48) + 32

// CreateGroup adds a group; it returns false if one of that name exists.
func (s *Stream) CreateGroup(name string, last StreamID, entriesRead int64) bool {
	if s.Groups == nil {
		s.Groups = map[string]*Group{}
	}
	if _, ok := s.Groups[name]; ok {
		return false
	}
	s.Groups[name] = &Group{Name: name, LastID: last, EntriesRead: entriesRead, Pending: map[StreamID]*PendingEntry{}, Consumers: map[string]*Consumer{}}
	return true
}

// SortedGroups returns the groups by name, the order Redis lists them in.
func (s *Stream) SortedGroups() []*Group {
	out := make([]*Group, 0, len(s.Groups))
	for _, g := range s.Groups {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// SortedConsumers returns the group's consumers by name.
func (g *Group) SortedConsumers() []*Consumer {
	out := make([]*Consumer, 0, len(g.Consumers))
	for _, c := range g.Consumers {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Consumer finds a consumer, creating it when create is set; created reports a new one.
func (g *Group) Consumer(name string, now int64, create bool) (c *Consumer, created bool) {
	if c = g.Consumers[name]; c != nil || !create {
		return c, false
	}
	c = &Consumer{Name: name, SeenTime: now, Pending: map[StreamID]*PendingEntry{}}
	g.Consumers[name] = c
	return c, true
}

// DeleteConsumer removes a consumer and its pending entries; it returns how many it held.
func (g *Group) DeleteConsumer(name string) int {
	c := g.Consumers[name]
	if c == nil {
		return 0
	}
	n := len(c.Pending)
	for id := range c.Pending {
		delete(g.Pending, id)
	}
	delete(g.Consumers, name)
	return n
}

// Deliver records that c was given id as a new entry (XREADGROUP with ">"): one delivery, now.
func (g *Group) Deliver(id StreamID, c *Consumer, now int64) {
	pe := g.Claim(id, c)
	pe.DeliveryTime, pe.DeliveryCount = now, 1
}

// Claim gives id's pending entry to c, creating it (one delivery) when there is none; the caller
// sets its delivery time and count.
func (g *Group) Claim(id StreamID, c *Consumer) *PendingEntry {
	pe := g.Pending[id]
	if pe == nil {
		pe = &PendingEntry{Consumer: c, DeliveryCount: 1}
		g.Pending[id] = pe
		c.Pending[id] = pe
		return pe
	}
	if pe.Consumer != c {
		delete(pe.Consumer.Pending, id)
		pe.Consumer = c
		c.Pending[id] = pe
	}
	return pe
}

// Ack removes id from the PEL and reports whether it was pending.
func (g *Group) Ack(id StreamID) bool {
	pe := g.Pending[id]
	if pe == nil {
		return false
	}
	delete(pe.Consumer.Pending, id)
	delete(g.Pending, id)
	return true
}

// SortedIDs returns a PEL's IDs in order.
func SortedIDs(pel map[StreamID]*PendingEntry) []StreamID {
	ids := make([]StreamID, 0, len(pel))
	for id := range pel {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, CompareIDs)
	return ids
}

// CompareIDs orders IDs for sorting.
func CompareIDs(a, b StreamID) int {
	switch {
	case a.Less(b):
		return -1
	case b.Less(a):
		return 1
	}
	return 0
}

// Lookup finds the live entry with this ID.
func (s *Stream) Lookup(id StreamID) (StreamEntry, bool) {
	i := s.search(id)
	if i == len(s.entries) || s.entries[i].ID != id || s.entries[i].Fields == nil {
		return StreamEntry{}, false
	}
	return s.entries[i], true
}

// FirstID is the first live entry's ID, 0-0 for an empty stream.
func (s *Stream) FirstID() StreamID {
	e, _ := s.First()
	return e.ID
}

// rangeHasTombstones is Redis's streamRangeHasTombstones with an open end.
func (s *Stream) rangeHasTombstones(start StreamID) bool {
	if s.Len() == 0 || s.MaxDeletedID.IsZero() {
		return false
	}
	if s.MaxDeletedID.Less(s.FirstID()) {
		return false
	}
	return !s.MaxDeletedID.Less(start)
}

// EstimateEntriesRead is Redis's streamEstimateDistanceFromFirstEverEntry: how many entries were
// added up to id, or InvalidEntriesRead when deletions make it unknowable.
func (s *Stream) EstimateEntriesRead(id StreamID) int64 {
	added := int64(s.EntriesAdded)
	if added == 0 {
		return 0
	}
	if s.Len() == 0 && !s.LastID.Less(id) {
		return added
	}
	switch CompareIDs(id, s.LastID) {
	case 0:
		return added
	case 1:
		return InvalidEntriesRead
	}
	first := s.FirstID()
	if s.MaxDeletedID.IsZero() || s.MaxDeletedID.Less(first) {
		switch CompareIDs(id, first) {
		case -1:
			return added - int64(s.Len())
		case 0:
			return added - int64(s.Len()) + 1
		}
	}
	return InvalidEntriesRead
}

// Advance moves the group past an entry delivered with ">", keeping its read counter as Redis
// does.
func (s *Stream) Advance(g *Group, id StreamID) {
	if !g.LastID.Less(id) {
		return
	}
	if g.EntriesRead != InvalidEntriesRead && !s.rangeHasTombstones(id) {
		g.EntriesRead++
	} else if s.EntriesAdded > 0 {
		g.EntriesRead = s.EstimateEntriesRead(id)
	}
	g.LastID = id
}

// Lag is how many entries the group has yet to read, as XINFO GROUPS reports it; ok is false
// when it cannot be known.
func (s *Stream) Lag(g *Group) (int64, bool) {
	added := int64(s.EntriesAdded)
	if added == 0 {
		return 0, true
	}
	if g.EntriesRead != InvalidEntriesRead && !s.rangeHasTombstones(g.LastID) {
		return added - g.EntriesRead, true
	}
	if read := s.EstimateEntriesRead(g.LastID); read != InvalidEntriesRead {
		return added - read, true
	}
	return 0, false
}

func (s *Stream) groupBytes() int64 {
	var n int64
	for _, g := range s.Groups {
		n += int64(len(g.Pending))*pendingOverhead + int64(len(g.Consumers))*96 + 128
	}
	return n
}

func (s *Stream) cloneGroups(n *Stream) {
	for name, g := range s.Groups {
		ng := &Group{Name: name, LastID: g.LastID, EntriesRead: g.EntriesRead, Pending: map[StreamID]*PendingEntry{}, Consumers: map[string]*Consumer{}}
		for cname, c := range g.Consumers {
			nc := &Consumer{Name: cname, SeenTime: c.SeenTime, Pending: map[StreamID]*PendingEntry{}}
			for id, pe := range c.Pending {
				npe := &PendingEntry{Consumer: nc, DeliveryTime: pe.DeliveryTime, DeliveryCount: pe.DeliveryCount}
				nc.Pending[id] = npe
				ng.Pending[id] = npe
			}
			ng.Consumers[cname] = nc
		}
		if n.Groups == nil {
			n.Groups = map[string]*Group{}
		}
		n.Groups[name] = ng
	}
}
