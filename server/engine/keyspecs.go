package engine

import (
	"slices"
	"strings"

	"github.com/iocache/iocache/server/acl"
	"github.com/iocache/iocache/server/resp"
)

// Redis 7.0's key specs, read from its COMMAND INFO entries (command_meta.go) and nowhere else:
// where a command's keys are (begin_search: a fixed index, or the argument after a keyword) and
// how many follow (find_keys: a range, or a count read from the arguments), each spec with its
// flags. COMMAND GETKEYS and GETKEYSANDFLAGS and the ACL key checks (acl_keyspecs.go) both find
// keys with appendKeys, so what COMMAND says and what ACL enforces cannot drift apart. Where
// Redis falls back to a command's own key finder (the specs cannot say which SET or BITFIELD
// form writes, nor where SORT's STORE is), the same rules are written out below.

// keySpec is one COMMAND INFO key spec in the form the walker reads: begin_search (an index, or
// the argument after keyword searched from startFrom) and find_keys (a range: lastKey relative to
// the first key, negative from the end, keyStep, limit; or keynum: the count at keyNumIdx, keys
// from firstKey, keyStep). perm is what ACL requires of a key it finds (flags ACCESS: read;
// INSERT, DELETE or UPDATE: write; neither: any pattern).
type keySpec struct {
	flags     []string
	perm      acl.Perm
	index     int
	keyword   string
	startFrom int
	keynum    bool
	lastKey   int
	keyStep   int
	limit     int
	keyNumIdx int
	firstKey  int
}

// foundKey is one key argument, where it is, its key-spec flags and what ACL requires of it.
type foundKey struct {
	key   []byte
	pos   int
	flags []string
	perm  acl.Perm
}

// commandKeySpecs are the key specs of a full command name ("get", "xgroup|create"); known is
// false for a command Redis does not have.
func commandKeySpecs(name string) (specs []keySpec, known bool) {
	specs, known = redisCommandMeta().keySpecs[name]
	return specs, known
}

// keySpecsOf converts an entry's key specs. Specs Redis marks not_key (names that are not keys)
// and those of unknown shape (SORT's, left to its key finder) are left out.
func keySpecsOf(entry *metaNode) []keySpec {
	var out []keySpec
	for _, spec := range entry.elems[8].elems {
		flags := spec.field("flags").strings()
		begin, find := spec.field("begin_search"), spec.field("find_keys")
		if slices.Contains(flags, "not_key") || begin.field("type").str == "unknown" {
			continue
		}
		ks := keySpec{flags: flags}
		if slices.Contains(flags, "access") {
			ks.perm |= acl.Read
		}
		if slices.Contains(flags, "insert") || slices.Contains(flags, "delete") || slices.Contains(flags, "update") {
			ks.perm |= acl.Write
		}
		bs, fk := begin.field("spec"), find.field("spec")
		switch begin.field("type").str {
		case "index":
			ks.index = int(bs.field("index").num)
		case "keyword":
			// Lower case, as equalFold compares arguments with it.
			ks.keyword, ks.startFrom = strings.ToLower(bs.field("keyword").str), int(bs.field("startfrom").num)
		}
		switch find.field("type").str {
		case "range":
			ks.lastKey, ks.keyStep, ks.limit = int(fk.field("lastkey").num), int(fk.field("keystep").num), int(fk.field("limit").num)
		case "keynum":
			ks.keynum = true
			ks.keyNumIdx, ks.firstKey, ks.keyStep = int(fk.field("keynumidx").num), int(fk.field("firstkey").num), int(fk.field("keystep").num)
		}
		out = append(out, ks)
	}
	return out
}

// appendKeys appends to dst the keys of args (args[0] is the command name) for the command with
// the full name given. ok is false when the arguments do not fit its specs (Redis's
// invalid_spec) or Redis does not know the command; dst is then returned as it came.
func appendKeys(dst []foundKey, name string, args [][]byte) (keys []foundKey, ok bool) {
	switch name {
	case "set":
		return append(dst, setKey(args)), true
	case "bitfield":
		return append(dst, bitfieldKey(args)), true
	case "sort", "sort_ro":
		return appendSortKeys(dst, name, args), true
	case "migrate":
		return appendMigrateKeys(dst, args), true
	}
	specs, known := commandKeySpecs(name)
	if !known {
		return dst, false
	}
	keys = dst
	for i := range specs {
		sp := &specs[i]
		first, last, step, fits := sp.place(args)
		if !fits {
			return dst, false
		}
		if first == 0 {
			continue // keyword absent: no keys from this spec
		}
		for at := first; at <= last; at += step { // place keeps last below argc
			keys = append(keys, foundKey{key: args[at], pos: at, flags: sp.flags, perm: sp.perm})
		}
	}
	return keys, true
}

