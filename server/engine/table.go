package engine

// Each command family registers its commands next to their handlers, in a list at the end of the
// family's file (stringCommands in cmd_string.go, and so on), with Redis's arity, flags and key
// positions (as COMMAND reports them, so that client libraries and redis-cli route and hint
// correctly). buildCommandTable gathers the lists.

// commandSpec is one command's registration: name, handler, arity (n: exactly n arguments, the
// name included; -n: at least n), flags, first key, last key, key step, group and summary.
type commandSpec struct {
	name             string
	h                func(*Server, *client, [][]byte)
	arity, flags     int
	first, last, stp int
	group            string
	summary          string
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
			cmd := &command{name: sp.name, handler: sp.h, arity: sp.arity, flags: sp.flags,
				firstKey: sp.first, lastKey: sp.last, step: sp.stp, group: sp.group, summary: sp.summary}
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
				if e := commandInfoEntry(st.name); e != nil {
					st.arity = int(e.elems[1].num) // Redis's, checked before the container runs
				}
				cmd.subs[sub] = st
			}
			t[sp.name] = cmd
		}
	}
	return t
}
