package engine

import (
	"crypto/sha1" //nolint:gosec // Redis's DEBUG DIGEST is defined with SHA-1; not used for security.
	"encoding/binary"
	"encoding/hex"
	"strconv"

	"github.com/iocache/iocache/server/aof"
	"github.com/iocache/iocache/server/keyspace"
)

// DEBUG DIGEST and DEBUG DIGEST-VALUE: a fingerprint of the whole dataset, or of single values,
// computed exactly as Redis's computeDatasetDigest and xorObjectDigest (debug.c), so that the
// same data gives the same 40 hex digits on both servers. Tests compare digests before and after
// a reload or a rewrite to prove nothing changed. Unordered collections (sets, hashes, sorted
// sets) XOR their elements' digests so that the order of iteration does not matter; ordered ones
// (lists, streams) mix theirs in order.

// Redis's type numbers (OBJ_STRING...), which go into each value's digest.
var redisTypeNumber = map[keyspace.Type]uint32{
	keyspace.TypeString: 0, keyspace.TypeList: 1, keyspace.TypeSet: 2, keyspace.TypeZSet: 3,
	keyspace.TypeHash: 4, keyspace.TypeStream: 6,
}

// xorDigest XORs SHA1(p) into d (Redis's xorDigest).
func xorDigest(d *[20]byte, p []byte) {
	h := sha1.Sum(p) //nolint:gosec // see the import
	for i := range d {
		d[i] ^= h[i]
	}
}

// mixDigest XORs SHA1(p) into d, then replaces d by its own SHA1 (Redis's mixDigest): unlike
// xorDigest, the result depends on the order of the calls.
func mixDigest(d *[20]byte, p []byte) {
	xorDigest(d, p)
	*d = sha1.Sum(d[:]) //nolint:gosec // see the import
}

// valueDigest mixes one value, its type and whether it expires into d (xorObjectDigest).
func valueDigest(d *[20]byte, db *keyspace.DB, r keyspace.Ref) {
	var aux [4]byte
	binary.BigEndian.PutUint32(aux[:], redisTypeNumber[db.Type(r)])
	mixDigest(d, aux[:])
	switch db.Type(r) {
	case keyspace.TypeString:
		mixDigest(d, db.Str(r))
	case keyspace.TypeList:
		db.Obj(r).(*keyspace.List).Each(func(v []byte) bool { mixDigest(d, v); return true })
	case keyspace.TypeSet:
		db.Obj(r).(*keyspace.Set).Each(func(m []byte) bool { xorDigest(d, m); return true })
	case keyspace.TypeZSet:
		db.Obj(r).(*keyspace.ZSet).Each(func(e keyspace.Entry) bool {
			var ed [20]byte
			mixDigest(&ed, e.Member)
			mixDigest(&ed, aof.FormatScore(e.Score))
			xorDigest(d, ed[:])
			return true
		})
	case keyspace.TypeHash:
		db.Obj(r).(*keyspace.Hash).Each(func(f, v []byte) bool {
			var ed [20]byte
			mixDigest(&ed, f)
			mixDigest(&ed, v)
			xorDigest(d, ed[:])
			return true
		})
	case keyspace.TypeStream:
		db.Obj(r).(*keyspace.Stream).Range(keyspace.StreamID{}, keyspace.MaxStreamID, false, func(e keyspace.StreamEntry) bool {
			id := strconv.AppendUint(nil, e.ID.Ms, 10)
			id = append(id, '.')
			mixDigest(d, strconv.AppendUint(id, e.ID.Seq, 10))
			for _, f := range e.Fields {
				mixDigest(d, f)
			}
			return true
		})
	}
	if _, ok := db.ExpireAt(r); ok {
		xorDigest(d, []byte("!!expire!!"))
	}
}

// datasetDigest is computeDatasetDigest: every key of every database, keys whose time has passed
// but that are not deleted yet included, as Redis walks its dictionaries.
func (s *Server) datasetDigest() [20]byte {
	var final [20]byte
	for i, db := range s.dbs {
		if db.Len() == 0 {
			continue
		}
		var aux [4]byte
		binary.BigEndian.PutUint32(aux[:], uint32(i))
		mixDigest(&final, aux[:])
		db.Each(func(r keyspace.Ref) bool {
			var d [20]byte
			mixDigest(&d, db.Key(r))
			valueDigest(&d, db, r)
			db.ReleaseViews()
			xorDigest(&final, d[:])
			return true
		})
	}
	return final
}

// debugDigest is DEBUG DIGEST.
func (s *Server) debugDigest(c *client) {
	d := s.datasetDigest()
	c.w.Simple(hex.EncodeToString(d[:]))
}

// debugDigestValue is DEBUG DIGEST-VALUE key...: a value's digest without its key name, all
// zeroes for a missing key.
func (s *Server) debugDigestValue(c *client, keys [][]byte) {
	c.w.Array(len(keys))
	db := s.dbs[c.db]
	for _, k := range keys {
		var d [20]byte
		if r, ok := s.lookupLive(db, c.db, k); ok {
			valueDigest(&d, db, r)
		}
		c.w.Simple(hex.EncodeToString(d[:]))
	}
}
