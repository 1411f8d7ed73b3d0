package engine

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/iocache/iocache/server/cluster"
	"github.com/iocache/iocache/server/resp"
)

// Redis Cluster's commands. Without cluster-enabled they answer as redis-server 7.0 does with
// cluster-enabled no: READONLY, READWRITE, ASKING and every CLUSTER subcommand refuse with one
// error, after the same arity checks. With it, they answer as a Redis 7.0 cluster node, from
// the map the operator pushed (CLUSTERMAP SET), with the differences a node without a gossip bus
// has: CLUSTER MEET, REPLICATE and FAILOVER are refused (the operator places nodes and
// promotes replicas), every known node is "connected" with the map's epoch, and the bus port
// is 0. RESTORE-ASKING, which MIGRATE sends, is RESTORE that an importing slot accepts.

// cmdCluster checks the subcommand and its arity as Redis's command table does, then runs it
// (cluster mode) or refuses.
func cmdCluster(s *Server, c *client, argv [][]byte) {
	sub := lowerASCII(string(argv[1]))
	e := commandInfoEntry("cluster|" + sub)
	if e == nil {
		s.subcommandError(c, argv)
		return
	}
	if arity := int(e.elems[1].num); (arity > 0 && len(argv) != arity) || len(argv) < -arity {
		s.subcommandError(c, argv)
		return
	}
	if s.cluster == nil {
		s.addError(c, errClusterDisabled)
		return
	}
	if h := clusterSubcommands[sub]; h != nil {
		h(s, c, argv)
		return
	}
	s.subcommandError(c, argv)
}

var clusterSubcommands map[string]func(*Server, *client, [][]byte)

func init() {
	clusterSubcommands = map[string]func(*Server, *client, [][]byte){
		"help":                  cmdClusterHelp,
		"myid":                  func(s *Server, c *client, _ [][]byte) { c.w.BulkString(s.cluster.topo.Myself.ID) },
		"info":                  cmdClusterInfo,
		"nodes":                 func(s *Server, c *client, _ [][]byte) { c.w.Verbatim(s.cluster.topo.NodesText(false)) },
		"slots":                 cmdClusterSlots,
		"shards":                cmdClusterShards,
		"keyslot":               func(s *Server, c *client, argv [][]byte) { c.w.Int(int64(cluster.KeySlot(argv[2]))) },
		"countkeysinslot":       cmdClusterCountKeysInSlot,
		"getkeysinslot":         cmdClusterGetKeysInSlot,
		"addslots":              cmdClusterAddSlots,
		"delslots":              cmdClusterAddSlots,
		"addslotsrange":         cmdClusterAddSlots,
		"delslotsrange":         cmdClusterAddSlots,
		"flushslots":            cmdClusterFlushSlots,
		"setslot":               cmdClusterSetSlot,
		"reset":                 cmdClusterReset,
		"forget":                cmdClusterForget,
		"count-failure-reports": cmdClusterCountFailureReports,
		"replicas":              cmdClusterReplicas,
		"slaves":                cmdClusterReplicas,
		"links":                 func(s *Server, c *client, _ [][]byte) { c.w.Array(0) }, // no bus, no links
		"saveconfig":            cmdClusterSaveConfig,
		"bumpepoch":             cmdClusterBumpEpoch,
		"set-config-epoch":      cmdClusterSetConfigEpoch,
		"meet":                  cmdClusterByOperator,
		"replicate":             cmdClusterByOperator,
		"failover":              cmdClusterByOperator,
	}
}

func cmdClusterHelp(s *Server, c *client, _ [][]byte) {
	lines := []string{
		"CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"COUNTKEYSINSLOT <slot>", "GETKEYSINSLOT <slot> <count>", "INFO", "KEYSLOT <key>", "MYID", "NODES",
		"SHARDS", "SLOTS", "LINKS", "REPLICAS <node-id>", "COUNT-FAILURE-REPORTS <node-id>",
		"ADDSLOTS <slot> [<slot> ...]", "ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
		"DELSLOTS <slot> [<slot> ...]", "DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
		"FLUSHSLOTS", "FORGET <node-id>", "RESET [HARD|SOFT]", "SAVECONFIG", "BUMPEPOCH", "SET-CONFIG-EPOCH <epoch>",
		"SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)",
		"The map of nodes and slots is set by the operator with CLUSTERMAP SET <json>:",
		"MEET, REPLICATE and FAILOVER are the operator's.",
		"HELP",
	}
	c.w.Array(len(lines))
	for _, l := range lines {
		c.w.Simple(l)
	}
}

