// Package glob matches Redis glob-style patterns (KEYS, SCAN MATCH, PSUBSCRIBE, CONFIG GET): `*`,
// `?`, `[abc]`, `[^a-z]` and `\` escapes, with Redis's semantics rather than path.Match's (no
// special meaning for '/', no error for malformed patterns).
package glob

// Match reports whether str matches pattern. It allocates nothing.
func Match(pattern, str []byte, nocase bool) bool {
	return match(pattern, str, nocase, 0)
}

// MatchString is Match for strings.
func MatchString(pattern, str string, nocase bool) bool {
	return match([]byte(pattern), []byte(str), nocase, 0)
}

// maxNesting bounds recursion on patterns such as "*a*a*a*...", which Redis also limits.
const maxNesting = 1000

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func match(p, s []byte, nocase bool, nesting int) bool {
	if nesting > maxNesting {
		return false
	}
	for len(p) > 0 && len(s) > 0 {
		switch p[0] {
		case '*':
			for len(p) > 1 && p[1] == '*' {
				p = p[1:]
			}
			if len(p) == 1 {
				return true
			}
			for len(s) > 0 {
				if match(p[1:], s, nocase, nesting+1) {
					return true
				}
				s = s[1:]
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
				if len(p) == 0 {
					break
				}
				if p[0] == '\\' && len(p) >= 2 {
					p = p[1:]
					if p[0] == s[0] {
						matched = true
					}
				} else if p[0] == ']' {
					break
				} else if len(p) >= 3 && p[1] == '-' {
					start, end := p[0], p[2]
					if start > end {
						start, end = end, start
					}
					c := s[0]
					if nocase {
						start, end, c = lower(start), lower(end), lower(c)
					}
					p = p[2:]
					if c >= start && c <= end {
						matched = true
					}
				} else if nocase {
					if lower(p[0]) == lower(s[0]) {
						matched = true
					}
				} else if p[0] == s[0] {
					matched = true
				}
				p = p[1:]
			}
			if len(p) == 0 {
				// An unterminated class: Redis treats the pattern end as the class end.
				p = p[:0]
			} else {
				p = p[1:]
			}
			if not {
				matched = !matched
			}
			if !matched {
				return false
			}
			s = s[1:]
			continue
		case '\\':
			if len(p) >= 2 {
				p = p[1:]
			}
			fallthrough
		default:
			if nocase {
				if lower(p[0]) != lower(s[0]) {
					return false
				}
			} else if p[0] != s[0] {
				return false
			}
			s = s[1:]
		}
		p = p[1:]
	}
	if len(s) == 0 {
		for len(p) > 0 && p[0] == '*' {
			p = p[1:]
		}
		return len(p) == 0
	}
	return false
}
