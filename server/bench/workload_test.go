package bench

import (
	"fmt"
	"strings"
	"testing"
)

func TestTemplatesPutKeys(t *testing.T) {
	tp := setTemplate("", 5)
	b := append([]byte(nil), tp.b...)
	putKey(b[tp.keyOff:], 1234567)
	if want := "*3\r\n$3\r\nSET\r\n$16\r\nkey:000001234567\r\n$5\r\nxxxxx\r\n"; string(b) != want {
		t.Errorf("got %q want %q", b, want)
	}
	g := getTemplate("")
	if string(g.b[g.keyOff-4:g.keyOff]) != "key:" {
		t.Errorf("get template key offset wrong: %q", g.b)
	}
	in := encodeCommand("INCR", "counter:000000000000")
	for _, d := range tests {
		if d.name == "incr" {
			tps, _ := d.build(&Options{})
			if string(tps[0].b) != string(in) || string(tps[0].b[tps[0].keyOff-8:tps[0].keyOff]) != "counter:" {
				t.Errorf("incr template %q", tps[0].b)
			}
		}
	}
}

func TestRNGBelowCoversRange(t *testing.T) {
	r := newRNG(1)
	seen := make([]int, 10)
	for i := 0; i < 10000; i++ {
		v := r.below(10)
		if v >= 10 {
			t.Fatalf("below(10) = %d", v)
		}
		seen[v]++
	}
	for i, n := range seen {
		if n < 800 || n > 1200 {
			t.Errorf("value %d drawn %d times of 10000", i, n)
		}
	}
}

// With --key-prefix every key a test names starts with the prefix, and the digits still land in
// the key: the ACL pattern ~PREFIX* of the operator's bench user must cover every request.
func TestKeyPrefixCoversEveryKey(t *testing.T) {
	o := &Options{KeyPrefix: KeyPrefix, DataSize: 3, RatioSet: 1, RatioGet: 1}
	for _, d := range tests {
		tps, _ := d.build(o)
		for _, tp := range tps {
			args := decodeArgs(t, tp.b)
			if len(args) < 2 {
				continue // PING
			}
			if key := args[1]; len(key) < len(KeyPrefix) || key[:len(KeyPrefix)] != KeyPrefix {
				t.Errorf("%s sends key %q, outside %s*", d.name, key, KeyPrefix)
			}
			if tp.keyOff >= 0 {
				b := append([]byte(nil), tp.b...)
				putKey(b[tp.keyOff:], 987654321)
				if key := decodeArgs(t, b)[1]; key[len(key)-keyDigits:] != "000987654321" {
					t.Errorf("%s: digits not in the key: %q", d.name, key)
				}
			}
		}
	}
}

// decodeArgs reads one RESP array of bulk strings.
func decodeArgs(t *testing.T, b []byte) []string {
	t.Helper()
	var args []string
	var n int
	rest := string(b)
	if _, err := fmt.Sscanf(rest, "*%d\r\n", &n); err != nil {
		t.Fatalf("not an array: %q", b)
	}
	rest = rest[strings.Index(rest, "\r\n")+2:]
	for range n {
		var l int
		if _, err := fmt.Sscanf(rest, "$%d\r\n", &l); err != nil {
			t.Fatalf("not a bulk string: %q", rest)
		}
		rest = rest[strings.Index(rest, "\r\n")+2:]
		args = append(args, rest[:l])
		rest = rest[l+2:]
	}
	return args
}
