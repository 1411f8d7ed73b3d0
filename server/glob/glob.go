// Package glob matches Redis glob-style patterns (KEYS, SCAN MATCH, PSUBSCRIBE, PUBSUB, CONFIG
// GET, tracking prefixes): `*`, `?`, `[abc]`, `[^a-z]` and `\` escapes, with Redis's semantics
// rather than path.Match's (no special meaning for '/', no error for malformed patterns).
//
// The matcher is iterative and remembers only the last star it passed, so its work is at most
// len(pattern)·len(str) steps and it uses no stack: a pattern such as "a*a*a*…b" cannot make it
// backtrack exponentially (Redis's recursive matcher needed a nesting limit and an early exit
// after CVE-2022-36021 for the same reason). Every token other than `*` matches exactly one
// byte, which is what makes returning to the last star enough.
package glob

// Match reports whether str matches pattern, as Redis's stringmatchlen does. An empty string
// matches only the empty pattern (callers that treat "*" as "everything", as KEYS and SCAN do,
// check for it themselves). It allocates nothing.
func Match(pattern, str []byte, nocase bool) bool {
	if len(str) == 0 {
		return len(pattern) == 0
	}
	p, s := 0, 0
	star, starS := -1, 0 // the last star seen, and where in str its match currently ends
	for s < len(str) {
		if p < len(pattern) {
			if pattern[p] == '*' {
				for p+1 < len(pattern) && pattern[p+1] == '*' {
					p++
				}
				if p == len(pattern)-1 {
					return true
				}
				star, starS = p, s
				p++
				continue
			}
			if next, ok := matchOne(pattern, p, str[s], nocase); ok {
				p, s = next, s+1
				continue
			}
		}
		// Mismatch, or pattern exhausted with string left: let the last star take one more byte.
		if star < 0 {
			return false
		}
		starS++
		p, s = star+1, starS
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// MatchString is Match for strings.
func MatchString(pattern, str string, nocase bool) bool {
	return Match([]byte(pattern), []byte(str), nocase)
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// matchOne matches the single-byte token at pattern[p] (not a star) against c. It returns where
// the next token starts, which depends only on the pattern, and whether c matched.
func matchOne(pattern []byte, p int, c byte, nocase bool) (int, bool) {
	switch pattern[p] {
	case '?':
		return p + 1, true
	case '[':
		return matchClass(pattern, p+1, c, nocase)
	case '\\':
		if p+1 < len(pattern) {
			p++
		}
	}
	if nocase {
		return p + 1, lower(pattern[p]) == lower(c)
	}
	return p + 1, pattern[p] == c
}

// matchClass matches c against the class whose body starts at pattern[p] (after '['). As in
// Redis, an unterminated class ends with the pattern, an escape inside a class compares exactly,
// and a range's bounds may come in either order.
func matchClass(pattern []byte, p int, c byte, nocase bool) (int, bool) {
	not := p < len(pattern) && pattern[p] == '^'
	if not {
		p++
	}
	matched := false
	for p < len(pattern) {
		switch {
		case pattern[p] == '\\' && p+1 < len(pattern):
			p++
			if pattern[p] == c {
				matched = true
			}
		case pattern[p] == ']':
			return p + 1, matched != not
		case p+2 < len(pattern) && pattern[p+1] == '-':
			start, end, ch := pattern[p], pattern[p+2], c
			if start > end {
				start, end = end, start
			}
			if nocase {
				start, end, ch = lower(start), lower(end), lower(ch)
			}
			if ch >= start && ch <= end {
				matched = true
			}
			p += 2
		case nocase:
			if lower(pattern[p]) == lower(c) {
				matched = true
			}
		default:
			if pattern[p] == c {
				matched = true
			}
		}
		p++
	}
	return p, matched != not
}