func cmdClusterByOperator(s *Server, c *client, argv [][]byte) {
	s.addError(c, "ERR CLUSTER "+strings.ToUpper(string(argv[1]))+" is not supported: the operator places nodes and promotes replicas, and pushes the map with CLUSTERMAP SET")
}

func cmdClusterInfo(s *Server, c *client, _ [][]byte) {
	topo := s.cluster.topo
	state := "ok"
	if s.clusterDown() {
		state = "fail"
	}
	covered := topo.Covered()
	var b strings.Builder
	for _, kv := range [][2]string{
		{"cluster_state", state},
		{"cluster_slots_assigned", strconv.Itoa(covered)},
		{"cluster_slots_ok", strconv.Itoa(covered)},
		{"cluster_slots_pfail", "0"},
		{"cluster_slots_fail", "0"},
		{"cluster_known_nodes", strconv.Itoa(len(topo.Nodes()))},
		{"cluster_size", strconv.Itoa(len(topo.Primaries()))},
		{"cluster_current_epoch", strconv.FormatUint(topo.Epoch, 10)},
		{"cluster_my_epoch", strconv.FormatUint(topo.Epoch, 10)},
		{"cluster_stats_messages_sent", "0"},
		{"cluster_stats_messages_received", "0"},
		{"total_cluster_links_buffer_limit_exceeded", "0"},
	} {
		b.WriteString(kv[0] + ":" + kv[1] + "\r\n")
	}
	c.w.Verbatim(b.String())
}

// writeClusterNode is one node of CLUSTER SLOTS: the preferred endpoint, the port, the ID and a
// map of the networking metadata that is not the preferred endpoint (Redis 7.0's layout).
func (s *Server) writeClusterNode(c *client, n *cluster.Node) {
	preferred := s.cfg.CompatValue("cluster-preferred-endpoint-type")
	c.w.Array(4)
	c.w.BulkString(cluster.Endpoint(n, preferred))
	c.w.Int(int64(n.Port))
	c.w.BulkString(n.ID)
	var meta [][2]string
	if preferred != "ip" {
		meta = append(meta, [2]string{"ip", n.IP})
	}
	if preferred != "hostname" && n.Hostname != "" {
		meta = append(meta, [2]string{"hostname", n.Hostname})
	}
	c.w.Map(len(meta))
	for _, kv := range meta {
		c.w.BulkString(kv[0])
		c.w.BulkString(kv[1])
	}
}

func cmdClusterSlots(s *Server, c *client, _ [][]byte) {
	topo := s.cluster.topo
	type entry struct {
		r [2]int
		n *cluster.Node
	}
	var entries []entry
	byNode := topo.RangesByNode()
	for _, n := range topo.Nodes() {
		if n.Primary == nil {
			for _, r := range byNode[n] {
				entries = append(entries, entry{r, n})
			}
		}
	}
	// Ascending by slot, as Redis lists them (up to 16,384 ranges for a fragmented map).
	slices.SortFunc(entries, func(a, b entry) int { return a.r[0] - b.r[0] })
	c.w.Array(len(entries))
	for _, e := range entries {
		replicas := topo.Replicas(e.n)
		c.w.Array(3 + len(replicas))
		c.w.Int(int64(e.r[0]))
		c.w.Int(int64(e.r[1]))
		s.writeClusterNode(c, e.n)
		for _, r := range replicas {
			s.writeClusterNode(c, r)
		}
	}
}

func cmdClusterShards(s *Server, c *client, _ [][]byte) {
	topo := s.cluster.topo
	preferred := s.cfg.CompatValue("cluster-preferred-endpoint-type")
	var primaries []*cluster.Node
	for _, n := range topo.Nodes() {
		if n.Primary == nil {
			primaries = append(primaries, n)
		}
	}
	byNode := topo.RangesByNode()
	c.w.Array(len(primaries))
	for _, p := range primaries {
		c.w.Map(2)
		c.w.BulkString("slots")
		ranges := byNode[p]
		c.w.Array(2 * len(ranges))
		for _, r := range ranges {
			c.w.Int(int64(r[0]))
			c.w.Int(int64(r[1]))
		}
		c.w.BulkString("nodes")
		members := append([]*cluster.Node{p}, topo.Replicas(p)...)
		c.w.Array(len(members))
		for _, n := range members {
			fields := 7
			if n.Hostname != "" {
				fields++
			}
			c.w.Map(fields)
			c.w.BulkString("id")
			c.w.BulkString(n.ID)
			c.w.BulkString("port")
			c.w.Int(int64(n.Port))
			c.w.BulkString("ip")
			c.w.BulkString(n.IP)
			c.w.BulkString("endpoint")
			c.w.BulkString(cluster.Endpoint(n, preferred))
			if n.Hostname != "" {
				c.w.BulkString("hostname")
				c.w.BulkString(n.Hostname)
			}
			c.w.BulkString("role")
			if n.Primary == nil {
				c.w.BulkString("master")
			} else {
				c.w.BulkString("replica")
			}
			c.w.BulkString("replication-offset")
			c.w.Int(s.clusterReplOffset(n))
			c.w.BulkString("health")
			c.w.BulkString("online")
		}
	}
}

