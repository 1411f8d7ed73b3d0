package lualib

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// Lua patterns for string.find, string.match, string.gmatch and string.gsub, ported from Lua
// 5.1's lstrlib.c, which Redis embeds. gopher-lua's own matcher cannot be stopped: a pattern
// such as ('a*'):rep(50) .. 'b' backtracks for longer than the universe lasts, with no
// instruction boundary where the server could serve other clients or SCRIPT KILL end the script
// (Redis hangs on it, SCRIPT KILL included). This one counts its steps and asks every
// patternCheckSteps whether the script has been stopped (the asking is where the server serves
// others past busy-reply-threshold), limits its recursion, and gsub stops building a result longer than
// proto-max-bulk-len. It also collects no match list up front, as gopher-lua's does.

const (
	patternMaxCaptures = 32   // LUA_MAXCAPTURES
	patternMaxDepth    = 5000 // one level per pattern item; Lua 5.1's limit is the C stack
	patternCheckSteps  = 4096
	capUnfinished      = -1
	capPosition        = -2
	patternSpecials    = "^$*+?.([%-"
)

// patternError is a Lua error raised from inside the matcher, recovered by its caller.
type patternError string

type patternCapture struct{ init, len int }

type matchState struct {
	src, pat  string
	level     int
	capture   [patternMaxCaptures]patternCapture
	depth     int
	steps     int
	nextCheck int
	stopped   func() bool
}

func (ms *matchState) reset() {
	ms.level, ms.depth = 0, 0
}

func (ms *matchState) tick(n int) {
	ms.steps += n
	if ms.steps >= ms.nextCheck {
		ms.nextCheck = ms.steps + patternCheckSteps
		if ms.stopped != nil && ms.stopped() {
			panic(patternError("script stopped"))
		}
	}
}

func (ms *matchState) classEnd(p int) int {
	pat := ms.pat
	c := pat[p]
	p++
	switch c {
	case '%':
		if p >= len(pat) {
			panic(patternError("malformed pattern (ends with '%')"))
		}
		return p + 1
	case '[':
		if p < len(pat) && pat[p] == '^' {
			p++
		}
		for {
			if p >= len(pat) {
				panic(patternError("malformed pattern (missing ']')"))
			}
			c := pat[p]
			p++
			if c == '%' && p < len(pat) {
				p++
			}
			if p < len(pat) && pat[p] == ']' {
				return p + 1
			}
		}
	}
	return p
}

