package lualib

import "testing"

// FuzzLuaPattern: the matcher raises only Lua errors on any pattern and subject, its matches lie
// within the subject, and a step budget stops it like busy-reply-threshold would.
func FuzzLuaPattern(f *testing.F) {
	for _, seed := range [][2]string{
		{"hello world", "o w"}, {"key:123", "(%a+):(%d+)"}, {"f(a(b)c)d", "%b()"}, {"THE (quick)", "%f[%a]%a+"},
		{"abcabc", "(abc)%1"}, {"x]y", "[]x]+"}, {"aaab", "a-b"}, {"a", "%"}, {"a", "[a"}, {"a", "(()"},
		{"aaaaaaaaaaaaaaaaaaaa", "a*a*a*a*a*a*a*a*b"}, {"", "^$"}, {"a.b", "[%a-z%.]+"}, {"", "%f[]"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, src, pat string) {
		var ms *matchState
		ms = &matchState{src: src, pat: pat, stopped: func() bool { return ms.steps > 1<<20 }}
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(patternError); !ok {
					t.Fatalf("find %q in %q: %v", pat, src, r)
				}
			}
		}()
		for s1 := 0; s1 <= len(src); s1++ {
			ms.reset()
			if e := ms.match(s1, 0); e != -1 {
				if e < s1 || e > len(src) {
					t.Fatalf("find %q in %q: match [%d, %d)", pat, src, s1, e)
				}
				for i := 0; i < ms.level; i++ {
					ms.captureValue(i, s1, e)
				}
				return
			}
		}
	})
}