// clusterReplOffset is a node's replication offset as this node knows it: its own, or what a
// replica of it last acknowledged; 0 for the others (there is no bus to tell them).
func (s *Server) clusterReplOffset(n *cluster.Node) int64 {
	if n != s.cluster.topo.Myself {
		return 0
	}
	if m := s.repl.master; m != nil {
		return m.offset
	}
	return s.repl.offset
}

// clusterSlotArg reads a slot argument: Redis's "Invalid or out of range slot" otherwise.
func (s *Server) clusterSlotArg(c *client, arg []byte) (int, bool) {
	v, ok := parseInt(arg)
	if !ok || v < 0 || v >= cluster.Slots {
		s.addError(c, "ERR Invalid or out of range slot")
		return 0, false
	}
	return int(v), true
}

func cmdClusterCountKeysInSlot(s *Server, c *client, argv [][]byte) {
	v, ok := s.intArg(c, argv[2])
	if !ok {
		return
	}
	if v < 0 || v >= cluster.Slots {
		s.addError(c, "ERR Invalid slot")
		return
	}
	c.w.Int(int64(s.dbs[0].CountInSlot(int(v))))
}

func cmdClusterGetKeysInSlot(s *Server, c *client, argv [][]byte) {
	slot, ok1 := parseInt(argv[2])
	n, ok2 := parseInt(argv[3])
	if !ok1 || !ok2 {
		s.addError(c, errNotInt)
		return
	}
	if slot < 0 || slot >= cluster.Slots || n < 0 {
		s.addError(c, "ERR Invalid slot or number of keys")
		return
	}
	db := s.dbs[0]
	count := min(int64(db.CountInSlot(int(slot))), n)
	c.w.Array(int(count))
	db.KeysInSlot(int(slot), int(count), func(key []byte) bool {
		c.w.Bulk(key)
		return true
	})
}

// cmdClusterAddSlots is ADDSLOTS, DELSLOTS and their RANGE forms: every argument is parsed, then
// every slot checked, before anything changes, as in Redis. Ranges are expanded into a bitmap
// of the 16,384 slots, so arguments that repeat a range cost nothing more than their parsing.
func cmdClusterAddSlots(s *Server, c *client, argv [][]byte) {
	sub := lowerASCII(string(argv[1]))
	add := strings.HasPrefix(sub, "add")
	var ranges [][2]int // no more than the arguments
	if strings.HasSuffix(sub, "range") {
		if len(argv)%2 == 1 {
			s.addError(c, "ERR wrong number of arguments for 'cluster|"+sub+"' command")
			return
		}
		for j := 2; j < len(argv); j += 2 {
			lo, ok := s.clusterSlotArg(c, argv[j])
			if !ok {
				return
			}
			hi, ok := s.clusterSlotArg(c, argv[j+1])
			if !ok {
				return
			}
			if lo > hi {
				s.addError(c, "ERR start slot number "+strconv.Itoa(lo)+" is greater than end slot number "+strconv.Itoa(hi))
				return
			}
			ranges = append(ranges, [2]int{lo, hi})
		}
	} else {
		for _, a := range argv[2:] {
			v, ok := s.clusterSlotArg(c, a)
			if !ok {
				return
			}
			ranges = append(ranges, [2]int{v, v})
		}
	}
	topo := s.cluster.topo
	var named [cluster.Slots]bool
	for _, r := range ranges {
		for v := r[0]; v <= r[1]; v++ {
			switch {
			case add && topo.Owner(v) != nil:
				s.addError(c, "ERR Slot "+strconv.Itoa(v)+" is already busy")
				return
			case !add && topo.Owner(v) == nil:
				s.addError(c, "ERR Slot "+strconv.Itoa(v)+" is already unassigned")
				return
			case named[v]:
				s.addError(c, "ERR Slot "+strconv.Itoa(v)+" specified multiple times")
				return
			}
			named[v] = true
		}
	}
	for v, ok := range named {
		switch {
		case !ok:
		case add:
			topo.SetOwner(v, topo.Myself)
			topo.Importing[v] = nil
		default:
			topo.SetOwner(v, nil)
			topo.Importing[v], topo.Migrating[v] = nil, nil
		}
	}
	s.clusterChanged()
	c.w.OK()
}

