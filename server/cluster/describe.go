package cluster

import (
	"strconv"
	"strings"
)

// Endpoint is the address clients are sent to (MOVED, ASK, CLUSTER SLOTS), as Redis's
// cluster-preferred-endpoint-type chooses it: the IP, the hostname, or "?".
func Endpoint(n *Node, preferred string) string {
	switch preferred {
	case "hostname":
		if n.Hostname != "" {
			return n.Hostname
		}
		return "?"
	case "unknown-endpoint":
		return "?"
	}
	return n.IP
}

// NodesText is CLUSTER NODES: one line per node, "<id> <ip>:<port>@<bus-port>[,<hostname>]
// <flags> <primary|-> <ping-sent> <pong-recv> <config-epoch> <link-state> <slots>...", this
// node's slot moves in progress after its slots ("[slot->-target]", "[slot-<-source]"). There is
// no cluster bus, so the bus port is 0; every node is "connected" with the map's epoch, since
// the map is what every node was told.
func (t *Topology) NodesText(tls bool) string {
	var b strings.Builder
	byNode := t.RangesByNode()
	for _, n := range t.nodes {
		t.nodeLine(&b, n, byNode[n], tls)
	}
	return b.String()
}

// NodeLine is CLUSTER NODES's line of one node (CLUSTER REPLICAS lists these).
func (t *Topology) NodeLine(n *Node, tls bool) string {
	var b strings.Builder
	t.nodeLine(&b, n, t.Ranges(n), tls)
	return b.String()
}

func (t *Topology) nodeLine(b *strings.Builder, n *Node, ranges [][2]int, tls bool) {
	port := n.Port
	if tls && n.TLSPort != 0 {
		port = n.TLSPort
	}
	b.WriteString(n.ID)
	b.WriteByte(' ')
	b.WriteString(n.IP)
	b.WriteByte(':')
	b.WriteString(strconv.Itoa(port))
	b.WriteString("@0")
	if n.Hostname != "" {
		b.WriteByte(',')
		b.WriteString(n.Hostname)
	}
	b.WriteByte(' ')
	if n == t.Myself {
		b.WriteString("myself,")
	}
	if n.Primary != nil {
		b.WriteString("slave ")
		b.WriteString(n.Primary.ID)
	} else {
		b.WriteString("master -")
	}
	b.WriteString(" 0 0 ")
	b.WriteString(strconv.FormatUint(t.Epoch, 10))
	b.WriteString(" connected")
	if len(ranges) > 0 {
		b.WriteByte(' ')
		b.WriteString(FormatRanges(ranges, " "))
	}
	if n == t.Myself {
		for s := range Slots {
			if to := t.Migrating[s]; to != nil {
				b.WriteString(" [" + strconv.Itoa(s) + "->-" + to.ID + "]")
			}
			if from := t.Importing[s]; from != nil {
				b.WriteString(" [" + strconv.Itoa(s) + "-<-" + from.ID + "]")
			}
		}
	}
	b.WriteByte('\n')
}
