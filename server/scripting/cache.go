package scripting

import (
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/iocache/iocache/server/lualib"
)

// The script cache: every script EVAL or SCRIPT LOAD compiled, by the SHA1 of its body, for as
// long as the State lives, as in Redis (SCRIPT FLUSH closes the State). Each entry is kept
// small (lualib.Compact): unique EVALs fill the cache, and gopher-lua's compiler left 17 KB
// in each.

// Script is a script of the cache: its body compiled, the SHA1 EVALSHA names it by (lower
// case), and the flags its shebang declares.
type Script struct {
	SHA   string
	Flags Flags
	fn    *lua.LFunction
}

// Load compiles body and caches it under its SHA1, or finds it there (EVAL, SCRIPT LOAD). A
// body whose shebang is invalid or that does not compile is not cached: errReply is Redis's
// error for it.
func (st *State) Load(body []byte) (s Script, errReply string) {
	sha := sha1Hex(body)
	if s, ok := st.scripts[sha]; ok {
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
	s = Script{SHA: sha, Flags: flags, fn: fn}
	st.scripts[sha] = s
	st.codeBytes += lualib.ProtoBytes(fn)
	st.entryBytes += int64(len(body)) + scriptEntryBytes
	return s, ""
}

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
