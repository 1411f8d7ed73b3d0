package bench

import "testing"

func TestTemplatesPutKeys(t *testing.T) {
	tp := setTemplate(5)
	b := append([]byte(nil), tp.b...)
	putKey(b[tp.keyOff:], 1234567)
	if want := "*3\r\n$3\r\nSET\r\n$16\r\nkey:000001234567\r\n$5\r\nxxxxx\r\n"; string(b) != want {
		t.Errorf("got %q want %q", b, want)
	}
	g := getTemplate()
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
