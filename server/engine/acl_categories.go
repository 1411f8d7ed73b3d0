package engine

// ACL categories, as Redis 7.0 assigns them: for every command and subcommand Redis has, the
// categories its COMMAND INFO entry lists (command_meta.go), so that ACL rules, ACL CAT and
// COMMAND INFO agree by construction. Container commands (CONFIG, CLIENT, OBJECT...) are @slow
// themselves; their subcommands carry categories of their own, and ACL rules name them as
// "config|get" (every subcommand Redis has, also those iocache's handler answers with the
// unknown-subcommand error, so that rules written for Redis are accepted). Commands of iocache's
// own (BENCHSPACE) get categories computed from their flags and group as Redis would.
// TestACLCategoriesMatchRedis compares every command's with Debian's redis-server.

import (
	"sort"
	"strings"
)

// aclCategories is Redis's ACLCommandCategories, in its order: ACL CAT lists them so, and the
// description of a user's command rules tries them so.
var aclCategories = []string{"keyspace", "read", "write", "set", "sortedset", "list", "hash", "string",
	"bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking", "dangerous",
	"connection", "transaction", "scripting"}

func categoryBit(name string) uint32 {
	for i, n := range aclCategories {
		if strings.EqualFold(n, name) {
			return 1 << i
		}
	}
	return 0
}

func categoryBits(names string) uint32 {
	var bits uint32
	for _, n := range strings.Fields(names) {
		bits |= categoryBit(n)
	}
	return bits
}

// groupCategory is the category a command group implies.
var groupCategory = map[string]string{"string": "string", "list": "list", "set": "set", "sorted-set": "sortedset",
	"hash": "hash", "bitmap": "bitmap", "hyperloglog": "hyperloglog", "geo": "geo", "stream": "stream",
	"pubsub": "pubsub", "generic": "keyspace", "transactions": "transaction", "scripting": "scripting",
	"connection": "connection"}

// commandCategories are a command's categories: those of its COMMAND INFO entry, or, for a
// command Redis does not have, those its flags and group imply.
func commandCategories(cmd *command) uint32 {
	if e := commandInfoEntry(cmd.name); e != nil {
		return entryCategories(e)
	}
	var c uint32
	if cmd.flags&cmdWrite != 0 {
		c |= categoryBit("write")
	}
	if cmd.flags&cmdReadonly != 0 && cmd.group != "scripting" {
		c |= categoryBit("read")
	}
	if cmd.flags&cmdAdmin != 0 {
		c |= categoryBits("admin dangerous")
	}
	if cmd.flags&cmdPubSub != 0 {
		c |= categoryBit("pubsub")
	}
	if cmd.flags&cmdFast != 0 {
		c |= categoryBit("fast")
	}
	if cmd.flags&cmdBlocking != 0 {
		c |= categoryBit("blocking")
	}
	c |= categoryBit(groupCategory[cmd.group])
	if c&categoryBit("fast") == 0 {
		c |= categoryBit("slow")
	}
	return c
}

// entryCategories are the categories a COMMAND INFO entry lists ("@write", "@hash", ...).
func entryCategories(e *metaNode) uint32 {
	var bits uint32
	for _, c := range e.elems[6].elems {
		bits |= categoryBit(strings.TrimPrefix(c.str, "@"))
	}
	return bits
}

// categoryNames lists the categories of bits, in Redis's order.
func categoryNames(bits uint32) []string {
	var out []string
	for i, n := range aclCategories {
		if bits&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// aclUnit is what ACL rules allow or deny: a command, or one subcommand of a container. id
// indexes users' permission bitmaps.
type aclUnit struct {
	id       int
	fullname string // "get", "config|get"
	cats     uint32
	cmd      *command
}

// aclTable numbers every command and subcommand once, at start, by original name (renames do not
// change what a rule names, as in Redis, whose rules name original commands).
type aclTable struct {
	units  []*aclUnit
	byName map[string]*aclUnit // "get", "config|get"
	// subs holds each container's subcommands by lower-case name.
	subs map[*command]map[string]*aclUnit
	top  map[*command]*aclUnit
}

func buildACLTable(builtin map[string]*command) *aclTable {
	t := &aclTable{byName: map[string]*aclUnit{}, subs: map[*command]map[string]*aclUnit{}, top: map[*command]*aclUnit{}}
	names := make([]string, 0, len(builtin))
	for n := range builtin {
		names = append(names, n)
	}
	sort.Strings(names)
	add := func(fullname string, cats uint32, cmd *command) *aclUnit {
		u := &aclUnit{id: len(t.units), fullname: fullname, cats: cats, cmd: cmd}
		t.units = append(t.units, u)
		t.byName[fullname] = u
		return u
	}
	for _, n := range names {
		cmd := builtin[n]
		t.top[cmd] = add(n, commandCategories(cmd), cmd)
	}
	for _, n := range names {
		cmd := builtin[n]
		for _, full := range subcommandNames(n) { // Redis's, for every container iocache has
			_, sub, _ := strings.Cut(full, "|")
			if t.subs[cmd] == nil {
				t.subs[cmd] = map[string]*aclUnit{}
			}
			t.subs[cmd][sub] = add(full, entryCategories(commandInfoEntry(full)), cmd)
		}
	}
	return t
}

// unitFor is the unit a call names: the subcommand when the command is a container and argv[1]
// is one of its subcommands, else the command.
func (t *aclTable) unitFor(cmd *command, argv [][]byte) *aclUnit {
	if subs := t.subs[cmd]; subs != nil && len(argv) > 1 {
		if u := subs[lowerASCII(string(argv[1]))]; u != nil {
			return u
		}
	}
	return t.top[cmd]
}
