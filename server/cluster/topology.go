package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Map is the topology as the operator pushes it (CLUSTERMAP SET) and as CLUSTERMAP GET returns
// it: every node with its address, the primary it replicates (replicas) or the slot ranges it
// serves (primaries), under one epoch. A node accepts a map only with an epoch above the one it
// serves (or the same map again), so a push that arrives late cannot undo a newer one.
type Map struct {
	Epoch uint64    `json:"epoch"`
	Nodes []MapNode `json:"nodes"`
}

// MapNode is one node of a Map. Slots are inclusive ranges, [[0, 5460], [10923, 10923]].
type MapNode struct {
	ID       string   `json:"id"`
	IP       string   `json:"ip"`
	Port     int      `json:"port"`
	TLSPort  int      `json:"tlsPort,omitempty"`
	Hostname string   `json:"hostname,omitempty"`
	Primary  string   `json:"primary,omitempty"`
	Slots    [][2]int `json:"slots,omitempty"`
}

// Node is a node of the topology a server serves.
type Node struct {
	ID       string
	IP       string
	Port     int
	TLSPort  int
	Hostname string
	// Primary is the node this one replicates; nil for a primary.
	Primary *Node
}

// Topology is the cluster as one node sees it: the nodes, the owner of each slot, and this
// node's own slot moves in progress (CLUSTER SETSLOT MIGRATING / IMPORTING), which are local to
// the node as in Redis. The server's main thread owns it.
type Topology struct {
	Epoch  uint64
	Myself *Node
	nodes  []*Node
	owner  [Slots]*Node
	// covered counts the slots with an owner: routing asks for it on every keyed command.
	covered int
	// Migrating holds, for a slot this node serves and is handing over, the node receiving it;
	// Importing, for a slot it is receiving, the node handing it over.
	Migrating [Slots]*Node
	Importing [Slots]*Node
}

