package bench

import (
	"bytes"
	"math/bits"
)

// This file says what each test sends. Requests are pre-encoded templates: sending one copies the
// template into the connection's write buffer and overwrites the 12 key digits in place, so the
// steady state allocates nothing and formats nothing but digits.

// keyDigits is the width of the random part of a key, key:NNNNNNNNNNNN, as redis-benchmark's
// __rand_int__ expands it, so both tools touch the same keys.
const keyDigits = 12

// maxKeyspace is the largest keyspace whose keys fit in keyDigits digits.
const maxKeyspace = 1e12

// template is one pre-encoded request. keyOff is where its key's digits start, or -1 (PING, or
// LPUSH's fixed list, which redis-benchmark also pushes to one key).
type template struct {
	name   string
	b      []byte
	keyOff int
}

// testDef is a test: the templates it cycles through, weights[i] of template i in turn (the mixed
// test sends RatioSet SETs, then RatioGet GETs, then again, as memtier interleaves its ratio).
type testDef struct {
	name  string
	label string // as redis-benchmark names it in its output
	build func(o *Options) ([]template, []int)
}

var tests = []testDef{
	{"mixed", "MIXED", func(o *Options) ([]template, []int) {
		return []template{setTemplate(o.KeyPrefix, o.DataSize), getTemplate(o.KeyPrefix)}, []int{o.RatioSet, o.RatioGet}
	}},
	{"get", "GET", func(o *Options) ([]template, []int) { return []template{getTemplate(o.KeyPrefix)}, []int{1} }},
	{"set", "SET", func(o *Options) ([]template, []int) {
		return []template{setTemplate(o.KeyPrefix, o.DataSize)}, []int{1}
	}},
	{"ping", "PING_MBULK", func(o *Options) ([]template, []int) {
		return []template{{name: "ping", b: encodeCommand("PING"), keyOff: -1}}, []int{1}
	}},
	{"incr", "INCR", func(o *Options) ([]template, []int) {
		return []template{keyed("incr", o.KeyPrefix+"counter:", encodeCommand("INCR", o.KeyPrefix+"counter:"+zeroKey()))}, []int{1}
	}},
	{"lpush", "LPUSH", func(o *Options) ([]template, []int) {
		return []template{{name: "lpush", b: encodeCommand("LPUSH", o.KeyPrefix+"mylist", value(o.DataSize)), keyOff: -1}}, []int{1}
	}},
}

var testNames = func() []string {
	n := make([]string, len(tests))
	for i, t := range tests {
		n[i] = t.name
	}
	return n
}()

func testByName(name string) (testDef, bool) {
	for _, t := range tests {
		if t.name == name {
			return t, true
		}
	}
	return testDef{}, false
}

func zeroKey() string { return string(bytes.Repeat([]byte{'0'}, keyDigits)) }

// value is the SET payload: redis-benchmark fills it with 'x'; so does this.
func value(n int) string { return string(bytes.Repeat([]byte{'x'}, n)) }

func getTemplate(prefix string) template {
	return keyed("get", prefix+"key:", encodeCommand("GET", prefix+"key:"+zeroKey()))
}

func setTemplate(prefix string, size int) template {
	return keyed("set", prefix+"key:", encodeCommand("SET", prefix+"key:"+zeroKey(), value(size)))
}

// keyed finds the key's digits in an encoded request: right after the first prefix.
func keyed(name, prefix string, b []byte) template {
	return template{name: name, b: b, keyOff: bytes.Index(b, []byte(prefix)) + len(prefix)}
}

// putKey writes n as keyDigits zero-padded decimal digits into dst[:keyDigits].
func putKey(dst []byte, n uint64) {
	for i := keyDigits - 1; i >= 0; i-- {
		dst[i] = byte('0' + n%10)
		n /= 10
	}
}

// rng is xorshift64*: a few instructions per key, no locking, one per worker goroutine. Key choice
// needs uniformity, not cryptographic quality.
type rng struct{ s uint64 }

func newRNG(seed uint64) rng {
	if seed == 0 {
		seed = 0x9e3779b97f4a7c15
	}
	return rng{s: seed}
}

func (r *rng) next() uint64 {
	r.s ^= r.s >> 12
	r.s ^= r.s << 25
	r.s ^= r.s >> 27
	return r.s * 2685821657736338717
}

// below returns a uniform value in [0, n) by Lemire's multiply-shift (bias under 2^-40 for the
// keyspaces used here), avoiding a division per key.
func (r *rng) below(n uint64) uint64 {
	hi, _ := bits.Mul64(r.next(), n)
	return hi
}
