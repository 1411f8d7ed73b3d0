package rdb

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/iocache/iocache/server/keyspace"
)

// canonical renders a value as text that two equal values share whatever their encodings:
// the tests compare what a file held with what a server holds this way.
func canonical(v Value) string {
	var b strings.Builder
	switch o := v.Obj.(type) {
	case nil:
		fmt.Fprintf(&b, "string %q", v.Str)
	case *keyspace.List:
		b.WriteString("list")
		for i := 0; i < o.Len(); i++ {
			fmt.Fprintf(&b, " %q", o.Index(i))
		}
	case *keyspace.Hash:
		var pairs []string
		o.Each(func(f, v []byte) bool { pairs = append(pairs, fmt.Sprintf("%q=%q", f, v)); return true })
		sort.Strings(pairs)
		b.WriteString("hash " + strings.Join(pairs, " "))
	case *keyspace.Set:
		var m []string
		o.Each(func(x []byte) bool { m = append(m, strconv.Quote(string(x))); return true })
		sort.Strings(m)
		b.WriteString("set " + strings.Join(m, " "))
	case *keyspace.ZSet:
		b.WriteString("zset")
		o.Each(func(e keyspace.Entry) bool {
			fmt.Fprintf(&b, " %q:%s", e.Member, strconv.FormatFloat(e.Score, 'g', -1, 64))
			return true
		})
	case *keyspace.Stream:
		fmt.Fprintf(&b, "stream len=%d last=%s maxdel=%s added=%d", o.Len(), o.LastID, o.MaxDeletedID, o.EntriesAdded)
		o.Range(keyspace.StreamID{}, keyspace.MaxStreamID, false, func(e keyspace.StreamEntry) bool {
			fmt.Fprintf(&b, " %s{", e.ID)
			for i, f := range e.Fields {
				if i > 0 {
					b.WriteByte(' ')
				}
				fmt.Fprintf(&b, "%q", f)
			}
			b.WriteString("}")
			return true
		})
		for _, g := range o.SortedGroups() {
			fmt.Fprintf(&b, " group %q last=%s read=%d pel[", g.Name, g.LastID, g.EntriesRead)
			for _, id := range keyspace.SortedIDs(g.Pending) {
				pe := g.Pending[id]
				fmt.Fprintf(&b, " %s:%q:%d", id, pe.Consumer.Name, pe.DeliveryCount)
			}
			b.WriteString(" ] consumers[")
			for _, c := range g.SortedConsumers() {
				fmt.Fprintf(&b, " %q:%d", c.Name, len(c.Pending))
			}
			b.WriteString(" ]")
		}
	}
	return b.String()
}
