package keyspace

import (
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// contents lists a collection's elements as strings, in the collection's own order for lists
// and sorted otherwise.
func contents(obj any) []string {
	var out []string
	switch o := obj.(type) {
	case *Hash:
		o.Each(func(f, v []byte) bool { out = append(out, string(f)+"="+string(v)); return true })
	case *Set:
		o.Each(func(m []byte) bool { out = append(out, string(m)); return true })
	case *ZSet:
		o.Each(func(e Entry) bool { out = append(out, fmt.Sprint(string(e.Member), ":", e.Score)); return true })
	case *List:
		o.Each(func(v []byte) bool { out = append(out, string(v)); return true })
		return out
	}
	slices.Sort(out)
	return out
}

// modelKey is what the test expects under a key.
type modelKey struct {
	t     Type
	elems map[string]string // member → value (hash value, zset score); lists use list
	list  []string
	ttl   bool
}

func (m *modelKey) want() []string {
	if m.t == TypeList {
		return slices.Clone(m.list)
	}
	var out []string
	for k, v := range m.elems {
		switch m.t {
		case TypeHash:
			out = append(out, k+"="+v)
		case TypeSet:
			out = append(out, k)
		case TypeZSet:
			f, _ := strconv.ParseFloat(v, 64)
			out = append(out, fmt.Sprint(k, ":", f))
		}
	}
	slices.Sort(out)
	return out
}

func (m *modelKey) size() int {
	if m.t == TypeList {
		return len(m.list)
	}
	return len(m.elems)
}

// TestInlineCollectionsAgainstModel drives collections through the DB the way commands do
// (create and fill, read, write, expire, rename, overwrite, delete, settle after each command)
// with sizes on both sides of the compact thresholds and of inlineMax, and checks every key
// against a model after every command: a view that outlives its command, a write-back to the
// wrong record or a lost conversion shows up as a difference.
func TestInlineCollectionsAgainstModel(t *testing.T) {
	db := NewDB(maphash.MakeSeed())
	rng := rand.New(rand.NewPCG(1, 2))
	model := map[string]*modelKey{}
	types := []Type{TypeHash, TypeSet, TypeZSet, TypeList}
	elem := func(t Type) string {
		switch {
		case t == TypeSet && rng.IntN(3) > 0:
			return strconv.Itoa(rng.IntN(400) - 200) // mostly integers: intsets
		case rng.IntN(50) == 0:
			return fmt.Sprintf("long-%0100d", rng.IntN(1000)) // past the compact value limits
		}
		return fmt.Sprint("e", rng.IntN(300))
	}
	add := func(obj any, m *modelKey) {
		e := elem(m.t)
		switch o := obj.(type) {
		case *Hash:
			v := fmt.Sprint("v", rng.IntN(1000))
			o.ConvertForLengths([][]byte{[]byte(e), []byte(v)})
			o.Set([]byte(e), []byte(v))
			m.elems[e] = v
		case *Set:
			o.Add([]byte(e))
			m.elems[e] = ""
		case *ZSet:
			sc := float64(rng.IntN(50))
			o.Add([]byte(e), sc)
			m.elems[e] = strconv.FormatFloat(sc, 'f', -1, 64)
		case *List:
			switch rng.IntN(3) {
			case 0:
				o.PushFront([]byte(e))
				m.list = append([]string{e}, m.list...)
			case 1: // LPUSH/RPUSH of several
				vals := [][]byte{[]byte(e), []byte(e + "b"), []byte(e + "c")}
				front := rng.IntN(2) == 0
				o.PushAll(vals, front)
				for _, v := range vals {
					if front {
						m.list = append([]string{string(v)}, m.list...)
					} else {
						m.list = append(m.list, string(v))
					}
				}
			default:
				o.PushBack([]byte(e))
				m.list = append(m.list, e)
			}
		}
	}
	remove := func(obj any, m *modelKey) {
		switch o := obj.(type) {
		case *List:
			if rng.IntN(2) == 0 {
				o.PopFront()
				m.list = m.list[1:]
			} else {
				o.PopBack()
				m.list = m.list[:len(m.list)-1]
			}
			return
		}
		var victim string
		for k := range m.elems {
			victim = k
			break
		}
		switch o := obj.(type) {
		case *Hash:
			o.Delete([]byte(victim))
		case *Set:
			o.Remove([]byte(victim))
		case *ZSet:
			o.Remove([]byte(victim))
		}
		delete(m.elems, victim)
	}
	check := func(step int) {
		t.Helper()
		if db.Len() != len(model) {
			t.Fatalf("step %d: %d keys, want %d", step, db.Len(), len(model))
		}
		for k, m := range model {
			r, ok := db.Find([]byte(k))
			if !ok {
				t.Fatalf("step %d: key %s missing", step, k)
			}
			if db.Type(r) != m.t {
				t.Fatalf("step %d: key %s is %v, want %v", step, k, db.Type(r), m.t)
			}
			if _, has := db.ExpireAt(r); has != m.ttl {
				t.Fatalf("step %d: key %s TTL %v, want %v", step, k, has, m.ttl)
			}
			obj := db.Obj(r)
			if got, want := contents(obj), m.want(); !slices.Equal(got, want) {
				t.Fatalf("step %d: key %s holds %v, want %v", step, k, got, want)
			}
			if l, ok := obj.(*List); ok {
				if caps := l.caps; func() int { l.sumCaps(); return l.caps }() != caps {
					t.Fatalf("step %d: key %s: the nodes' capacities are %d, the list keeps %d", step, k, l.caps, caps)
				}
			}
			if n := obj.(interface{ Len() int }).Len(); n != m.size() {
				t.Fatalf("step %d: key %s (%v) has Len %d, want %d: %v", step, k, m.t, n, m.size(), m.want())
			}
		}
		db.Settle()
	}
	for step := 0; step < 8000; step++ {
		key := fmt.Sprint("key:", rng.IntN(24))
		m := model[key]
		r, exists := db.Find([]byte(key))
		switch op := rng.IntN(20); {
		case !exists:
			m = &modelKey{t: types[rng.IntN(len(types))], elems: map[string]string{}}
			var obj any
			switch m.t {
			case TypeHash:
				obj = NewHash()
			case TypeSet:
				obj = NewSet()
			case TypeZSet:
				obj = NewZSet()
			case TypeList:
				obj = NewList()
			}
			if rng.IntN(2) == 0 {
				obj = db.Create([]byte(key), m.t, 0) // a write view, as commands create keys
			} else {
				db.CreateObject([]byte(key), m.t, obj, 0)
			}
			for n := 1 + rng.IntN(4); n > 0; n-- {
				add(obj, m)
			}
			if rng.IntN(10) == 0 { // one command that creates many: past every threshold
				for n := 200; n > 0; n-- {
					add(obj, m)
				}
			}
			model[key] = m
		case op < 10:
			before := db.Obj(r) // a read view taken before the write, as some commands do
			_ = contents(before)
			obj := db.ObjForWrite(r)
			for n := 1 + rng.IntN(6); n > 0; n-- {
				if m.size() > 0 && rng.IntN(3) == 0 {
					remove(obj, m)
				} else {
					add(obj, m)
				}
			}
			if got := contents(db.Obj(r)); !slices.Equal(got, m.want()) {
				t.Fatalf("step %d: a read after the write in the same command sees %v, want %v", step, got, m.want())
			}
			if m.size() == 0 {
				db.Delete(r)
				delete(model, key)
			}
		case op < 12:
			if m.ttl {
				db.Persist(r)
			} else {
				db.SetExpire(r, 1<<40)
			}
			m.ttl = !m.ttl
		case op < 14:
			// RENAME: the collection moves to another key, replacing what was there.
			dst := fmt.Sprint("key:", rng.IntN(24))
			if dst == key {
				break
			}
			if d, ok := db.Find([]byte(dst)); ok {
				db.Delete(d)
			}
			obj := db.Detach(r)
			db.SetObject([]byte(dst), m.t, obj, 0)
			m.ttl = false
			delete(model, key)
			model[dst] = m
		case op < 15:
			// A write then a rename in one command (SMOVE-like sequences, RENAME in a script).
			obj := db.ObjForWrite(r)
			add(obj, m)
			dst := key + ":moved"
			if d, ok := db.Find([]byte(dst)); ok {
				db.Delete(d)
				delete(model, dst)
			}
			db.SetObject([]byte(dst), m.t, db.Detach(r), 0)
			m.ttl = false
			delete(model, key)
			model[dst] = m
		case op < 16:
			db.SetString([]byte(key), []byte("a string now"), 0, false, 0)
			db.Delete(mustFind(t, db, key))
			delete(model, key)
		case op < 17:
			db.Delete(r)
			delete(model, key)
		default:
			_ = contents(db.Obj(r))
		}
		check(step)
	}
	inline, heap := 0, 0
	db.Each(func(r Ref) bool {
		if db.rec(r)[0]&flagInline != 0 {
			inline++
		} else {
			heap++
		}
		return true
	})
	if inline == 0 || heap == 0 {
		t.Fatalf("the walk should leave both inline (%d) and object-table (%d) collections", inline, heap)
	}
}

func mustFind(t *testing.T, db *DB, key string) Ref {
	t.Helper()
	r, ok := db.Find([]byte(key))
	if !ok {
		t.Fatalf("key %s missing", key)
	}
	return r
}

// TestInlineWriteAllocatesNothing: a write to a small collection, once the DB's views are warm,
// copies into a pooled buffer and back into the record, without allocating.
func TestInlineWriteAllocatesNothing(t *testing.T) {
	db := NewDB(maphash.MakeSeed())
	h := NewHash()
	for i := 0; i < 10; i++ {
		h.Set([]byte(fmt.Sprint("field:", i)), []byte(fmt.Sprint("value:", i)))
	}
	db.SetObject([]byte("h"), TypeHash, h, 0)
	i := 0
	values := [][]byte{[]byte("1"), []byte("22"), []byte("333")}
	key, field := []byte("h"), []byte("field:3")
	if n := testing.AllocsPerRun(1000, func() {
		r, _ := db.Find(key)
		db.ObjForWrite(r).(*Hash).Set(field, values[i%3])
		i++
		db.Settle()
	}); n > 0.01 {
		t.Fatalf("HSET-like write on an inline hash: %.2f allocations, want 0", n)
	}
	if db.rec(mustFind(t, db, "h"))[0]&flagInline == 0 {
		t.Fatal("a 10-field hash should be stored inline")
	}
}