// place applies the spec to args: the first and last key positions and the step between them.
// first is 0 when the spec's keyword is absent; fits is false when the arguments do not fit.
func (sp *keySpec) place(args [][]byte) (first, last, step int, fits bool) {
	argc := len(args)
	first = sp.index
	if sp.keyword != "" {
		first = 0
		// As Redis: forwards from startFrom to before the last argument, or, for a negative
		// startFrom, backwards from that far from the end down to the first argument
		// (MIGRATE's KEYS).
		start, end, dir := sp.startFrom, argc-1, 1
		if sp.startFrom < 0 {
			start, end, dir = argc+sp.startFrom, 0, -1
		}
		for i := start; i != end && i >= 1 && i < argc; i += dir {
			if resp.EqualFold(args[i], sp.keyword) {
				first = i + 1
				break
			}
		}
		if first == 0 {
			return 0, 0, 0, true
		}
	}
	step = sp.keyStep
	if sp.keynum {
		if sp.keyNumIdx >= argc-first {
			return 0, 0, 0, false
		}
		n, isNum := parseInt(args[first+sp.keyNumIdx])
		if !isNum || n < 0 || n > int64(argc) {
			return 0, 0, 0, false
		}
		first += sp.firstKey
		last = first + int(n) - 1
	} else {
		switch {
		case sp.lastKey >= 0:
			last = first + sp.lastKey
		case sp.limit == 0:
			last = argc + sp.lastKey
		default:
			last = first + (argc-first)/sp.limit + sp.lastKey
		}
	}
	if last >= argc || last < first || first >= argc || step < 1 {
		return 0, 0, 0, false
	}
	return first, last, step, true
}

// The flags of the keys the command-specific finders report, as Redis's getkeys procs do.
var (
	flagsOverwrite = []string{"OW", "update"}
	flagsReadWrite = []string{"RW", "access", "update"}
	flagsRead      = []string{"RO", "access"}
	flagsMigrate   = []string{"RW", "access", "delete"}
)

// setKey: SET writes its key, and reads it too with GET.
func setKey(args [][]byte) foundKey {
	k := foundKey{key: args[1], pos: 1, flags: flagsOverwrite, perm: acl.Write}
	for _, a := range args[3:] {
		if resp.EqualFold(a, "get") {
			k.flags, k.perm = flagsReadWrite, acl.ReadWrite
		}
	}
	return k
}

// bitfieldKey: BITFIELD with only GET (and OVERFLOW) reads its key; anything else may write.
func bitfieldKey(args [][]byte) foundKey {
	for i := 2; i < len(args); i++ {
		more := len(args) - i - 1
		switch {
		case resp.EqualFold(args[i], "get") && more >= 2:
			i += 2
		case resp.EqualFold(args[i], "overflow") && more >= 1:
			i++
		default:
			return foundKey{key: args[1], pos: 1, flags: flagsReadWrite, perm: acl.ReadWrite}
		}
	}
	return foundKey{key: args[1], pos: 1, flags: flagsRead, perm: acl.Read}
}

// appendMigrateKeys: MIGRATE's key, or with KEYS the keys after it (the "" before is a
// placeholder, not a key; a non-empty one with KEYS makes no keys), skipping AUTH's and AUTH2's
// arguments: Redis's migrateGetKeys, which it uses because MIGRATE's key specs are incomplete.
func appendMigrateKeys(dst []foundKey, args [][]byte) []foundKey {
	if len(args) < 6 {
		return dst
	}
	first, last := 3, 3
	for i := 6; i < len(args); i++ {
		switch {
		case resp.EqualFold(args[i], "auth"):
			i++
		case resp.EqualFold(args[i], "auth2"):
			i += 2
		case resp.EqualFold(args[i], "keys"):
			if len(args[3]) > 0 {
				return dst
			}
			first, last = i+1, len(args)-1
			i = len(args)
		}
	}
	for at := first; at <= last; at++ {
		dst = append(dst, foundKey{key: args[at], pos: at, flags: flagsMigrate, perm: acl.ReadWrite})
	}
	return dst
}

// appendSortKeys: the key, and SORT's last STORE destination, skipping the arguments of LIMIT,
// GET and BY so that a pattern named "store" is not taken for the option (Redis's sortGetKeys).
func appendSortKeys(dst []foundKey, name string, args [][]byte) []foundKey {
	dst = append(dst, foundKey{key: args[1], pos: 1, flags: flagsRead, perm: acl.Read})
	if name == "sort_ro" {
		return dst
	}
	store := 0
	for i := 2; i < len(args); i++ {
		switch {
		case resp.EqualFold(args[i], "limit"):
			i += 2
		case resp.EqualFold(args[i], "get"), resp.EqualFold(args[i], "by"):
			i++
		case resp.EqualFold(args[i], "store") && i+1 < len(args):
			store = i + 1
			i++
		}
	}
	if store != 0 {
		dst = append(dst, foundKey{key: args[store], pos: store, flags: flagsOverwrite, perm: acl.Write})
	}
	return dst
}
