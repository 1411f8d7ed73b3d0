package glob

import (
	"bytes"
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	cases := []struct {
		pattern, str string
		nocase, want bool
	}{
		{"*", "", false, false}, // Redis: the empty string matches only the empty pattern
		{"**", "", false, false},
		{"*", "anything", false, true},
		{"h?llo", "hello", false, true},
		{"h?llo", "hllo", false, false},
		{"h*llo", "heeeello", false, true},
		{"h[ae]llo", "hallo", false, true},
		{"h[ae]llo", "hillo", false, false},
		{"h[^e]llo", "hallo", false, true},
		{"h[^e]llo", "hello", false, false},
		{"h[a-b]llo", "hbllo", false, true},
		{"h[b-a]llo", "hallo", false, true},
		{`h\*llo`, "h*llo", false, true},
		{`h\*llo`, "hello", false, false},
		{"user:*:name", "user:42:name", false, true},
		{"user:*:name", "user:42:age", false, false},
		{"IO-THREADS", "io-threads", true, true},
		{"io-*", "IO-THREADS", true, true},
		{"io-*", "IO-THREADS", false, false},
		{"a*b*c", "abc", false, true},
		{"a*b*c", "acb", false, false},
		{"[abc", "a", false, true},
		{"", "", false, true},
		{"", "a", false, false},
	}
	for _, c := range cases {
		if got := MatchString(c.pattern, c.str, c.nocase); got != c.want {
			t.Errorf("Match(%q, %q, nocase=%v) = %v, want %v", c.pattern, c.str, c.nocase, got, c.want)
		}
	}
}

// redisMatch is a direct, recursive transcription of Redis 7.0's stringmatchlen semantics
// (without its nesting limit), the oracle the iterative matcher is compared with.
func redisMatch(p, s []byte, nocase bool) bool {
	for len(p) > 0 && len(s) > 0 {
		switch p[0] {
		case '*':
			for len(p) > 1 && p[1] == '*' {
				p = p[1:]
			}
			if len(p) == 1 {
				return true
			}
			for ; len(s) > 0; s = s[1:] {
				if redisMatch(p[1:], s, nocase) {
					return true
				}
			}
			return false
		case '?':
			s = s[1:]
		case '[':
			p = p[1:]
			not := len(p) > 0 && p[0] == '^'
			if not {
				p = p[1:]
			}
			matched := false
			for {
				if len(p) >= 2 && p[0] == '\\' {
					p = p[1:]
					matched = matched || p[0] == s[0]
				} else if len(p) == 0 {
					break
				} else if p[0] == ']' {
					break
				} else if len(p) >= 3 && p[1] == '-' {
					lo, hi, c := p[0], p[2], s[0]
					if lo > hi {
						lo, hi = hi, lo
					}
					if nocase {
						lo, hi, c = lower(lo), lower(hi), lower(c)
					}
					matched = matched || (c >= lo && c <= hi)
					p = p[2:]
				} else if nocase {
					matched = matched || lower(p[0]) == lower(s[0])
				} else {
					matched = matched || p[0] == s[0]
				}
				p = p[1:]
			}
			if matched == not {
				return false
			}
			s = s[1:]
			if len(p) == 0 {
				continue // unterminated class: it ended with the pattern
			}
		case '\\':
			if len(p) >= 2 {
				p = p[1:]
			}
			fallthrough
		default:
			if nocase && lower(p[0]) != lower(s[0]) || !nocase && p[0] != s[0] {
				return false
			}
			s = s[1:]
		}
		p = p[1:]
		if len(s) == 0 {
			for len(p) > 0 && p[0] == '*' {
				p = p[1:]
			}
			break
		}
	}
	return len(p) == 0 && len(s) == 0
}

// TestMatchAgreesWithRedisSemantics compares the iterative matcher with the recursive oracle on
// every pattern and string up to a small length over an alphabet that exercises every token.
func TestMatchAgreesWithRedisSemantics(t *testing.T) {
	alphabet := []byte{'a', 'B', '*', '?', '[', ']', '^', '-', '\\'}
	var patterns [][]byte
	var gen func(prefix []byte, n int)
	gen = func(prefix []byte, n int) {
		patterns = append(patterns, append([]byte(nil), prefix...))
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			gen(append(prefix, c), n-1)
		}
	}
	gen(nil, 5)
	strs := [][]byte{nil, []byte("a"), []byte("b"), []byte("ab"), []byte("aB"), []byte("*a"), []byte("a]-"), []byte("ba^a"), []byte(`\a`), []byte("aaaa")}
	checked := 0
	for _, p := range patterns {
		for _, s := range strs {
			for _, nocase := range []bool{false, true} {
				checked++
				if got, want := Match(p, s, nocase), redisMatch(p, s, nocase); got != want {
					t.Fatalf("Match(%q, %q, nocase=%v) = %v, Redis semantics say %v", p, s, nocase, got, want)
				}
			}
		}
	}
	t.Logf("%d pattern/string pairs agree", checked)
}

// TestMatchWorkIsBounded is the pattern from issue 17 that kept Redis's old matcher (and ours)
// busy forever: it must now answer at once, with the same answer as Redis.
func TestMatchWorkIsBounded(t *testing.T) {
	key := bytes.Repeat([]byte("a"), 40)
	pattern := []byte(strings.Repeat("a*", 20) + "b")
	if Match(pattern, key, false) {
		t.Fatal("matched a string without 'b'")
	}
	long := bytes.Repeat([]byte("a"), 100000)
	if Match([]byte(strings.Repeat("*a", 1000)+"*b"), long, false) {
		t.Fatal("matched a string without 'b'")
	}
}

// FuzzMatch checks the matcher against the oracle on arbitrary inputs (short enough for the
// exponential oracle) and that it never panics on long ones.
func FuzzMatch(f *testing.F) {
	f.Add([]byte("h*llo"), []byte("hello"), false)
	f.Add([]byte("[^a-z]?\\*"), []byte("A]*"), true)
	f.Add([]byte("a*a*a*a*b"), []byte("aaaaaaaaaa"), false)
	f.Fuzz(func(t *testing.T, p, s []byte, nocase bool) {
		got := Match(p, s, nocase)
		if len(p) <= 12 && len(s) <= 12 {
			if want := redisMatch(p, s, nocase); got != want {
				t.Fatalf("Match(%q, %q, nocase=%v) = %v, Redis semantics say %v", p, s, nocase, got, want)
			}
		}
	})
}