func cmdClusterFlushSlots(s *Server, c *client, _ [][]byte) {
	if s.dbs[0].Len() != 0 {
		s.addError(c, "ERR DB must be empty to perform CLUSTER FLUSHSLOTS.")
		return
	}
	topo := s.cluster.topo
	for v := range cluster.Slots {
		if topo.Owner(v) == topo.Myself {
			topo.SetOwner(v, nil)
		}
	}
	s.clusterChanged()
	c.w.OK()
}

// cmdClusterSetSlot is CLUSTER SETSLOT <slot> IMPORTING|MIGRATING|NODE <id> | STABLE, the steps
// of a slot move, with Redis 7.0's checks and errors.
func cmdClusterSetSlot(s *Server, c *client, argv [][]byte) {
	topo := s.cluster.topo
	if topo.Myself.Primary != nil {
		s.addError(c, "ERR Please use SETSLOT only with masters.")
		return
	}
	slot, ok := s.clusterSlotArg(c, argv[2])
	if !ok {
		return
	}
	action := lowerASCII(string(argv[3]))
	if (action == "stable" && len(argv) != 4) || (action != "stable" && len(argv) != 5) {
		s.addError(c, "ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP")
		return
	}
	var target *cluster.Node
	if len(argv) == 5 {
		target = topo.Lookup(string(argv[4]))
	}
	switch action {
	case "migrating", "importing":
		mine := topo.Owner(slot) == topo.Myself
		switch {
		case action == "migrating" && !mine:
			s.addError(c, "ERR I'm not the owner of hash slot "+strconv.Itoa(slot))
			return
		case action == "importing" && mine:
			s.addError(c, "ERR I'm already the owner of hash slot "+strconv.Itoa(slot))
			return
		case target == nil:
			s.addError(c, "ERR I don't know about node "+string(argv[4]))
			return
		case target.Primary != nil:
			s.addError(c, "ERR Target node is not a master")
			return
		}
		if action == "migrating" {
			topo.Migrating[slot] = target
		} else {
			topo.Importing[slot] = target
		}
	case "stable":
		topo.Importing[slot], topo.Migrating[slot] = nil, nil
	case "node":
		if target == nil {
			s.addError(c, "ERR Unknown node "+string(argv[4]))
			return
		}
		if target.Primary != nil {
			s.addError(c, "ERR Target node is not a master")
			return
		}
		if topo.Owner(slot) == topo.Myself && target != topo.Myself && s.dbs[0].CountInSlot(slot) != 0 {
			s.addError(c, "ERR Can't assign hashslot "+strconv.Itoa(slot)+" to a different node while I still hold keys for this hash slot.")
			return
		}
		if topo.Migrating[slot] != nil && target != topo.Myself && s.dbs[0].CountInSlot(slot) == 0 {
			topo.Migrating[slot] = nil
		}
		if target == topo.Myself && topo.Importing[slot] != nil {
			topo.Importing[slot] = nil
		}
		topo.SetOwner(slot, target)
	default:
		s.addError(c, "ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP")
		return
	}
	s.clusterChanged()
	c.w.OK()
}

func cmdClusterReset(s *Server, c *client, argv [][]byte) {
	hard := false
	if len(argv) == 3 {
		switch lowerASCII(string(argv[2])) {
		case "hard":
			hard = true
		case "soft":
		default:
			s.addError(c, errSyntax)
			return
		}
	} else if len(argv) > 3 {
		s.addError(c, errSyntax)
		return
	}
	topo := s.cluster.topo
	if topo.Myself.Primary == nil && s.dbs[0].Len() != 0 {
		s.addError(c, "ERR CLUSTER RESET can't be called with master nodes containing keys")
		return
	}
	topo.Reset(hard)
	s.clusterChanged()
	c.w.OK()
}

func cmdClusterForget(s *Server, c *client, argv [][]byte) {
	topo := s.cluster.topo
	n := topo.Lookup(string(argv[2]))
	switch {
	case n == nil:
		s.addError(c, "ERR Unknown node "+string(argv[2]))
	case n == topo.Myself:
		s.addError(c, "ERR I tried hard but I can't forget myself...")
	case topo.Myself.Primary == n:
		s.addError(c, "ERR Can't forget my master!")
	default:
		topo.Forget(n)
		s.clusterChanged()
		c.w.OK()
	}
}

