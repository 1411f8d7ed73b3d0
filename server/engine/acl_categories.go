package engine

// ACL categories, as Redis 7.0 assigns them: each command's come from its flags (write, readonly,
// admin, pubsub, fast, blocking; @slow when not @fast) and its group (the data type, @keyspace for
// generic key commands, @connection, @transaction, @scripting), plus the few that Redis's command
// table names explicitly (categoryExtras). Container commands (CONFIG, CLIENT, OBJECT...) are
// @slow themselves; their subcommands carry categories of their own (subcommandCategories), and
// ACL rules name them as "config|get". COMMAND INFO and ACL CAT report what is computed here, and
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

// categoryExtras are the categories Redis's command table gives a command beyond its flags and
// group (add), or that its group would imply but Redis does not give it (remove).
var categoryExtras = map[string]struct{ add, remove string }{
	"command":  {add: "connection"},
	"dbsize":   {add: "keyspace"},
	"flushall": {add: "keyspace dangerous"},
	"flushdb":  {add: "keyspace dangerous"},
	"swapdb":   {add: "keyspace dangerous"},
	"info":     {add: "dangerous"},
	"keys":     {add: "dangerous"},
	"lastsave": {add: "admin dangerous"},
	"role":     {add: "admin dangerous"},
	"restore":  {add: "dangerous"},
	"sort":     {add: "set sortedset list dangerous", remove: "keyspace"},
	"sort_ro":  {add: "set sortedset list dangerous", remove: "keyspace"},
	"wait":     {add: "connection", remove: "keyspace blocking"},
}

// containerCategories are the categories of container commands themselves (their subcommands
// have their own); command is also @connection.
var containerCategories = map[string]string{"command": "connection slow"}

