package keyspace

import (
	"bytes"
	"hash/maphash"
	"testing"
)

func getString(db *DB, key []byte) ([]byte, bool) {
	r, ok := db.Find(key)
	if !ok {
		return nil, false
	}
	return db.Str(r), true
}

// AdoptString keeps a large value in the buffer it was decoded into (the record is the buffer,
// from the headroom on), with or without a TTL; a small one, or one without the headroom, is
// copied as SetString copies.
func TestAdoptString(t *testing.T) {
	db := NewDB(maphash.MakeSeed())
	key := []byte("big")
	val := bytes.Repeat([]byte("v"), 1<<20)
	head := StringHeadroom(len(key))
	for _, expireAt := range []int64{0, 1 << 50} {
		buf := append(make([]byte, head), val...)
		r := db.AdoptString(key, buf, head, expireAt, 0)
		got, ok := getString(db, key)
		if !ok || !bytes.Equal(got, val) {
			t.Fatalf("expire %d: the adopted value reads back as %d bytes", expireAt, len(got))
		}
		if &got[0] != &buf[head] {
			t.Errorf("expire %d: the value was copied instead of adopted", expireAt)
		}
		if at, _ := db.ExpireAt(r); at != expireAt {
			t.Errorf("expire %d: TTL %d", expireAt, at)
		}
		db.Delete(r)
	}
	for _, c := range []struct {
		name     string
		val      []byte
		headroom int
	}{{"small", []byte("small"), head}, {"no headroom", val, 3}} {
		buf := append(make([]byte, c.headroom), c.val...)
		db.AdoptString(key, buf, c.headroom, 0, 0)
		got, ok := getString(db, key)
		if !ok || !bytes.Equal(got, c.val) || &got[0] == &buf[c.headroom] {
			t.Fatalf("%s: %d bytes, copied %v", c.name, len(got), &got[0] != &buf[c.headroom])
		}
		r, _ := db.Find(key)
		db.Delete(r)
	}
}