func cmdClusterCountFailureReports(s *Server, c *client, argv [][]byte) {
	if s.cluster.topo.Lookup(string(argv[2])) == nil {
		s.addError(c, "ERR Unknown node "+string(argv[2]))
		return
	}
	c.w.Int(0) // no bus, no failure reports: the operator detects failures
}

func cmdClusterReplicas(s *Server, c *client, argv [][]byte) {
	topo := s.cluster.topo
	n := topo.Lookup(string(argv[2]))
	if n == nil {
		s.addError(c, "ERR Unknown node "+string(argv[2]))
		return
	}
	if n.Primary != nil {
		s.addError(c, "ERR The specified node is not a master")
		return
	}
	replicas := topo.Replicas(n)
	c.w.Array(len(replicas))
	for _, r := range replicas {
		c.w.BulkString(topo.NodeLine(r, false))
	}
}

func cmdClusterSaveConfig(s *Server, c *client, _ [][]byte) {
	if err := s.saveClusterConfig(); err != nil {
		s.addError(c, "ERR error saving the cluster node config: "+err.Error())
		return
	}
	c.w.OK()
}

func cmdClusterBumpEpoch(s *Server, c *client, _ [][]byte) {
	topo := s.cluster.topo
	topo.Epoch++
	s.clusterChanged()
	c.w.Simple("BUMPED " + strconv.FormatUint(topo.Epoch, 10))
}

func cmdClusterSetConfigEpoch(s *Server, c *client, argv [][]byte) {
	v, ok := s.intArg(c, argv[2])
	if !ok {
		return
	}
	topo := s.cluster.topo
	switch {
	case v < 0:
		s.addError(c, "ERR Invalid config epoch specified: "+strconv.FormatInt(v, 10))
	case len(topo.Nodes()) > 1:
		s.addError(c, "ERR The user can assign a config epoch only when the node does not know any other node.")
	case topo.Epoch != 0:
		s.addError(c, "ERR Node config epoch is already non-zero")
	default:
		topo.Epoch = uint64(v)
		s.clusterChanged()
		c.w.OK()
	}
}

// cmdClusterMap is CLUSTERMAP SET <json> | GET: the operator's push of the whole map with its
// epoch, and what the node serves now. A map older than the one served is refused, so a push
// that arrives late cannot undo a newer one.
func cmdClusterMap(s *Server, c *client, argv [][]byte) {
	if s.cluster == nil {
		s.addError(c, errClusterDisabled)
		return
	}
	switch {
	case resp.EqualFold(argv[1], "get") && len(argv) == 2:
		b, _ := json.Marshal(s.cluster.topo.Export())
		c.w.Bulk(b)
	case resp.EqualFold(argv[1], "set") && len(argv) == 3:
		m, err := cluster.ParseMap(argv[2])
		if err == nil {
			err = s.cluster.topo.Apply(m)
		}
		if err != nil {
			if errors.Is(err, cluster.ErrStale) {
				s.addError(c, "STALE "+err.Error())
				return
			}
			s.addError(c, "ERR "+err.Error())
			return
		}
		s.clusterChanged()
		c.w.OK()
	default:
		s.addError(c, errSyntax)
	}
}

func cmdReadOnlyMode(s *Server, c *client, _ [][]byte) {
	if s.cluster == nil {
		s.addError(c, errClusterDisabled)
		return
	}
	c.flags |= flagReadonly
	c.w.OK()
}

func cmdReadWriteMode(s *Server, c *client, _ [][]byte) {
	if s.cluster == nil {
		s.addError(c, errClusterDisabled)
		return
	}
	c.flags &^= flagReadonly
	c.w.OK()
}

func cmdAsking(s *Server, c *client, _ [][]byte) {
	if s.cluster == nil {
		s.addError(c, errClusterDisabled)
		return
	}
	c.flags |= flagAsking
	c.w.OK()
}

// clusterCommands registers this file's commands (see table.go).
var clusterCommands = []commandSpec{
	{name: "cluster", h: cmdCluster},
	{name: "readonly", h: cmdReadOnlyMode},
	{name: "readwrite", h: cmdReadWriteMode},
	{name: "asking", h: cmdAsking},
	{name: "restore-asking", h: cmdRestore},
	{name: "clustermap", h: cmdClusterMap, meta: &commandMeta{-2, cmdAdmin | cmdNoScript | cmdStale | cmdLoading, 0, 0, 0, "cluster",
		"Sets (SET <json>) or returns (GET) the cluster map: nodes, slots and epoch (iocache: the operator's push)."}},
}