// NewID is a fresh node ID: 40 random hex digits, as Redis makes them.
func NewID() string {
	var b [20]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ValidID reports whether id has the form of a node ID.
func ValidID(id string) bool {
	if len(id) != 40 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil
}

// New is the topology of a node that has no map yet: itself, a primary without slots.
func New(myself Node) *Topology {
	me := myself
	return &Topology{Myself: &me, nodes: []*Node{&me}}
}

// Nodes are the known nodes, this one included, in the map's order.
func (t *Topology) Nodes() []*Node { return t.nodes }

// Owner is the primary serving slot, nil when none does.
func (t *Topology) Owner(slot int) *Node { return t.owner[slot] }

// Lookup finds a node by ID.
func (t *Topology) Lookup(id string) *Node {
	for _, n := range t.nodes {
		if n.ID == id {
			return n
		}
	}
	return nil
}

// Covered is how many slots have an owner.
func (t *Topology) Covered() int { return t.covered }

func (t *Topology) recount() {
	t.covered = 0
	for _, o := range t.owner {
		if o != nil {
			t.covered++
		}
	}
}

// Primaries are the nodes that serve at least one slot, in the map's order (Redis's
// cluster_size counts these).
func (t *Topology) Primaries() []*Node {
	byNode := t.RangesByNode()
	var out []*Node
	for _, n := range t.nodes {
		if n.Primary == nil && len(byNode[n]) > 0 {
			out = append(out, n)
		}
	}
	return out
}

// Replicas are the nodes replicating n.
func (t *Topology) Replicas(n *Node) []*Node {
	var out []*Node
	for _, r := range t.nodes {
		if r.Primary == n {
			out = append(out, r)
		}
	}
	return out
}

// Ranges are the slot ranges n serves, ascending.
func (t *Topology) Ranges(n *Node) [][2]int {
	return RangesOf(func(s int) bool { return t.owner[s] == n })
}

// RangesByNode are every owner's slot ranges, ascending, from one pass over the slots: what a
// description of every node needs (CLUSTER NODES, SLOTS, SHARDS, the exported map).
func (t *Topology) RangesByNode() map[*Node][][2]int {
	out := map[*Node][][2]int{}
	for s, n := range t.owner {
		if n == nil {
			continue
		}
		rs := out[n]
		if k := len(rs); k > 0 && rs[k-1][1] == s-1 {
			rs[k-1][1] = s
		} else {
			out[n] = append(rs, [2]int{s, s})
		}
	}
	return out
}

// SetOwner makes n (nil: nobody) the owner of slot, as CLUSTER ADDSLOTS, DELSLOTS and SETSLOT
// NODE do on one node.
func (t *Topology) SetOwner(slot int, n *Node) {
	if (t.owner[slot] == nil) != (n == nil) {
		if n == nil {
			t.covered--
		} else {
			t.covered++
		}
	}
	t.owner[slot] = n
}

// Forget removes a node other than this one (CLUSTER FORGET): its slots become unassigned.
func (t *Topology) Forget(n *Node) {
	t.nodes = slices.DeleteFunc(t.nodes, func(x *Node) bool { return x == n })
	for s := range Slots {
		if t.owner[s] == n {
			t.owner[s] = nil
		}
		if t.Migrating[s] == n {
			t.Migrating[s] = nil
		}
		if t.Importing[s] == n {
			t.Importing[s] = nil
		}
	}
	for _, x := range t.nodes {
		if x.Primary == n {
			x.Primary = nil
		}
	}
	t.recount()
}

// Reset forgets every other node and every slot (CLUSTER RESET); hard also gives this node a
// new ID and epoch 0.
func (t *Topology) Reset(hard bool) {
	me := t.Myself
	me.Primary = nil
	if hard {
		me.ID = NewID()
		t.Epoch = 0
	}
	*t = Topology{Epoch: t.Epoch, Myself: me, nodes: []*Node{me}}
}

// Export is the topology as a Map (CLUSTERMAP GET).
func (t *Topology) Export() Map {
	m := Map{Epoch: t.Epoch}
	byNode := t.RangesByNode()
	for _, n := range t.nodes {
		mn := MapNode{ID: n.ID, IP: n.IP, Port: n.Port, TLSPort: n.TLSPort, Hostname: n.Hostname, Slots: byNode[n]}
		if n.Primary != nil {
			mn.Primary = n.Primary.ID
		}
		m.Nodes = append(m.Nodes, mn)
	}
	return m
}

// MaxNodes bounds a map, so that describing it (CLUSTER NODES, SLOTS, SHARDS) stays bounded:
// Redis Cluster is designed for up to 1,000 nodes.
const MaxNodes = 1000

// ErrStale is the error of a map older than the one served.
var ErrStale = errors.New("stale cluster map")

// ParseMap decodes and checks a map: unique well-formed IDs, ports in range, replicas naming a
// primary of the map and serving no slots, slots in range and served by one node at most.
func ParseMap(b []byte) (Map, error) {
	var m Map
	if err := json.Unmarshal(b, &m); err != nil {
		return Map{}, fmt.Errorf("the cluster map is not valid JSON: %v", err)
	}
	if len(m.Nodes) > MaxNodes {
		return Map{}, fmt.Errorf("the map names %d nodes; a cluster has at most %d", len(m.Nodes), MaxNodes)
	}
	seen := make(map[string]*MapNode, len(m.Nodes))
	for i := range m.Nodes {
		n := &m.Nodes[i]
		if !ValidID(n.ID) {
			return Map{}, fmt.Errorf("node %d: the ID %q is not 40 hex digits", i, truncate(n.ID))
		}
		if seen[n.ID] != nil {
			return Map{}, fmt.Errorf("node %s appears twice", n.ID)
		}
		seen[n.ID] = n
		if n.Port < 0 || n.Port > 65535 || n.TLSPort < 0 || n.TLSPort > 65535 {
			return Map{}, fmt.Errorf("node %s: port out of range", n.ID)
		}
		if len(n.IP) > 255 || len(n.Hostname) > 255 {
			return Map{}, fmt.Errorf("node %s: ip or hostname longer than 255 bytes", n.ID)
		}
	}
	var owner [Slots]string
	for i := range m.Nodes {
		n := &m.Nodes[i]
		if n.Primary != "" {
			p := seen[n.Primary]
			if p == nil {
				return Map{}, fmt.Errorf("node %s replicates %s, which the map does not have", n.ID, truncate(n.Primary))
			}
			if p.Primary != "" || p == n {
				return Map{}, fmt.Errorf("node %s replicates %s, which is not a primary", n.ID, n.Primary)
			}
			if len(n.Slots) > 0 {
				return Map{}, fmt.Errorf("node %s is a replica and cannot serve slots", n.ID)
			}
		}
		for _, r := range n.Slots {
			if r[0] < 0 || r[1] >= Slots || r[0] > r[1] {
				return Map{}, fmt.Errorf("node %s: slot range %d-%d is not within 0-%d", n.ID, r[0], r[1], Slots-1)
			}
			for s := r[0]; s <= r[1]; s++ {
				if owner[s] != "" {
					return Map{}, fmt.Errorf("slot %d is served by both %s and %s", s, owner[s], n.ID)
				}
				owner[s] = n.ID
			}
		}
	}
	return m, nil
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// Apply makes m the topology. It must name this node; its epoch must be above the one served,
// or equal with the same content (a push repeated). This node's address is taken from the map
// (what the operator announces). Slot moves in progress stay where they still make sense (a
// slot still served here that is migrating; one served elsewhere that is importing).
func (t *Topology) Apply(m Map) error {
	if m.Epoch < t.Epoch {
		return fmt.Errorf("%w: epoch %d is older than the %d served", ErrStale, m.Epoch, t.Epoch)
	}
	if m.Epoch == t.Epoch && t.Epoch != 0 {
		if same(t.Export(), m) {
			return nil
		}
		return fmt.Errorf("%w: epoch %d is served with another map; a new map needs a new epoch", ErrStale, m.Epoch)
	}
	var me *MapNode
	for i := range m.Nodes {
		if m.Nodes[i].ID == t.Myself.ID {
			me = &m.Nodes[i]
		}
	}
	if me == nil {
		return fmt.Errorf("the map does not name this node (%s)", t.Myself.ID)
	}
	byID := make(map[string]*Node, len(m.Nodes))
	nodes := make([]*Node, 0, len(m.Nodes))
	for _, mn := range m.Nodes {
		n := &Node{ID: mn.ID, IP: mn.IP, Port: mn.Port, TLSPort: mn.TLSPort, Hostname: mn.Hostname}
		if mn.ID == t.Myself.ID {
			*t.Myself = *n
			n = t.Myself
		}
		byID[n.ID] = n
		nodes = append(nodes, n)
	}
	for i, mn := range m.Nodes {
		nodes[i].Primary = byID[mn.Primary] // nil for ""
	}
	var owner [Slots]*Node
	for i, mn := range m.Nodes {
		for _, r := range mn.Slots {
			for s := r[0]; s <= r[1]; s++ {
				owner[s] = nodes[i]
			}
		}
	}
	for s := range Slots {
		if to := t.Migrating[s]; to != nil {
			t.Migrating[s] = byID[to.ID]
			if owner[s] != t.Myself || t.Migrating[s] == t.Myself {
				t.Migrating[s] = nil
			}
		}
		if from := t.Importing[s]; from != nil {
			t.Importing[s] = byID[from.ID]
			if owner[s] == t.Myself || t.Importing[s] == t.Myself {
				t.Importing[s] = nil
			}
		}
	}
	t.nodes, t.owner, t.Epoch = nodes, owner, m.Epoch
	t.recount()
	return nil
}

func same(a, b Map) bool {
	x, _ := json.Marshal(normal(a))
	y, _ := json.Marshal(normal(b))
	return string(x) == string(y)
}

// normal merges adjacent ranges and sorts, so two spellings of one map compare equal.
func normal(m Map) Map {
	out := Map{Epoch: m.Epoch}
	for _, n := range m.Nodes {
		var owned [Slots]bool
		for _, r := range n.Slots {
			for s := r[0]; s <= r[1]; s++ {
				owned[s] = true
			}
		}
		n.Slots = RangesOf(func(s int) bool { return owned[s] })
		out.Nodes = append(out.Nodes, n)
	}
	slices.SortFunc(out.Nodes, func(a, b MapNode) int {
		if a.ID < b.ID {
			return -1
		}
		return 1
	})
	return out
}
