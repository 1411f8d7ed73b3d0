package lualib

// gopher-lua parses without recursion but compiles by walking the syntax tree recursively, about
// a kilobyte of Go stack a level: a 2 MB script such as "return {{{...}}}" nested a million deep
// overflows the main goroutine's stack, which no recover can catch, and the server dies. Lua 5.1
// stops at 200 syntax levels; here a script whose nesting may pass maxNesting is refused
// before it is compiled, with Lua's error. The estimate is cheap and errs high: bracket depth,
// plus block depth, plus the longest run of operators, calls and indexing within one expression.
//
// Brackets and blocks are nesting that Lua 5.1 itself counts, so past luaMaxLevels of them the
// script is refused as Redis's Lua refuses it (at 199 for nested blocks or parentheses): 20,000
// nested functions stayed under maxNesting and took gopher-lua's compiler 290 MB in one call,
// which the script's memory guard can only see once the call returns. A run of operators is
// left to maxNesting: Lua parses a+b+c+... in a loop, so only the compiler's stack bounds it here.

const (
	maxNesting   = 50000
	luaMaxLevels = 200
)

// TooDeep reports whether the script body may nest deeper than Lua 5.1 allows (luaMaxLevels
// brackets and blocks) or than gopher-lua's compiler's stack can take (maxNesting in all).
func TooDeep(body []byte) bool {
	if len(body) <= luaMaxLevels {
		return false // each level takes at least a byte
	}
	brackets, blocks, run, loops := 0, 0, 0, 0
	for i := 0; i < len(body); {
		c := body[i]
		switch {
		case c == '-' && i+1 < len(body) && body[i+1] == '-':
			i += 2
			if n := longBracket(body, i+1); n > 0 {
				i = skipLong(body, i+1, n)
			} else {
				for i < len(body) && body[i] != '\n' {
					i++
				}
			}
			continue
		case c == '\'' || c == '"':
			for i++; i < len(body) && body[i] != c; i++ {
				if body[i] == '\\' {
					i++
				}
			}
			i++
			run++
			continue
		case c == '[' && longBracket(body, i+1) > 0:
			i = skipLong(body, i+1, longBracket(body, i+1))
			run++
			continue
		case isAlpha(c) || c == '_':
			j := i
			for j < len(body) && (isAlpha(body[j]) || isDigit(body[j]) || body[j] == '_') {
				j++
			}
			switch string(body[i:j]) {
			case "while", "for":
				loops++
				blocks++
				run = 0
			case "do":
				if loops > 0 {
					loops--
				} else {
					blocks++
				}
				run = 0
			case "function", "if", "repeat":
				blocks++
				run = 0
			case "end", "until":
				blocks--
				run = 0
			case "and", "or", "not":
				run++
			case "local", "return", "then", "else", "elseif", "break", "in":
				run = 0
			}
			i = j
			continue
		case c == '(' || c == '[' || c == '{':
			brackets++
			run++
		case c == ')' || c == ']' || c == '}':
			brackets--
		case c == ',' || c == ';':
			run = 0
		case c == '=':
			if i+1 < len(body) && body[i+1] == '=' {
				i++
				run++
			} else {
				run = 0
			}
		case c == '+' || c == '-' || c == '*' || c == '/' || c == '%' || c == '^' || c == '#' ||
			c == '.' || c == ':' || c == '<' || c == '>' || c == '~':
			run++
		}
		if brackets+blocks > luaMaxLevels || brackets+blocks+run > maxNesting {
			return true
		}
		i++
	}
	return false
}

// longBracket is the length of the long bracket "[", "=" ... "[" opening at body[i-1], or 0.
func longBracket(body []byte, i int) int {
	if i == 0 || i > len(body) || body[i-1] != '[' {
		return 0
	}
	j := i
	for j < len(body) && body[j] == '=' {
		j++
	}
	if j < len(body) && body[j] == '[' {
		return j - i + 2
	}
	return 0
}

// skipLong skips a long string or comment whose opening bracket of n bytes starts at body[i-1].
func skipLong(body []byte, i, n int) int {
	level := n - 2
	for j := i - 1 + n; j < len(body); j++ {
		if body[j] != ']' {
			continue
		}
		k := j + 1
		for k < len(body) && body[k] == '=' {
			k++
		}
		if k < len(body) && body[k] == ']' && k-j-1 == level {
			return k + 1
		}
	}
	return len(body)
}
