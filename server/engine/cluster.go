package engine

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/iocache/iocache/server/cluster"
)

// Cluster mode (cluster-enabled yes): the node serves the slots the map gives it and redirects
// every other key as a Redis Cluster node does (MOVED, ASK, CROSSSLOT, TRYAGAIN, CLUSTERDOWN),
// so cluster-aware clients work unchanged. The map comes from the operator (CLUSTERMAP SET, with
// an epoch) rather than from a gossip bus: Kubernetes holds the truth, the operator writes it,
// and no node elects or decides anything. Slot moves use Redis's own commands (CLUSTER SETSLOT
// IMPORTING / MIGRATING / NODE, ASKING, MIGRATE ... KEYS), so a client caught mid-move is
// redirected exactly as Redis would redirect it. The commands are in cmd_cluster.go.

// clusterState is a cluster node's state, owned by the main thread.
type clusterState struct {
	topo *cluster.Topology
	// found is routing's key buffer, reused so that routing allocates nothing.
	found []foundKey
}

// Redis 7.0's redirection errors.
const (
	errCrossSlot       = "CROSSSLOT Keys in request don't hash to the same slot"
	errTryAgain        = "TRYAGAIN Multiple keys request during rehashing of slot"
	errClusterDown     = "CLUSTERDOWN The cluster is down"
	errClusterDownRO   = "CLUSTERDOWN The cluster is down and only accepts read commands"
	errSlotNotServed   = "CLUSTERDOWN Hash slot not served"
	errClusterDisabled = "ERR This instance has cluster support disabled"
)

// initCluster makes this server a cluster node: its ID and map from cluster-config-file when a
// previous run left one (a restarted pod keeps its identity and serves its last map until the
// operator pushes a newer one), else a new ID and no slots.
func (s *Server) initCluster() error {
	me := cluster.Node{ID: cluster.NewID()}
	s.announce(&me)
	s.cluster = &clusterState{topo: cluster.New(me)}
	path := s.clusterConfigPath()
	b, err := os.ReadFile(path)
	switch {
	case os.IsNotExist(err) || (err == nil && len(bytes.TrimSpace(b)) == 0):
		return s.saveClusterConfig()
	case err != nil:
		return fmt.Errorf("reading cluster-config-file: %w", err)
	}
	myID, m, err := cluster.ParseNodesConf(string(b))
	if err != nil {
		return fmt.Errorf("cluster-config-file %s is corrupted: %v", path, err)
	}
	me.ID = myID
	topo := cluster.New(me)
	if err := topo.Apply(m); err != nil {
		return fmt.Errorf("cluster-config-file %s: %v", path, err)
	}
	s.cluster.topo = topo
	return nil
}

// announce sets n's address from cluster-announce-* (the listening ports by default).
func (s *Server) announce(n *cluster.Node) {
	cfg := s.cfg
	n.IP, n.Hostname, n.Port, n.TLSPort = cfg.CompatValue("cluster-announce-ip"), cfg.CompatValue("cluster-announce-hostname"), cfg.Port, cfg.TLSPort
	if p, _ := strconv.Atoi(cfg.CompatValue("cluster-announce-port")); p > 0 {
		n.Port = p
	}
	if p, _ := strconv.Atoi(cfg.CompatValue("cluster-announce-tls-port")); p > 0 {
		n.TLSPort = p
	}
}

// applyClusterAnnounce is CONFIG SET cluster-announce-*: this node's address changes now, as in
// Redis; the operator's next map names it again.
func (s *Server) applyClusterAnnounce() {
	if s.cluster == nil {
		return
	}
	s.announce(s.cluster.topo.Myself)
	s.clusterChanged()
}

func (s *Server) clusterConfigPath() string {
	return filepath.Join(s.cfg.Dir, s.cfg.CompatValue("cluster-config-file"))
}

