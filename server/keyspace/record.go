package keyspace

import "encoding/binary"

// Record layout in the arena (little endian):
//
//	0      type (low 4 bits) and flags
//	1..3   LRU clock or LFU (minutes, counter), 24 bits, as Redis keeps in robj.lru
//	4..7   position in DB.dense
//	8..11  key length
//	12..15 value length (strings) or object id (collections)
//	16..23 expiry, unix ms         } only when flagExpire is set
//	24..27 position in DB.expiring }
//	28..31 unused                  }
//	then the key bytes, then the value bytes (strings only)
const (
	hdrSize       = 16
	expireHdrSize = 16
	flagExpire    = 0x10
	typeMask      = 0x0f
)

// Type is a key's data type, numbered as in Redis's OBJ_* constants.
type Type uint8

const (
	TypeString Type = 0
	TypeList   Type = 1
	TypeSet    Type = 2
	TypeZSet   Type = 3
	TypeHash   Type = 4
	TypeStream Type = 6
	TypeNone   Type = 15
)

// Name is the type's name as TYPE replies it.
func (t Type) Name() string {
	switch t {
	case TypeString:
		return "string"
	case TypeList:
		return "list"
	case TypeSet:
		return "set"
	case TypeZSet:
		return "zset"
	case TypeHash:
		return "hash"
	case TypeStream:
		return "stream"
	}
	return "none"
}

// rec is a view of one record's bytes; it is only valid until the next arena allocation.
type rec []byte

func (r rec) typ() Type        { return Type(r[0] & typeMask) }
func (r rec) hasExpire() bool  { return r[0]&flagExpire != 0 }
func (r rec) lru() uint32      { return uint32(r[1]) | uint32(r[2])<<8 | uint32(r[3])<<16 }
func (r rec) denseIdx() uint32 { return binary.LittleEndian.Uint32(r[4:]) }
func (r rec) keyLen() int      { return int(binary.LittleEndian.Uint32(r[8:])) }
func (r rec) valLen() int      { return int(binary.LittleEndian.Uint32(r[12:])) }
func (r rec) objID() uint32    { return binary.LittleEndian.Uint32(r[12:]) }
func (r rec) expireAt() int64  { return int64(binary.LittleEndian.Uint64(r[16:])) }
func (r rec) expiringIdx() uint32 {
	return binary.LittleEndian.Uint32(r[24:])
}

func (r rec) setLRU(v uint32) { r[1], r[2], r[3] = byte(v), byte(v>>8), byte(v>>16) }
func (r rec) setDenseIdx(i uint32) {
	binary.LittleEndian.PutUint32(r[4:], i)
}
func (r rec) setExpireAt(ms int64) { binary.LittleEndian.PutUint64(r[16:], uint64(ms)) }
func (r rec) setExpiringIdx(i uint32) {
	binary.LittleEndian.PutUint32(r[24:], i)
}

func (r rec) keyOff() int {
	if r.hasExpire() {
		return hdrSize + expireHdrSize
	}
	return hdrSize
}

func (r rec) key() []byte {
	o := r.keyOff()
	return r[o : o+r.keyLen()]
}

// value is the string value; only for TypeString records.
func (r rec) value() []byte {
	o := r.keyOff() + r.keyLen()
	return r[o : o+r.valLen()]
}

// recordSize is the bytes a record needs.
func recordSize(keyLen, valLen int, expire bool) int {
	n := hdrSize + keyLen + valLen
	if expire {
		n += expireHdrSize
	}
	return n
}

// writeHeader fills a new record's header and key; the caller writes the value.
func writeHeader(r rec, t Type, expire bool, lru uint32, dense uint32, key []byte, valLenOrObj uint32) {
	r[0] = byte(t)
	if expire {
		r[0] |= flagExpire
	}
	r.setLRU(lru)
	r.setDenseIdx(dense)
	binary.LittleEndian.PutUint32(r[8:], uint32(len(key)))
	binary.LittleEndian.PutUint32(r[12:], valLenOrObj)
	copy(r[r.keyOff():], key)
}
