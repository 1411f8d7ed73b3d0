package scripting

import (
	"container/list"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/iocache/iocache/server/lualib"
)

// The script cache: every script EVAL or SCRIPT LOAD compiled, by the SHA1 of its body (SCRIPT
// FLUSH closes the State). Each entry is kept small (lualib.Compact): unique EVALs fill the
// cache, and gopher-lua's compiler left 17 KB in each. Scripts that only EVAL brought in are
// evicted past the most recent maxEvalScripts, as Redis 7.4 does: a client that builds each
// script's text anew (values inlined instead of passed as ARGV) would otherwise grow the cache
// without bound, 1.7 KB a script, which no maxmemory covers. A script SCRIPT LOAD brought in, or
// loaded since, stays until SCRIPT FLUSH; EVALSHA of an evicted one is NOSCRIPT, and clients'
// script helpers answer that with EVAL.

// maxEvalScripts is how many scripts loaded by EVAL alone the cache keeps (Redis 7.4's
// LRU_LIST_LENGTH).
const maxEvalScripts = 500

// Script is a script of the cache: its body compiled, the SHA1 EVALSHA names it by (lower
// case), and the flags its shebang declares.
type Script struct {
	SHA   string
	Flags Flags
	fn    *lua.LFunction
	bytes int64 // compiled code, then entry and body: what its eviction gives back
}

// Load compiles body and caches it under its SHA1, or finds it there: for EVAL (byEval) as one
// of the recent scripts that may be evicted, for SCRIPT LOAD to stay. A body whose shebang is
// invalid or that does not compile is not cached: errReply is Redis's error for it.
func (st *State) Load(body []byte, byEval bool) (s Script, errReply string) {
	sha := sha1Hex(body)
	if s, ok := st.scripts[sha]; ok {
		if e := st.evalOnly[sha]; e != nil {
			if byEval {
				st.evalLRU.MoveToBack(e)
			} else {
				st.evalLRU.Remove(e)
				delete(st.evalOnly, sha)
			}
		}
		return s, ""
	}
	flags, code, err := ParseShebang(body)
	if err != nil {
		return Script{}, "ERR " + err.Error()
	}
	const compileError = "ERR Error compiling script (new function): "
	if lualib.TooDeep(code) {
		return Script{}, compileError + "user_script:1: chunk has too many syntax levels"
	}
	fn, err := st.l.Load(strings.NewReader(string(code)), scriptChunk)
	if err != nil {
		return Script{}, compileError + luaErrorText(compileErrorText(err, code))
	}
	lualib.Compact(fn)
	compiled := lualib.ProtoBytes(fn)
	s = Script{SHA: sha, Flags: flags, fn: fn, bytes: compiled + int64(len(body)) + scriptEntryBytes}
	st.scripts[sha] = s
	st.codeBytes += compiled
	st.entryBytes += int64(len(body)) + scriptEntryBytes
	if byEval {
		if st.evalOnly == nil {
			st.evalOnly, st.evalLRU = map[string]*list.Element{}, list.New()
		}
		st.evalOnly[sha] = st.evalLRU.PushBack(sha)
		for st.evalLRU.Len() > maxEvalScripts {
			st.evict(st.evalLRU.Remove(st.evalLRU.Front()).(string))
		}
	}
	return s, ""
}

// Used marks a script that EVALSHA ran as recent.
func (st *State) Used(sha string) {
	if e := st.evalOnly[sha]; e != nil {
		st.evalLRU.MoveToBack(e)
	}
}

// evict drops a script that only EVAL loaded.
func (st *State) evict(sha string) {
	s := st.scripts[sha]
	delete(st.scripts, sha)
	delete(st.evalOnly, sha)
	compiled := lualib.ProtoBytes(s.fn)
	st.codeBytes -= compiled
	st.entryBytes -= s.bytes - compiled
	st.evicted++
}

// Evicted is how many scripts this cache evicted (INFO's evicted_scripts).
func (st *State) Evicted() int64 { return st.evicted }

// scriptEntryBytes is what a cache entry costs beside its body and compiled code: the map slot,
// the SHA1 key and the Script.
const scriptEntryBytes = 40 + 48 + 48

// CacheStats says how many scripts the cache holds, the bytes of their compiled code (the
// interpreter's part, INFO's used_memory_vm_eval) and of the cache itself: bodies, keys and
// entries (used_memory_scripts_eval). gopher-lua allocates from Go's heap, not an allocator of
// its own that could be asked, so these are counted from what was compiled, not measured.
func (st *State) CacheStats() (scripts int, codeBytes, entryBytes int64) {
	return len(st.scripts), st.codeBytes, st.entryBytes
}

// Lookup finds a script of the cache by its SHA1, in either case (EVALSHA, SCRIPT EXISTS).
func (st *State) Lookup(sha []byte) (Script, bool) {
	for _, b := range sha {
		if 'A' <= b && b <= 'Z' {
			s, ok := st.scripts[strings.ToLower(string(sha))]
			return s, ok
		}
	}
	s, ok := st.scripts[string(sha)] // no copy of sha: Go looks a map up by its bytes
	return s, ok
}
