package engine

// What a call names, for the ACL check: its keys, found with Redis 7.0's key specs where COMMAND
// GETKEYS finds them (keyspecs.go, from Redis's own COMMAND INFO). A key needs read access when
// the command returns or copies its data (ACCESS), write access when it inserts, deletes or
// updates (INSERT, DELETE, UPDATE), and a key the command only names (EXISTS, TYPE) needs a
// matching pattern of either kind. TestACLKeyPermissionsMatchRedis compares the decisions with
// redis-server's ACL DRYRUN.

import (
	"github.com/iocache/iocache/server/acl"
	"github.com/iocache/iocache/server/resp"
)

// appendACLKeys appends to keys the keys of argv, a call of the unit of that full name, and what
// each needs; found is appendKeys's scratch. It allocates nothing once the two have grown.
func appendACLKeys(found []foundKey, keys []acl.Key, name string, cmd *command, argv [][]byte) ([]foundKey, []acl.Key) {
	found, ok := appendKeys(found, name, argv)
	if !ok {
		// Keys Redis's specs do not place for this argv (a syntax error the command will report)
		// or a command without specs: every key the command names needs full access.
		return found, appendUnplacedKeys(keys, cmd, argv)
	}
	for _, k := range found {
		keys = append(keys, acl.Key{Name: k.key, Pos: k.pos, Perm: k.perm})
	}
	return found, keys
}

// appendUnplacedKeys appends the keys a command names, each needing read and write, at no known
// position: its first/last/step positions (as commandKeys finds them, without allocating), and
// for commands whose keys move (numkeys arguments, STREAMS, STORE options) the keys their syntax
// places.
func appendUnplacedKeys(dst []acl.Key, cmd *command, argv [][]byte) []acl.Key {
	add := func(k []byte) { dst = append(dst, acl.Key{Name: k, Perm: acl.ReadWrite}) }
	numkeysAt := func(i int) [][]byte {
		if len(argv) <= i {
			return nil
		}
		n, ok := parseInt(argv[i])
		if !ok || n < 0 {
			return nil
		}
		end := min(int64(len(argv)), int64(i+1)+n)
		return argv[i+1 : end]
	}
	var keys [][]byte // a part of argv
	switch cmd.name {
	case "eval", "evalsha", "eval_ro", "evalsha_ro", "blmpop", "bzmpop":
		keys = numkeysAt(2)
	case "lmpop", "zmpop", "sintercard", "zinter", "zunion", "zdiff", "zintercard":
		keys = numkeysAt(1)
	case "zunionstore", "zinterstore", "zdiffstore":
		add(argv[1])
		keys = numkeysAt(2)
	case "xread", "xreadgroup":
		for i := 1; i < len(argv); i++ {
			if resp.EqualFold(argv[i], "streams") {
				rest := argv[i+1:]
				keys = rest[:len(rest)/2]
				break
			}
		}
	case "sort", "sort_ro", "georadius", "georadiusbymember":
		add(argv[1])
		for i := 2; i+1 < len(argv); i++ {
			if resp.EqualFold(argv[i], "store") || resp.EqualFold(argv[i], "storedist") {
				add(argv[i+1])
			}
		}
	default:
		if cmd.firstKey != 0 {
			last := cmd.lastKey
			if last < 0 {
				last = len(argv) + last
			}
			for i := cmd.firstKey; i <= last && i < len(argv); i += cmd.step {
				add(argv[i])
			}
		}
	}
	for _, k := range keys {
		add(k)
	}
	return dst
}
