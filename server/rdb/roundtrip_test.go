package rdb

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/iocache/iocache/server/keyspace"
)

// sampleValues covers every type in its compact and its plain encoding, with integers of every
// width, empty and long strings, and special scores.
func sampleValues() map[string]Value {
	rng := rand.New(rand.NewPCG(1, 2))
	randBytes := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return b
	}
	vals := map[string]Value{}
	for i, s := range []string{"", "0", "-1", "127", "128", "-129", "32767", "40000", "-2147483648", "2147483648", "9223372036854775807", "-9223372036854775808", "01", "-0", "+1", " 1", "hello", strings.Repeat("a", 1000), strings.Repeat("abc", 7), string(randBytes(300)), strings.Repeat("x", 70000)} {
		vals["str"+strconv.Itoa(i)] = Value{Type: keyspace.TypeString, Str: []byte(s)}
	}
	elems := func(n int) [][]byte {
		var out [][]byte
		for i := 0; i < n; i++ {
			switch i % 6 {
			case 0:
				out = append(out, []byte(strconv.Itoa(i)))
			case 1:
				out = append(out, []byte(strconv.FormatInt(-int64(i)*100003, 10)))
			case 2:
				out = append(out, []byte(strconv.FormatInt(int64(i)<<40, 10)))
			case 3:
				out = append(out, []byte(fmt.Sprintf("member-%d", i)))
			case 4:
				out = append(out, randBytes(rng.IntN(100)))
			default:
				out = append(out, bytes.Repeat([]byte{'z'}, 70+i%5000))
			}
		}
		return out
	}
	for _, n := range []int{1, 5, 200, 3000} {
		l := keyspace.NewList()
		h := keyspace.NewHash()
		s := keyspace.NewSet()
		is := keyspace.NewSet()
		z := keyspace.NewZSet()
		short := keyspace.NewHash()
		shortZ := keyspace.NewZSet()
		for i, e := range elems(n) {
			l.PushBack(e)
			h.Set([]byte(fmt.Sprintf("f%d", i)), e)
			s.Add(e)
			is.Add([]byte(strconv.Itoa(i*7919 - 5000)))
			z.Add(e, float64(i)/3)
			short.Set([]byte(strconv.Itoa(i)), []byte(strconv.Itoa(i*i)))
			shortZ.Add([]byte(strconv.Itoa(i)), float64(i*i))
		}
		vals[fmt.Sprintf("list%d", n)] = Value{Type: keyspace.TypeList, Obj: l}
		vals[fmt.Sprintf("hash%d", n)] = Value{Type: keyspace.TypeHash, Obj: h}
		vals[fmt.Sprintf("shorthash%d", n)] = Value{Type: keyspace.TypeHash, Obj: short}
		vals[fmt.Sprintf("set%d", n)] = Value{Type: keyspace.TypeSet, Obj: s}
		vals[fmt.Sprintf("intset%d", n)] = Value{Type: keyspace.TypeSet, Obj: is}
		vals[fmt.Sprintf("zset%d", n)] = Value{Type: keyspace.TypeZSet, Obj: z}
		vals[fmt.Sprintf("shortzset%d", n)] = Value{Type: keyspace.TypeZSet, Obj: shortZ}
	}
	special := keyspace.NewZSet()
	for i, f := range []float64{math.Inf(1), math.Inf(-1), 0.1, -0.5, 1e300, 3, -4e-300, math.Copysign(0, -1)} {
		special.Add([]byte{byte('a' + i)}, f)
	}
	vals["zspecial"] = Value{Type: keyspace.TypeZSet, Obj: special}
	big := keyspace.NewSet()
	for _, v := range []int64{math.MinInt64, math.MaxInt64, 0, -1, 1 << 40} {
		big.Add([]byte(strconv.FormatInt(v, 10)))
	}
	vals["intset64"] = Value{Type: keyspace.TypeSet, Obj: big}

	st := keyspace.NewStream()
	for i := 0; i < 1000; i++ {
		fields := [][]byte{[]byte("name"), []byte(fmt.Sprintf("n%d", i)), []byte("n"), []byte(strconv.Itoa(i))}
		if i%7 == 0 {
			fields = append(fields, []byte("extra"), randBytes(20))
		}
		st.Append(keyspace.StreamID{Ms: 1700000000000 + uint64(i/3), Seq: uint64(i % 3)}, fields)
	}
	st.Delete(keyspace.StreamID{Ms: 1700000000001, Seq: 1})
	st.CreateGroup("g1", keyspace.StreamID{Ms: 1700000000002, Seq: 0}, 7)
	g := st.Groups["g1"]
	c, _ := g.Consumer("alice", 1700000001000, true)
	g.Deliver(keyspace.StreamID{Ms: 1700000000000, Seq: 1}, c, 1700000001000)
	g.Deliver(keyspace.StreamID{Ms: 1700000000002, Seq: 0}, c, 1700000001001)
	g.Consumer("bob", 1700000002000, true)
	st.CreateGroup("g0", keyspace.StreamID{}, keyspace.InvalidEntriesRead)
	vals["stream"] = Value{Type: keyspace.TypeStream, Obj: st}
	empty := keyspace.NewStream()
	empty.Append(keyspace.StreamID{Ms: 5, Seq: 5}, [][]byte{[]byte("a"), []byte("b")})
	empty.Delete(keyspace.StreamID{Ms: 5, Seq: 5})
	empty.CreateGroup("g", keyspace.StreamID{Ms: 5, Seq: 5}, 1)
	vals["emptystream"] = Value{Type: keyspace.TypeStream, Obj: empty}
	return vals
}

