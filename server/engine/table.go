package engine

import "slices"

// Each command family registers its commands next to their handlers, in a list at the end of the
// family's file (stringCommands in cmd_string.go, and so on). A registration is the name and the
// handler: arity, flags, key positions, group and summary are Redis 7.0's own, read from the
// COMMAND INFO and COMMAND DOCS replies embedded in redis_commands.resp (command_meta.go), the
// same source COMMAND, COMMAND GETKEYS, the key specs and the ACL categories answer from. So the
// table, what clients are told and what ACL checks agree by construction, and adding a command
// of Redis's touches its family's file and nothing else. A registration names only what iocache
// adds or changes, each with why; TestCommandTableAgreesWithRedis fails when one of those no
// longer differs from Redis. buildCommandTable gathers the lists.

// commandSpec is one command's registration.
type commandSpec struct {
	name string
	h    func(*Server, *client, [][]byte)
	// own holds flags on top of Redis's: those Redis keeps but COMMAND INFO hides
	// (may_replicate, touches-arbitrary-keys), iocache's own (subscribed: allowed in RESP2
	// subscribed mode), and a container's (Redis flags its subcommands; iocache checks the
	// container's).
	own int
	// meta is the whole metadata of a command Redis 7.0 does not have (BENCHSPACE) or whose
	// metadata iocache changes; nil for the others.
	meta *commandMeta
}

// commandMeta is a command's metadata: arity (n: exactly n arguments, the name included; -n: at
// least n), flags, first key, last key, key step, group and summary.
type commandMeta struct {
	arity, flags      int
	first, last, step int
	group, summary    string
}

// redisMetaOf is Redis 7.0's metadata for a command, from redis_commands.resp; false for a
// command Redis does not have. Flags COMMAND INFO names but the table has no bit for
// (movablekeys, skip_slowlog...) are left out.
func redisMetaOf(name string) (commandMeta, bool) {
	e := commandInfoEntry(name)
	if e == nil {
		return commandMeta{}, false
	}
	m := commandMeta{arity: int(e.elems[1].num), first: int(e.elems[3].num), last: int(e.elems[4].num), step: int(e.elems[5].num)}
	for _, f := range e.elems[2].strings() {
		if i := slices.Index(flagNames, f); i >= 0 && f != "" {
			m.flags |= 1 << i
		}
	}
	if d := commandDocsEntry(name); d != nil {
		m.group, m.summary = d.field("group").str, d.field("summary").str
	}
	return m, true
}

// metaOf is the metadata a registration gives its command.
func (sp *commandSpec) metaOf() commandMeta {
	if sp.meta != nil {
		return *sp.meta
	}
	m, ok := redisMetaOf(sp.name)
	if !ok {
		panic("command " + sp.name + " is not Redis 7.0's: its registration must give its metadata")
	}
	m.flags |= sp.own
	return m
}

var commandFamilies = [][]commandSpec{
	aclCommands,
	benchspaceCommands,
	bitmapCommands,
	clusterCommands,
	connCommands,
	dumpCommands,
	functionCommands,
	geoCommands,
	hashCommands,
	hyperloglogCommands,
	infoCommands,
	keysCommands,
	listCommands,
	failoverCommands,
	migrateCommands,
	moduleCommands,
	mpopCommands,
	multiCommands,
	persistCommands,
	pubsubCommands,
	replicationCommands,
	scriptCommands,
	serverCommands,
	setCommands,
	shardPubsubCommands,
	slowlogCommands,
	sortCommands,
	streamCommands,
	streamGroupCommands,
	stringCommands,
	zsetAlgebraCommands,
	zsetCommands,
}

func buildCommandTable() map[string]*command {
	t := map[string]*command{}
	for _, family := range commandFamilies {
		for _, sp := range family {
			if _, dup := t[sp.name]; dup {
				panic("command registered twice: " + sp.name)
			}
			m := sp.metaOf()
			cmd := &command{name: sp.name, handler: sp.h, arity: m.arity, flags: m.flags,
				firstKey: m.first, lastKey: m.last, step: m.step, group: m.group, summary: m.summary}
			subs, _ := containerSubcommands(sp.name)
			for _, sub := range subs {
				if cmd.subNames == nil {
					cmd.subNames = map[string]string{}
				}
				cmd.subNames[sub] = sp.name + "|" + sub
				if cmd.subs == nil {
					cmd.subs = map[string]*command{}
				}
				st := &command{name: sp.name + "|" + sub}
				if m, ok := redisMetaOf(st.name); ok {
					// Redis's: the arity is checked before the container runs, and the flags
					// say whether monitors may see it.
					st.arity, st.flags = m.arity, m.flags
				}
				cmd.subs[sub] = st
			}
			t[sp.name] = cmd
		}
	}
	return t
}