func isLower(c byte) bool { return c >= 'a' && c <= 'z' }
func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isAlpha(c byte) bool { return isLower(c) || isUpper(c) }
func isSpace(c byte) bool { return c == ' ' || (c >= '\t' && c <= '\r') }
func isCntrl(c byte) bool { return c < 32 || c == 127 }
func isPunct(c byte) bool { return c > 32 && c < 127 && !isAlpha(c) && !isDigit(c) }
func isXDigit(c byte) bool {
	return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// matchClass is C's ctype in the "C" locale, as %a, %d and the others mean in Lua.
func matchClass(c, cl byte) bool {
	var res bool
	switch cl | 0x20 {
	case 'a':
		res = isAlpha(c)
	case 'c':
		res = isCntrl(c)
	case 'd':
		res = isDigit(c)
	case 'l':
		res = isLower(c)
	case 'p':
		res = isPunct(c)
	case 's':
		res = isSpace(c)
	case 'u':
		res = isUpper(c)
	case 'w':
		res = isAlpha(c) || isDigit(c)
	case 'x':
		res = isXDigit(c)
	case 'z':
		res = c == 0
	default:
		return cl == c
	}
	if isUpper(cl) {
		return !res
	}
	return res
}

// matchBracketClass matches c against the set pat[p:ec+1], "[...]".
func (ms *matchState) matchBracketClass(c byte, p, ec int) bool {
	pat := ms.pat
	sig := true
	if pat[p+1] == '^' {
		sig = false
		p++
	}
	for p++; p < ec; p++ {
		switch {
		case pat[p] == '%':
			p++
			if matchClass(c, pat[p]) {
				return sig
			}
		case pat[p+1] == '-' && p+2 < ec:
			p += 2
			if pat[p-2] <= c && c <= pat[p] {
				return sig
			}
		case pat[p] == c:
			return sig
		}
	}
	return !sig
}

func (ms *matchState) singleMatch(c byte, p, ep int) bool {
	switch ms.pat[p] {
	case '.':
		return true
	case '%':
		return matchClass(c, ms.pat[p+1])
	case '[':
		return ms.matchBracketClass(c, p, ep-1)
	}
	return ms.pat[p] == c
}

// match returns the end of the match of pat[p:] at src[s:], or -1.
func (ms *matchState) match(s, p int) int {
	ms.depth++
	if ms.depth > patternMaxDepth {
		panic(patternError("pattern too complex"))
	}
	r := ms.doMatch(s, p)
	ms.depth--
	return r
}

func (ms *matchState) doMatch(s, p int) int {
	src, pat := ms.src, ms.pat
	for {
		ms.tick(1)
		if p == len(pat) {
			return s
		}
		switch pat[p] {
		case '(':
			if p+1 < len(pat) && pat[p+1] == ')' {
				return ms.startCapture(s, p+2, capPosition)
			}
			return ms.startCapture(s, p+1, capUnfinished)
		case ')':
			return ms.endCapture(s, p+1)
		case '%':
			if p+1 < len(pat) {
				switch next := pat[p+1]; {
				case next == 'b':
					if s = ms.matchBalance(s, p+2); s == -1 {
						return -1
					}
					p += 4
					continue
				case next == 'f':
					p += 2
					if p >= len(pat) || pat[p] != '[' {
						panic(patternError("missing '[' after '%f' in pattern"))
					}
					ep := ms.classEnd(p)
					var prev, cur byte
					if s > 0 {
						prev = src[s-1]
					}
					if s < len(src) {
						cur = src[s]
					}
					if ms.matchBracketClass(prev, p, ep-1) || !ms.matchBracketClass(cur, p, ep-1) {
						return -1
					}
					p = ep
					continue
				case isDigit(next):
					if s = ms.matchCapture(s, next); s == -1 {
						return -1
					}
					p += 2
					continue
				}
			}
		case '$':
			if p+1 == len(pat) {
				if s == len(src) {
					return s
				}
				return -1
			}
		}
		ep := ms.classEnd(p)
		m := s < len(src) && ms.singleMatch(src[s], p, ep)
		if ep < len(pat) {
			switch pat[ep] {
			case '?':
				if m {
					if r := ms.match(s+1, ep+1); r != -1 {
						return r
					}
				}
				p = ep + 1
				continue
			case '*':
				return ms.maxExpand(s, p, ep)
			case '+':
				if !m {
					return -1
				}
				return ms.maxExpand(s+1, p, ep)
			case '-':
				return ms.minExpand(s, p, ep)
			}
		}
		if !m {
			return -1
		}
		s++
		p = ep
	}
}

func (ms *matchState) maxExpand(s, p, ep int) int {
	i := 0
	for s+i < len(ms.src) && ms.singleMatch(ms.src[s+i], p, ep) {
		i++
	}
	ms.tick(i)
	for ; i >= 0; i-- {
		if r := ms.match(s+i, ep+1); r != -1 {
			return r
		}
	}
	return -1
}

func (ms *matchState) minExpand(s, p, ep int) int {
	for {
		if r := ms.match(s, ep+1); r != -1 {
			return r
		}
		if s < len(ms.src) && ms.singleMatch(ms.src[s], p, ep) {
			s++
		} else {
			return -1
		}
	}
}

func (ms *matchState) startCapture(s, p, what int) int {
	if ms.level >= patternMaxCaptures {
		panic(patternError("too many captures"))
	}
	ms.capture[ms.level] = patternCapture{s, what}
	ms.level++
	r := ms.match(s, p)
	if r == -1 {
		ms.level--
	}
	return r
}

func (ms *matchState) endCapture(s, p int) int {
	l := -1
	for i := ms.level - 1; i >= 0; i-- {
		if ms.capture[i].len == capUnfinished {
			l = i
			break
		}
	}
	if l < 0 {
		panic(patternError("invalid pattern capture"))
	}
	ms.capture[l].len = s - ms.capture[l].init
	r := ms.match(s, p)
	if r == -1 {
		ms.capture[l].len = capUnfinished
	}
	return r
}

func (ms *matchState) matchBalance(s, p int) int {
	if p+1 >= len(ms.pat) {
		panic(patternError("unbalanced pattern"))
	}
	src := ms.src
	if s >= len(src) || src[s] != ms.pat[p] {
		return -1
	}
	b, e := ms.pat[p], ms.pat[p+1]
	depth := 1
	for s++; s < len(src); s++ {
		switch src[s] {
		case e:
			if depth--; depth == 0 {
				ms.tick(s)
				return s + 1
			}
		case b:
			depth++
		}
	}
	ms.tick(s)
	return -1
}

func (ms *matchState) matchCapture(s int, digit byte) int {
	l := int(digit) - '1'
	if l < 0 || l >= ms.level || ms.capture[l].len == capUnfinished {
		panic(patternError("invalid capture index"))
	}
	c := ms.capture[l]
	if c.len >= 0 && len(ms.src)-s >= c.len && ms.src[c.init:c.init+c.len] == ms.src[s:s+c.len] {
		return s + c.len
	}
	return -1
}

// capture is capture i of the match src[s:e] as a Lua value.
func (ms *matchState) captureValue(i, s, e int) lua.LValue {
	if i >= ms.level {
		if i == 0 {
			return lua.LString(ms.src[s:e])
		}
		panic(patternError("invalid capture index"))
	}
	c := ms.capture[i]
	switch c.len {
	case capUnfinished:
		panic(patternError("unfinished capture"))
	case capPosition:
		return lua.LNumber(c.init + 1)
	}
	return lua.LString(ms.src[c.init : c.init+c.len])
}

// pushCaptures pushes the captures of the match src[s:e] (the whole match when there are none
// and wholeIfNone) and returns how many.
func (ms *matchState) pushCaptures(L *lua.LState, s, e int, wholeIfNone bool) int {
	n := ms.level
	if n == 0 && wholeIfNone {
		n = 1
	}
	for i := 0; i < n; i++ {
		L.Push(ms.captureValue(i, s, e))
	}
	return n
}

// runPattern runs f, turning a patternError it raises into the script's Lua error.
func runPattern(L *lua.LState, f func() int) (n int) {
	var perr patternError
	func() {
		defer func() {
			if r := recover(); r != nil {
				e, ok := r.(patternError)
				if !ok {
					panic(r)
				}
				perr = e
			}
		}()
		n = f()
	}()
	if perr != "" {
		L.RaiseError("%s", string(perr))
	}
	return n
}

// startPosition is Lua 5.1's posrelat for string.find's init, made 0-based and clamped.
func startPosition(init, n int) int {
	if init < 0 {
		init += n + 1
	}
	return min(max(init-1, 0), n)
}

// Patterns replaces the string library's pattern functions. stopped reports whether the
// running script has been stopped (it is the script's hook: it may serve other clients
// meanwhile); maxLen is proto-max-bulk-len, read at each call.
func Patterns(L *lua.LState, str *lua.LTable, stopped func() bool, maxLen func() int64) {
	findAux := func(find bool) lua.LGFunction {
		return func(L *lua.LState) int {
			s, p := L.CheckString(1), L.CheckString(2)
			init := startPosition(L.OptInt(3, 1), len(s))
			if find && (lua.LVAsBool(L.Get(4)) || !strings.ContainsAny(p, patternSpecials)) {
				if i := strings.Index(s[init:], p); i >= 0 {
					L.Push(lua.LNumber(init + i + 1))
					L.Push(lua.LNumber(init + i + len(p)))
					return 2
				}
				L.Push(lua.LNil)
				return 1
			}
			return runPattern(L, func() int {
				ms := &matchState{src: s, stopped: stopped}
				anchor := strings.HasPrefix(p, "^")
				ms.pat = strings.TrimPrefix(p, "^")
				for s1 := init; ; s1++ {
					ms.reset()
					if e := ms.match(s1, 0); e != -1 {
						if find {
							L.Push(lua.LNumber(s1 + 1))
							L.Push(lua.LNumber(e))
							return 2 + ms.pushCaptures(L, s1, e, false)
						}
						return ms.pushCaptures(L, s1, e, true)
					}
					if anchor || s1 >= len(s) {
						break
					}
				}
				L.Push(lua.LNil)
				return 1
			})
		}
	}
	str.RawSetString("find", L.NewFunction(findAux(true)))
	str.RawSetString("match", L.NewFunction(findAux(false)))

	gmatch := L.NewFunction(func(L *lua.LState) int {
		s, p := L.CheckString(1), L.CheckString(2)
		pos := 0
		L.Push(L.NewFunction(func(L *lua.LState) int {
			return runPattern(L, func() int {
				ms := &matchState{src: s, pat: p, stopped: stopped}
				for src := pos; src <= len(s); src++ {
					ms.reset()
					if e := ms.match(src, 0); e != -1 {
						pos = e
						if e == src {
							pos++
						}
						return ms.pushCaptures(L, src, e, true)
					}
				}
				pos = len(s) + 1
				return 0
			})
		}))
		return 1
	})
	str.RawSetString("gmatch", gmatch)
	str.RawSetString("gfind", gmatch)

	str.RawSetString("gsub", L.NewFunction(func(L *lua.LState) int {
		s, p := L.CheckString(1), L.CheckString(2)
		repl := L.Get(3)
		switch repl.Type() {
		case lua.LTNumber, lua.LTString, lua.LTTable, lua.LTFunction:
		default:
			L.RaiseError("bad argument #3 to 'gsub' (string/function/table expected)")
		}
		maxN := L.OptInt(4, len(s)+1)
		limit := maxLen()
		var b strings.Builder
		add := func(v string) {
			if int64(b.Len())+int64(len(v)) > limit {
				panic(patternError("string exceeds maximum allowed size (proto-max-bulk-len)"))
			}
			b.WriteString(v)
		}
		n := 0
		runPattern(L, func() int {
			ms := &matchState{src: s, stopped: stopped}
			anchor := strings.HasPrefix(p, "^")
			ms.pat = strings.TrimPrefix(p, "^")
			src := 0
			for n < maxN {
				ms.reset()
				e := ms.match(src, 0)
				if e != -1 {
					n++
					gsubValue(L, ms, src, e, repl, add)
				}
				switch {
				case e != -1 && e > src:
					src = e
				case src < len(s):
					add(s[src : src+1])
					src++
				default:
					anchor = true
				}
				if anchor {
					break
				}
			}
			if src < len(s) {
				add(s[src:])
			}
			return 0
		})
		L.Push(lua.LString(b.String()))
		L.Push(lua.LNumber(n))
		return 2
	}))
}

// gsubValue adds the replacement for the match src[s:e], as Lua 5.1's add_value does.
func gsubValue(L *lua.LState, ms *matchState, s, e int, repl lua.LValue, add func(string)) {
	var v lua.LValue
	switch r := repl.(type) {
	case lua.LString, lua.LNumber:
		news := lua.LVAsString(r)
		for i := 0; i < len(news); i++ {
			if news[i] != '%' || i+1 == len(news) {
				add(news[i : i+1])
				continue
			}
			i++
			switch {
			case !isDigit(news[i]):
				add(news[i : i+1])
			case news[i] == '0':
				add(ms.src[s:e])
			default:
				add(lua.LVAsString(ms.captureValue(int(news[i]-'1'), s, e)))
			}
		}
		return
	case *lua.LTable:
		v = L.GetTable(r, ms.captureValue(0, s, e))
	case *lua.LFunction:
		top := L.GetTop()
		L.Push(r)
		n := ms.pushCaptures(L, s, e, true)
		L.Call(n, 1)
		v = L.Get(-1)
		L.SetTop(top)
	}
	switch v.Type() {
	case lua.LTNil:
		add(ms.src[s:e])
	case lua.LTBool:
		if v == lua.LFalse {
			add(ms.src[s:e])
		} else {
			panic(patternError("invalid replacement value (a boolean)"))
		}
	case lua.LTString, lua.LTNumber:
		add(lua.LVAsString(v))
	default:
		panic(patternError("invalid replacement value (a " + v.Type().String() + ")"))
	}
}
