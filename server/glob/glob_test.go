package glob

import "testing"

func TestMatch(t *testing.T) {
	cases := []struct {
		pattern, str string
		nocase, want bool
	}{
		{"*", "", false, true},
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
