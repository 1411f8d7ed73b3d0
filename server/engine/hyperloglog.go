package engine

import (
	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/hll"
	"github.com/iocache/iocache/server/keyspace"
)

// PFADD, PFCOUNT and PFMERGE over package hll's HyperLogLog, stored in string keys in Redis's
// format.

const (
	errHLLInvalid = "WRONGTYPE Key is not a valid HyperLogLog string value."
	errHLLCorrupt = "INVALIDOBJ Corrupted HLL object detected"
)

// hllString looks key up and returns its value after Redis's isHLLObjectOrReply checks (a string
// with the HLL header, dense ones at their exact size); v is nil for a missing key and ok is
// false after an error reply.
func (s *Server) hllString(c *client, key []byte, write bool) (v []byte, ok bool) {
	db := s.dbs[c.db]
	lookup := s.lookupRead
	if write {
		lookup = s.lookupWrite
	}
	r, exists := lookup(c, key)
	if !exists {
		return nil, true
	}
	if db.Type(r) != keyspace.TypeString {
		s.wrongType(c)
		return nil, false
	}
	v = db.Str(r)
	if !hll.Valid(v) {
		s.addError(c, errHLLInvalid)
		return nil, false
	}
	return v, true
}

// decodeHLLOrReply decodes a value hllString accepted; only a corrupt sparse one can fail.
func (s *Server) decodeHLLOrReply(c *client, v []byte) (*hll.Sketch, bool) {
	h, valid := hll.Decode(v)
	if !valid {
		s.addError(c, errHLLCorrupt)
	}
	return h, valid
}

// loadHLL reads key's HLL: nil for a missing key; ok is false after an error reply.
func (s *Server) loadHLL(c *client, key []byte, write bool) (h *hll.Sketch, dense bool, ok bool) {
	v, ok := s.hllString(c, key, write)
	if !ok || v == nil {
		return nil, false, ok
	}
	dense = hll.IsDense(v)
	h, ok = s.decodeHLLOrReply(c, v)
	return h, dense, ok
}

// storeHLL writes an HLL back, keeping the key's TTL.
func (s *Server) storeHLL(c *client, key []byte, b []byte) {
	db := s.dbs[c.db]
	if r, ok := db.Find(key); ok {
		_, v := db.ResizeString(r, len(b))
		copy(v, b)
		return
	}
	db.SetString(key, b, 0, false, s.initialClock())
}

func cmdPFAdd(s *Server, c *client, argv [][]byte) {
	v, ok := s.hllString(c, argv[1], true)
	if !ok {
		return
	}
	if v != nil && hll.IsDense(v) {
		// Dense registers are updated where they are stored, as Redis does.
		updated := false
		for _, e := range argv[2:] {
			updated = hll.AddDense(v, e) || updated
		}
		s.pfaddDone(c, argv[1], updated)
		return
	}
	var h *hll.Sketch
	updated := false
	if v == nil {
		h, updated = hll.New(), true
	} else if h, ok = s.decodeHLLOrReply(c, v); !ok {
		return
	}
	for _, e := range argv[2:] {
		updated = h.Add(e) || updated
	}
	if updated {
		h.InvalidateCache()
		s.storeHLL(c, argv[1], h.Encode(false))
	}
	s.pfaddDone(c, argv[1], updated)
}

func (s *Server) pfaddDone(c *client, key []byte, updated bool) {
	if !updated {
		c.w.Int(0)
		return
	}
	s.wrote(c.db, key, nil, config.NotifyString, "pfadd")
	c.w.Int(1)
}

func cmdPFCount(s *Server, c *client, argv [][]byte) {
	if len(argv) > 2 {
		merged := hll.New()
		for _, k := range argv[1:] {
			h, _, ok := s.loadHLL(c, k, false)
			if !ok {
				return
			}
			if h != nil {
				merged.Merge(h)
			}
		}
		c.w.Int(int64(merged.Count()))
		return
	}
	v, ok := s.hllString(c, argv[1], false)
	if !ok {
		return
	}
	if v == nil {
		c.w.Int(0)
		return
	}
	if n, fresh := hll.CachedCount(v); fresh {
		c.w.Int(int64(n))
		return
	}
	h, ok := s.decodeHLLOrReply(c, v)
	if !ok {
		return
	}
	// Redis stores the count in the header even though PFCOUNT reads: the value changes.
	n := h.Count()
	hll.SetCachedCount(v, n)
	s.modified(c.db, argv[1])
	c.w.Int(int64(n))
}

func cmdPFMerge(s *Server, c *client, argv [][]byte) {
	merged := hll.New()
	useDense := false
	for _, k := range argv[1:] {
		h, dense, ok := s.loadHLL(c, k, false)
		if !ok {
			return
		}
		if h == nil {
			continue
		}
		useDense = useDense || dense
		merged.Merge(h)
	}
	dest, destDense, _ := s.loadHLL(c, argv[1], true)
	if dest == nil {
		dest = hll.New()
	}
	dest.Merge(merged)
	s.storeHLL(c, argv[1], dest.Encode(useDense || destDense))
	s.wrote(c.db, argv[1], nil, config.NotifyString, "pfadd")
	c.w.OK()
}

// hyperloglogCommands registers this file's commands (see table.go).
var hyperloglogCommands = []commandSpec{
	{name: "pfadd", h: cmdPFAdd},
	{name: "pfcount", h: cmdPFCount, own: cmdMayReplicate}, // Redis's, hidden by COMMAND INFO: it may rewrite the key's cache
	{name: "pfmerge", h: cmdPFMerge},
	{name: "pfdebug", h: cmdPFDebug},
	{name: "pfselftest", h: cmdPFSelfTest},
}