// saveClusterConfig writes the map to cluster-config-file, atomically (a temporary file renamed
// over it), after every change of the map, as Redis does.
func (s *Server) saveClusterConfig() error {
	path := s.clusterConfigPath()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(s.cluster.topo.NodesConf()), 0o600); err != nil {
		return fmt.Errorf("writing cluster-config-file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing cluster-config-file: %w", err)
	}
	return nil
}

// clusterChanged saves the map after a change; a failure is logged (Redis exits; the map in
// memory is right, and the operator pushes it again after a restart).
func (s *Server) clusterChanged() {
	if err := s.saveClusterConfig(); err != nil {
		s.logf(logWarning, "Can't update the cluster config file: %v", err)
	}
}

// markKeyless flags the commands that can never name a key, so that routing them costs one
// branch. Containers are routed by their subcommand's specs.
func markKeyless(commands map[string]*command) {
	for name, cmd := range commands {
		specs, _ := commandKeySpecs(name)
		switch name {
		case "set", "bitfield": // one key, argv[1]: the specs' flags vary, not where the key is
			cmd.keyRange = &keySpec{index: 1, keyStep: 1}
			continue
		case "sort", "sort_ro", "migrate", "exec", "spublish", "ssubscribe", "sunsubscribe":
			continue // their own key finders (keyspecs.go), or routed apart (routeKeys)
		}
		cmd.keyless = len(specs) == 0 && cmd.subNames == nil
		if len(specs) == 1 && cmd.subNames == nil && specs[0].keyword == "" && !specs[0].keynum && specs[0].limit == 0 {
			cmd.keyRange = &specs[0]
		}
	}
}

// fullCoverage reports whether the cluster must refuse keys while some slot has no owner
// (cluster-require-full-coverage, Redis's default yes).
func (s *Server) fullCoverage() bool {
	return s.cfg.CompatValue("cluster-require-full-coverage") != "no"
}

// clusterDown is Redis's cluster_state:fail: a slot has no owner while full coverage is required.
func (s *Server) clusterDown() bool {
	return s.cluster.topo.Covered() < cluster.Slots && s.fullCoverage()
}

// route is what routing learned of one command's keys.
type route struct {
	slot                     int
	first                    []byte
	owner                    *cluster.Node
	migrating, importing     bool
	multiple                 bool
	missing, existing        int
	write, pubsubShard, keys bool
}

// clusterRoute is Redis's getNodeByQuery: "" when this node serves the command (or, for EXEC,
// every queued command), else the error that redirects the client.
func (s *Server) clusterRoute(c *client, cmd *command, argv [][]byte) string {
	if cmd.keyless || c.isMaster {
		return ""
	}
	var r route
	if cmd.name == "exec" {
		if c.flags&flagMulti == 0 {
			return ""
		}
		for _, q := range c.multiQueue {
			if msg := s.routeKeys(&r, q.cmd, q.argv); msg != "" {
				return msg
			}
		}
	} else if msg := s.routeKeys(&r, cmd, argv); msg != "" {
		return msg
	}
	if !r.keys {
		return ""
	}
	return s.routeDecide(c, cmd, &r)
}

// routeKeys adds one command's keys to r; an error when a slot has no owner or the keys span
// slots.
func (s *Server) routeKeys(r *route, cmd *command, argv [][]byte) string {
	if cmd.keyless {
		return ""
	}
	if cmd.flags&cmdWrite != 0 || (cmd.subNames != nil && cmd.statsOf(argv).flags&cmdWrite != 0) {
		r.write = true
	}
	if sp := cmd.keyRange; sp != nil { // most commands: no key buffer, no spec walk
		first, last, step, fits := sp.place(argv)
		if !fits || first == 0 {
			return ""
		}
		for at := first; at <= last; at += step {
			if msg := s.routeKey(r, argv[at], false); msg != "" {
				return msg
			}
		}
		return ""
	}
	cl := s.cluster
	found := cl.found[:0]
	pubsubShard := false
	switch cmd.name {
	case "spublish":
		found, pubsubShard = append(found, foundKey{key: argv[1]}), true
	case "ssubscribe", "sunsubscribe":
		for _, ch := range argv[1:] {
			found = append(found, foundKey{key: ch})
		}
		pubsubShard = true
	default:
		name := cmd.name
		if cmd.subNames != nil && len(argv) > 1 {
			if name = cmd.fullName(argv[1]); name == "" {
				return ""
			}
		}
		found, _ = appendKeys(found, name, argv)
	}
	r.pubsubShard = r.pubsubShard || pubsubShard
	msg := ""
	for i := range found {
		if msg = s.routeKey(r, found[i].key, pubsubShard); msg != "" {
			break
		}
	}
	clear(found) // the arguments' buffers outlive the call
	cl.found = found[:0]
	return msg
}

