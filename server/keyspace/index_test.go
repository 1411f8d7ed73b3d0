package keyspace

import (
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"testing"
)

// checkIndex compares the DB with the keys it should hold: each one found with its value, each
// gone key not found, and every position in dense reachable through exactly one index entry.
func checkIndex(t *testing.T, db *DB, want map[string]string, gone map[string]bool) {
	t.Helper()
	if db.Len() != len(want) {
		t.Fatalf("len %d, want %d", db.Len(), len(want))
	}
	for k, v := range want {
		r, ok := db.Find([]byte(k))
		if !ok {
			t.Fatalf("%s missing", k)
		}
		if got := string(db.Str(r)); got != v {
			t.Fatalf("%s = %q, want %q", k, got, v)
		}
	}
	for k := range gone {
		if _, ok := db.Find([]byte(k)); ok {
			t.Fatalf("deleted %s still found", k)
		}
	}
	if n := len(db.index) + len(db.over) + len(db.collide); n != len(want) {
		t.Fatalf("%d index entries (%d, %d over, %d collide) for %d keys", n, len(db.index), len(db.over), len(db.collide), len(want))
	}
}

// churn sets n keys, then deletes, rewrites (changing the record's size, so it moves in the arena),
// adds TTLs to and re-adds keys at random, checking the whole DB along the way.
func churn(t *testing.T, db *DB, n, steps int) {
	rng := rand.New(rand.NewPCG(1, 2))
	want := map[string]string{}
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("key:%d", i)
		want[k] = "v"
		db.SetString([]byte(k), []byte("v"), 0, false, 0)
	}
	checkIndex(t, db, want, nil)
	gone := map[string]bool{}
	for s := 0; s < steps; s++ {
		k := fmt.Sprintf("key:%d", rng.IntN(n+n/10))
		r, ok := db.Find([]byte(k))
		switch op := rng.IntN(4); {
		case !ok:
			v := fmt.Sprintf("new%d", s)
			db.SetString([]byte(k), []byte(v), 0, false, 0)
			want[k] = v
			delete(gone, k)
		case op == 0:
			db.Delete(r)
			delete(want, k)
			gone[k] = true
		case op == 1:
			v := fmt.Sprintf("a longer value than before, step %d", s)
			db.SetString([]byte(k), []byte(v), 0, false, 0)
			want[k] = v
		case op == 2:
			db.SetExpire(r, int64(1e12+s))
		default:
			db.Persist(r)
		}
		if s%(steps/10) == 0 {
			checkIndex(t, db, want, gone)
		}
	}
	checkIndex(t, db, want, gone)
}

// With the full hash, 300,000 keys make a few dozen 32-bit hash collisions (the birthday bound
// gives about n²/2³³ ≈ 10): those keys live in over, and must survive the deletion of the key
// that holds their 32-bit hash in index.
func TestIndexWithRealCollisions(t *testing.T) {
	db := NewDB(maphash.MakeSeed())
	for i := 0; i < 300000; i++ {
		db.SetString([]byte(fmt.Sprintf("key:%d", i)), []byte("v"), 0, false, 0)
	}
	if len(db.over) == 0 {
		t.Fatal("no key in over: no 32-bit collision among 300,000 keys (expected about 10)")
	}
	// Delete the index holders of the colliding hashes: the colliding keys must stay found.
	var colliders []string
	for hv, pos := range db.over {
		colliders = append(colliders, string(db.Key(db.dense[pos])))
		holder := db.dense[db.index[uint32(hv)]]
		db.Delete(holder)
	}
	for _, k := range colliders {
		if _, ok := db.Find([]byte(k)); !ok {
			t.Fatalf("%s lost when the key holding its 32-bit hash was deleted", k)
		}
	}
}

// A hash narrowed to 4 bits sends almost every key to over and collide, so that every path of
// Find, register and unregister runs many times.
func TestIndexWithNarrowHash(t *testing.T) {
	db := NewDB(maphash.MakeSeed())
	db.hashMask = 0x8000_0001_0000_0003
	churn(t, db, 2000, 20000)
	if len(db.collide) == 0 || len(db.over) == 0 {
		t.Fatalf("narrow hash: %d in over, %d in collide", len(db.over), len(db.collide))
	}
}

func TestIndexWithFullHash(t *testing.T) {
	churn(t, NewDB(maphash.MakeSeed()), 20000, 100000)
}
