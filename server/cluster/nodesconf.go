package cluster

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// NodesConf is the node's cluster-config-file, in Redis's nodes.conf format: the CLUSTER NODES
// lines, then "vars currentEpoch <epoch> lastVoteEpoch 0". A node restarted on the same volume
// keeps its ID and serves the map it last had until the operator pushes a newer one.
func (t *Topology) NodesConf() string {
	return t.NodesText(false) + "vars currentEpoch " + strconv.FormatUint(t.Epoch, 10) + " lastVoteEpoch 0\n"
}

// ParseNodesConf reads a nodes.conf written by NodesConf (or by Redis): this node's ID and the
// map. Slot moves in progress ("[slot->-id]") are not kept: the operator resumes a move from
// what the API says.
func ParseNodesConf(text string) (myID string, m Map, err error) {
	byID := map[string]int{}
	for ln, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if f[0] == "vars" {
			for j := 1; j+1 < len(f); j += 2 {
				if f[j] == "currentEpoch" {
					if m.Epoch, err = strconv.ParseUint(f[j+1], 10, 64); err != nil {
						return "", Map{}, fmt.Errorf("line %d: currentEpoch %q", ln+1, f[j+1])
					}
				}
			}
			continue
		}
		if len(f) < 8 || !ValidID(f[0]) {
			return "", Map{}, fmt.Errorf("line %d: not a node line", ln+1)
		}
		n := MapNode{ID: f[0]}
		addr := f[1]
		if i := strings.IndexByte(addr, ','); i >= 0 {
			n.Hostname, addr = addr[i+1:], addr[:i]
		}
		if i := strings.IndexByte(addr, '@'); i >= 0 {
			addr = addr[:i]
		}
		i := strings.LastIndexByte(addr, ':')
		if i < 0 {
			return "", Map{}, fmt.Errorf("line %d: address %q has no port", ln+1, f[1])
		}
		n.IP = addr[:i]
		if n.Port, err = strconv.Atoi(addr[i+1:]); err != nil {
			return "", Map{}, fmt.Errorf("line %d: port %q", ln+1, addr[i+1:])
		}
		for _, flag := range strings.Split(f[2], ",") {
			if flag == "myself" {
				myID = n.ID
			}
		}
		if f[3] != "-" {
			n.Primary = f[3]
		}
		for _, s := range f[8:] {
			if strings.HasPrefix(s, "[") {
				continue
			}
			r, err := ParseRange(s)
			if err != nil {
				return "", Map{}, fmt.Errorf("line %d: %w", ln+1, err)
			}
			n.Slots = append(n.Slots, r)
		}
		if _, dup := byID[n.ID]; dup {
			return "", Map{}, fmt.Errorf("line %d: node %s twice", ln+1, n.ID)
		}
		byID[n.ID] = len(m.Nodes)
		m.Nodes = append(m.Nodes, n)
	}
	if myID == "" {
		return "", Map{}, errors.New("no node is flagged myself")
	}
	return myID, m, nil
}