// routeKey adds one key to r.
func (s *Server) routeKey(r *route, key []byte, pubsubShard bool) string {
	topo := s.cluster.topo
	slot := cluster.KeySlot(key)
	if !r.keys {
		r.keys, r.first, r.slot = true, key, slot
		r.owner = topo.Owner(slot)
		if r.owner == nil {
			return errSlotNotServed
		}
		if r.owner == topo.Myself && topo.Migrating[slot] != nil {
			r.migrating = true
		} else if topo.Importing[slot] != nil {
			r.importing = true
		}
	} else if slot != r.slot {
		return errCrossSlot
	} else if !bytes.Equal(key, r.first) {
		r.multiple = true
	}
	if (r.migrating || r.importing) && !pubsubShard {
		db := s.dbs[0]
		if ref, ok := db.Find(key); ok {
			if exp, has := db.ExpireAt(ref); !has || exp > s.nowMs {
				r.existing++
				return ""
			}
		}
		r.missing++
	}
	return ""
}

// routeDecide redirects a command whose keys all hash to r.slot, as Redis 7.0 does.
func (s *Server) routeDecide(c *client, cmd *command, r *route) string {
	topo := s.cluster.topo
	if s.clusterDown() {
		switch {
		case r.pubsubShard:
			if s.cfg.CompatValue("cluster-allow-pubsubshard-when-down") != "yes" {
				return errClusterDown
			}
		case s.cfg.CompatValue("cluster-allow-reads-when-down") != "yes":
			return errClusterDown
		case r.write:
			return errClusterDownRO
		}
	}
	if (r.migrating || r.importing) && cmd.name == "migrate" {
		return "" // MIGRATE moves keys of an open slot from here, whoever owns it now
	}
	if r.migrating && r.missing > 0 {
		if r.existing > 0 {
			return errTryAgain
		}
		return s.redirect("ASK", r.slot, topo.Migrating[r.slot])
	}
	if r.importing && (c.flags&flagAsking != 0 || cmd.name == "restore-asking") {
		if r.multiple && r.missing > 0 {
			return errTryAgain
		}
		return ""
	}
	if c.flags&flagReadonly != 0 && !r.write && topo.Myself.Primary != nil && topo.Myself.Primary == r.owner {
		return ""
	}
	if r.owner != topo.Myself {
		return s.redirect("MOVED", r.slot, r.owner)
	}
	return ""
}

// redirect is a MOVED or ASK error naming the node's preferred endpoint.
func (s *Server) redirect(kind string, slot int, n *cluster.Node) string {
	return kind + " " + strconv.Itoa(slot) + " " + cluster.Endpoint(n, s.cfg.CompatValue("cluster-preferred-endpoint-type")) + ":" + strconv.Itoa(n.Port)
}

// scriptClusterError is what redis.call answers for a command its node would redirect.
func scriptClusterError(msg string) string {
	switch msg {
	case errClusterDown:
		return "ERR Script attempted to execute a command while the cluster is down"
	case errClusterDownRO:
		return "ERR Script attempted to execute a write command while the cluster is down and readonly"
	}
	return "ERR Script attempted to access a non local key in a cluster node"
}
