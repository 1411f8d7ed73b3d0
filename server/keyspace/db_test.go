package keyspace

import (
	"fmt"
	"hash/maphash"
	"testing"
)

func TestStringsAndExpiry(t *testing.T) {
	db := NewDB(maphash.MakeSeed())
	for i := 0; i < 10000; i++ {
		db.SetString([]byte(fmt.Sprintf("key:%d", i)), []byte(fmt.Sprintf("v%d", i)), 0, false, 0)
	}
	if db.Len() != 10000 {
		t.Fatalf("len %d", db.Len())
	}
	for i := 0; i < 10000; i += 3 {
		r, ok := db.Find([]byte(fmt.Sprintf("key:%d", i)))
		if !ok {
			t.Fatalf("key:%d missing", i)
		}
		if i%2 == 0 {
			db.Delete(r)
		} else {
			db.SetExpire(r, int64(1000+i))
		}
	}
	for i := 0; i < 10000; i++ {
		r, ok := db.Find([]byte(fmt.Sprintf("key:%d", i)))
		deleted := i%3 == 0 && i%2 == 0
		if ok == deleted {
			t.Fatalf("key:%d found=%v", i, ok)
		}
		if !ok {
			continue
		}
		if got, want := string(db.Str(r)), fmt.Sprintf("v%d", i); got != want {
			t.Fatalf("key:%d = %q, want %q", i, got, want)
		}
		exp, has := db.ExpireAt(r)
		if wantExp := i%3 == 0; has != wantExp || (has && exp != int64(1000+i)) {
			t.Fatalf("key:%d expire %d %v", i, exp, has)
		}
	}
	// Grow a value, keep the TTL.
	r, _ := db.Find([]byte("key:3"))
	_, v := db.ResizeString(r, 1000)
	for i := range v[2:] {
		v[2+i] = 'x'
	}
	r, _ = db.Find([]byte("key:3"))
	if s := db.Str(r); len(s) != 1000 || string(s[:2]) != "v3" {
		t.Fatalf("resized value %q", s[:10])
	}
	if exp, ok := db.ExpireAt(r); !ok || exp != 1003 {
		t.Fatal("TTL lost on resize")
	}
	// SCAN sees every key exactly once without writes.
	seen := map[string]int{}
	cur := uint64(0)
	for {
		cur = db.Scan(cur, 100, func(r Ref) { seen[string(db.Key(r))]++ })
		if cur == 0 {
			break
		}
	}
	if len(seen) != db.Len() {
		t.Fatalf("scan saw %d keys of %d", len(seen), db.Len())
	}
}

func TestScanSurvivesDeletes(t *testing.T) {
	db := NewDB(maphash.MakeSeed())
	for i := 0; i < 1000; i++ {
		db.SetString([]byte(fmt.Sprintf("k%d", i)), []byte("v"), 0, false, 0)
	}
	// Keys k0..k499 are deleted during the scan; every other key must still be seen.
	seen := map[string]bool{}
	cur, deleted := uint64(0), 0
	for {
		cur = db.Scan(cur, 10, func(r Ref) { seen[string(db.Key(r))] = true })
		for j := 0; j < 5 && deleted < 500; j++ {
			r, _ := db.Find([]byte(fmt.Sprintf("k%d", deleted)))
			db.Delete(r)
			deleted++
		}
		if cur == 0 {
			break
		}
	}
	for i := 500; i < 1000; i++ {
		if !seen[fmt.Sprintf("k%d", i)] {
			t.Fatalf("k%d was present for the whole scan but not returned", i)
		}
	}
}

func TestSetInPlaceAllocatesNothing(t *testing.T) {
	db := NewDB(maphash.MakeSeed())
	key, val := []byte("key:000000000042"), []byte("xxx")
	db.SetString(key, val, 0, false, 0)
	allocs := testing.AllocsPerRun(1000, func() {
		db.SetString(key, val, 0, false, 0)
		r, _ := db.Find(key)
		_ = db.Str(r)
	})
	if allocs != 0 {
		t.Fatalf("SET over an existing key allocates %.1f times", allocs)
	}
}

func BenchmarkFindHit(b *testing.B) {
	db := NewDB(maphash.MakeSeed())
	keys := make([][]byte, 1<<16)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("key:%012d", i))
		db.SetString(keys[i], []byte("xxx"), 0, false, 0)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, ok := db.Find(keys[i&(1<<16-1)]); !ok {
			b.Fatal("miss")
		}
	}
}

func TestArenaGivesPagesBack(t *testing.T) {
	db := NewDB(maphash.MakeSeed())
	val := make([]byte, 100)
	for i := 0; i < 100000; i++ {
		db.SetString([]byte(fmt.Sprintf("key:%d", i)), val, 0, false, 0)
	}
	peak := db.arena.reserved
	for i := 0; i < 100000; i++ {
		r, _ := db.Find([]byte(fmt.Sprintf("key:%d", i)))
		db.Delete(r)
	}
	if db.arena.used != 0 {
		t.Fatalf("arena.used = %d after deleting everything", db.arena.used)
	}
	// Only the pages being carved from may stay.
	if db.arena.reserved > int64(len(classSizes))*bigPageSize || db.arena.reserved >= peak/10 {
		t.Fatalf("arena keeps %d of its %d peak bytes after deleting every key", db.arena.reserved, peak)
	}
	// Freed slots are reused: refilling needs no more than the peak.
	for i := 0; i < 100000; i++ {
		db.SetString([]byte(fmt.Sprintf("key:%d", i)), val, 0, false, 0)
	}
	if db.arena.reserved > peak+bigPageSize {
		t.Fatalf("refill reserved %d, peak was %d", db.arena.reserved, peak)
	}
}