func TestDumpRestoreRoundTrip(t *testing.T) {
	for _, compress := range []bool{true, false} {
		o := DefaultOptions()
		o.Compression = compress
		for name, v := range sampleValues() {
			payload := Dump(v, o)
			got, err := Restore(payload)
			if err != nil {
				t.Fatalf("%s (compression %v): %v", name, compress, err)
			}
			if a, b := canonical(v), canonical(got); a != b {
				t.Fatalf("%s (compression %v) changed:\n%.300s\n%.300s", name, compress, a, b)
			}
			payload[len(payload)/2] ^= 1
			if _, err := Restore(payload); err != ErrDumpPayload {
				t.Fatalf("%s: a flipped bit gave %v", name, err)
			}
		}
	}
}

func TestFileRoundTrip(t *testing.T) {
	vals := sampleValues()
	var buf bytes.Buffer
	e := NewEncoder(&buf, DefaultOptions())
	e.Header()
	e.Aux("redis-ver", "7.0.15")
	e.Aux("redis-bits", "64")
	e.SelectDB(3, len(vals), 1)
	for name, v := range vals {
		m := NoMeta
		if name == "str1" {
			m.ExpireAt = 4102444800000
		}
		e.Key([]byte(name), v, m)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	seen := 0
	aux := map[string]string{}
	st, err := Load(bytes.NewReader(buf.Bytes()), Handler{
		Aux: func(k, v []byte) { aux[string(k)] = string(v) },
		Entry: func(en *Entry) error {
			seen++
			want, ok := vals[string(en.Key)]
			if !ok || en.DB != 3 {
				t.Fatalf("unexpected key %q in db %d", en.Key, en.DB)
			}
			if canonical(want) != canonical(en.Value) {
				t.Fatalf("%s changed", en.Key)
			}
			if (string(en.Key) == "str1") != (en.ExpireAt == 4102444800000) {
				t.Fatalf("%s: expire %d", en.Key, en.ExpireAt)
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen != len(vals) || st.Keys != int64(len(vals)) || aux["redis-bits"] != "64" || aux["redis-ver"] != "7.0.15" {
		t.Fatalf("seen %d of %d keys, aux %v", seen, len(vals), aux)
	}
	b := buf.Bytes()
	b[len(b)-20] ^= 0x40
	if _, err := Load(bytes.NewReader(b), Handler{}); err == nil {
		t.Fatal("a corrupted file loaded")
	}
}

func TestLZF(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var table [1 << lzfHashLog]int32
	for i := 0; i < 500; i++ {
		n := rng.IntN(20000) + 1
		in := make([]byte, n)
		alphabet := rng.IntN(255) + 1
		for j := range in {
			in[j] = byte(rng.IntN(alphabet))
		}
		out := lzfCompress(nil, in, n+n/16+64, &table)
		if out == nil {
			t.Fatalf("incompressible within generous limit: %d bytes", n)
		}
		back := make([]byte, n)
		if !lzfDecompress(out, back) || !bytes.Equal(back, in) {
			t.Fatalf("round trip of %d bytes failed", n)
		}
	}
}

func TestListpackIntegers(t *testing.T) {
	for _, v := range []int64{0, 127, 128, -1, -4096, 4095, 4096, -4097, 32767, -32768, 32768, 1<<23 - 1, -1 << 23, 1 << 23, math.MaxInt32, math.MinInt32, math.MaxInt32 + 1, math.MaxInt64, math.MinInt64} {
		lp := newListpack(nil)
		lp.appendInt(v)
		b := lp.finish()
		var got []int64
		if _, err := parseListpack(b, func(e lpElement) error { x, _ := e.integer(); got = append(got, x); return nil }); err != nil || len(got) != 1 || got[0] != v {
			t.Fatalf("%d: got %v, %v", v, got, err)
		}
		if want := lpEntrySize([]byte(strconv.FormatInt(v, 10))); want != len(b)-7 {
			t.Fatalf("%d: size %d, estimated %d", v, len(b)-7, want)
		}
	}
}