// subcommandCategories are Redis 7.0's subcommands of the container commands iocache has, with
// their categories. ACL rules may name each one ("+config|get"), also those iocache's handler
// answers with the unknown-subcommand error, so that rules written for Redis are accepted.
var subcommandCategories = map[string]string{
	"acl|cat":                 "slow",
	"acl|deluser":             "admin dangerous slow",
	"acl|dryrun":              "admin dangerous slow",
	"acl|genpass":             "slow",
	"acl|getuser":             "admin dangerous slow",
	"acl|help":                "slow",
	"acl|list":                "admin dangerous slow",
	"acl|load":                "admin dangerous slow",
	"acl|log":                 "admin dangerous slow",
	"acl|save":                "admin dangerous slow",
	"acl|setuser":             "admin dangerous slow",
	"acl|users":               "admin dangerous slow",
	"acl|whoami":              "slow",
	"client|caching":          "connection slow",
	"client|getname":          "connection slow",
	"client|getredir":         "connection slow",
	"client|help":             "connection slow",
	"client|id":               "connection slow",
	"client|info":             "connection slow",
	"client|kill":             "admin connection dangerous slow",
	"client|list":             "admin connection dangerous slow",
	"client|no-evict":         "admin connection dangerous slow",
	"client|pause":            "admin connection dangerous slow",
	"client|reply":            "connection slow",
	"client|setname":          "connection slow",
	"client|tracking":         "connection slow",
	"client|trackinginfo":     "connection slow",
	"client|unblock":          "admin connection dangerous slow",
	"client|unpause":          "admin connection dangerous slow",
	"command|count":           "connection slow",
	"command|docs":            "connection slow",
	"command|getkeys":         "connection slow",
	"command|getkeysandflags": "connection slow",
	"command|help":            "connection slow",
	"command|info":            "connection slow",
	"command|list":            "connection slow",
	"config|get":              "admin dangerous slow",
	"config|help":             "slow",
	"config|resetstat":        "admin dangerous slow",
	"config|rewrite":          "admin dangerous slow",
	"config|set":              "admin dangerous slow",
	"function|delete":         "write slow scripting",
	"function|dump":           "slow scripting",
	"function|flush":          "write slow scripting",
	"function|help":           "slow scripting",
	"function|kill":           "slow scripting",
	"function|list":           "slow scripting",
	"function|load":           "write slow scripting",
	"function|restore":        "write slow scripting",
	"function|stats":          "slow scripting",
	"module|help":             "slow",
	"module|list":             "admin dangerous slow",
	"module|load":             "admin dangerous slow",
	"module|loadex":           "admin dangerous slow",
	"module|unload":           "admin dangerous slow",
	"latency|doctor":          "admin dangerous slow",
	"latency|graph":           "admin dangerous slow",
	"latency|help":            "slow",
	"latency|histogram":       "admin dangerous slow",
	"latency|history":         "admin dangerous slow",
	"latency|latest":          "admin dangerous slow",
	"latency|reset":           "admin dangerous slow",
	"memory|doctor":           "slow",
	"memory|help":             "slow",
	"memory|malloc-stats":     "slow",
	"memory|purge":            "slow",
	"memory|stats":            "slow",
	"memory|usage":            "read slow",
	"object|encoding":         "keyspace read slow",
	"object|freq":             "keyspace read slow",
	"object|help":             "keyspace slow",
	"object|idletime":         "keyspace read slow",
	"object|refcount":         "keyspace read slow",
	"pubsub|channels":         "pubsub slow",
	"pubsub|help":             "slow",
	"pubsub|numpat":           "pubsub slow",
	"pubsub|numsub":           "pubsub slow",
	"pubsub|shardchannels":    "pubsub slow",
	"pubsub|shardnumsub":      "pubsub slow",
	"script|debug":            "scripting slow",
	"script|exists":           "scripting slow",
	"script|flush":            "scripting slow",
	"script|help":             "scripting slow",
	"script|kill":             "scripting slow",
	"script|load":             "scripting slow",
	"slowlog|get":             "admin dangerous slow",
	"slowlog|help":            "slow",
	"slowlog|len":             "admin dangerous slow",
	"slowlog|reset":           "admin dangerous slow",
	"xgroup|create":           "slow stream write",
	"xgroup|createconsumer":   "slow stream write",
	"xgroup|delconsumer":      "slow stream write",
	"xgroup|destroy":          "slow stream write",
	"xgroup|help":             "slow stream",
	"xgroup|setid":            "slow stream write",
	"xinfo|consumers":         "read slow stream",
	"xinfo|groups":            "read slow stream",
	"xinfo|help":              "slow stream",
	"xinfo|stream":            "read slow stream",
}

// commandCategories computes a command's categories from its flags, group and Redis's extras.
func commandCategories(cmd *command) uint32 {
	if cats, ok := containerCategories[cmd.name]; ok {
		return categoryBits(cats)
	}
	if cmd.hasSubcommands() {
		return categoryBits("slow")
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
	if x, ok := categoryExtras[cmd.name]; ok {
		c |= categoryBits(x.add)
		c &^= categoryBits(x.remove)
	}
	if c&categoryBit("fast") == 0 {
		c |= categoryBit("slow")
	}
	return c
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
	subNames := make([]string, 0, len(subcommandCategories))
	for n := range subcommandCategories {
		subNames = append(subNames, n)
	}
	sort.Strings(subNames)
	for _, full := range subNames {
		parent, sub, _ := strings.Cut(full, "|")
		cmd := builtin[parent]
		if cmd == nil {
			continue
		}
		if t.subs[cmd] == nil {
			t.subs[cmd] = map[string]*aclUnit{}
		}
		t.subs[cmd][sub] = add(full, categoryBits(subcommandCategories[full]), cmd)
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

// hasSubcommands reports whether cmd is a container command, per Redis 7.0's command table.
func (cmd *command) hasSubcommands() bool {
	_, ok := containerNames[cmd.name]
	return ok
}

var containerNames = func() map[string]bool {
	m := map[string]bool{}
	for full := range subcommandCategories {
		parent, _, _ := strings.Cut(full, "|")
		m[parent] = true
	}
	return m
}()
