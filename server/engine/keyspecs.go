package engine

import "strings"

// Redis 7.0's key specs, read from its COMMAND INFO entries (command_meta.go): where a command's
// keys are (begin_search: a fixed index, or the argument after a keyword) and how many follow
// (find_keys: a range, or a count read from the arguments), each spec with its access flags.
// COMMAND GETKEYS and GETKEYSANDFLAGS follow them as Redis does. Where Redis falls back to a
// command's own key finder (the specs cannot say which SET or BITFIELD form writes, nor where
// SORT's STORE is), the same rules are written out below.

// foundKey is one key argument and its key-spec flags.
type foundKey struct {
	key   []byte
	flags []string
}

// keysBySpecs finds the keys of args (args[0] is the command name) for the command with the full
// name and COMMAND INFO entry given. No keys means the arguments do not fit the specs.
func keysBySpecs(name string, entry *metaNode, args [][]byte) []foundKey {
	switch name {
	case "set":
		return setKeys(args)
	case "bitfield":
		return bitfieldKeys(args)
	case "sort", "sort_ro":
		return sortKeys(name, args)
	}
	var keys []foundKey
	for _, spec := range entry.elems[8].elems {
		flags := spec.field("flags").strings()
		if hasString(flags, "not_key") {
			continue
		}
		first, last, step, ok := specRange(spec, args)
		if !ok {
			return nil
		}
		if first == 0 {
			continue // keyword not found
		}
		for i := first; i <= last; i += step {
			keys = append(keys, foundKey{key: args[i], flags: flags})
		}
	}
	return keys
}

// specRange applies one spec to args: the first and last key positions and the step between
// them. first is 0 when the spec's keyword is absent; ok is false when the arguments do not fit.
func specRange(spec *metaNode, args [][]byte) (first, last, step int, ok bool) {
	argc := len(args)
	begin, find := spec.field("begin_search"), spec.field("find_keys")
	bs, fk := begin.field("spec"), find.field("spec")
	switch begin.field("type").str {
	case "index":
		first = int(bs.field("index").num)
	case "keyword":
		keyword, from := bs.field("keyword").str, int(bs.field("startfrom").num)
		start, end, dir := from, argc-1, 1
		if from < 0 {
			start, end, dir = argc+from, 1, -1
		}
		for i := start; i != end; i += dir {
			if i >= argc || i < 1 {
				break
			}
			if strings.EqualFold(string(args[i]), keyword) {
				first = i + 1
				break
			}
		}
		if first == 0 {
			return 0, 0, 0, true
		}
	default:
		return 0, 0, 0, false
	}
	switch find.field("type").str {
	case "range":
		lastKey, limit := int(fk.field("lastkey").num), int(fk.field("limit").num)
		switch {
		case lastKey >= 0:
			last = first + lastKey
		case limit == 0:
			last = argc + lastKey
		default:
			last = first + ((argc-first)/limit + lastKey)
		}
		step = int(fk.field("keystep").num)
	case "keynum":
		idx := first + int(fk.field("keynumidx").num)
		if idx >= argc {
			return 0, 0, 0, false
		}
		n, isNum := parseInt(args[idx])
		if !isNum || n < 0 || n > int64(argc) {
			return 0, 0, 0, false
		}
		first += int(fk.field("firstkey").num)
		last = first + int(n) - 1
		step = int(fk.field("keystep").num)
	default:
		return 0, 0, 0, false
	}
	if last >= argc || last < first || first >= argc || step < 1 {
		return 0, 0, 0, false
	}
	return first, last, step, true
}

// setKeys: SET writes its key, and reads it too with GET.
func setKeys(args [][]byte) []foundKey {
	flags := []string{"OW", "update"}
	for _, a := range args[3:] {
		if equalFold(a, "get") {
			flags = []string{"RW", "access", "update"}
		}
	}
	return []foundKey{{key: args[1], flags: flags}}
}

// bitfieldKeys: BITFIELD with only GET (and OVERFLOW) reads its key; anything else may write.
func bitfieldKeys(args [][]byte) []foundKey {
	readonly := true
	for i := 2; i < len(args); i++ {
		more := len(args) - i - 1
		switch {
		case equalFold(args[i], "get") && more >= 2:
			i += 2
		case equalFold(args[i], "overflow") && more >= 1:
			i++
		default:
			readonly = false
		}
		if !readonly {
			break
		}
	}
	if readonly {
		return []foundKey{{key: args[1], flags: []string{"RO", "access"}}}
	}
	return []foundKey{{key: args[1], flags: []string{"RW", "access", "update"}}}
}

// sortKeys: the key, and SORT's last STORE destination, skipping the arguments of LIMIT, GET
// and BY so that a pattern named "store" is not taken for the option.
func sortKeys(name string, args [][]byte) []foundKey {
	keys := []foundKey{{key: args[1], flags: []string{"RO", "access"}}}
	if name == "sort_ro" {
		return keys
	}
	var store []byte
	for i := 2; i < len(args); i++ {
		switch {
		case equalFold(args[i], "limit"):
			i += 2
		case equalFold(args[i], "get"), equalFold(args[i], "by"):
			i++
		case equalFold(args[i], "store") && i+1 < len(args):
			store = args[i+1]
			i++
		}
	}
	if store != nil {
		keys = append(keys, foundKey{key: store, flags: []string{"OW", "update"}})
	}
	return keys
}
