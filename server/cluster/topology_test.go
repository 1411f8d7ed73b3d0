package cluster

import (
	"errors"
	"strings"
	"testing"
)

func testMap(epoch uint64) (Map, []string) {
	ids := []string{NewID(), NewID(), NewID()}
	return Map{Epoch: epoch, Nodes: []MapNode{
		{ID: ids[0], IP: "10.0.0.1", Port: 6379, Slots: [][2]int{{0, 8191}}},
		{ID: ids[1], IP: "10.0.0.2", Port: 6379, Hostname: "cache-1", Slots: [][2]int{{8192, 16383}}},
		{ID: ids[2], IP: "10.0.0.3", Port: 6379, Primary: ids[0]},
	}}, ids
}

func TestApplyAndEpochs(t *testing.T) {
	m, ids := testMap(5)
	topo := New(Node{ID: ids[2]})
	if err := topo.Apply(m); err != nil {
		t.Fatal(err)
	}
	if topo.Myself.Primary == nil || topo.Myself.Primary.ID != ids[0] || topo.Myself.IP != "10.0.0.3" {
		t.Fatalf("myself after the map: %+v", topo.Myself)
	}
	if topo.Owner(0).ID != ids[0] || topo.Owner(16383).ID != ids[1] || topo.Covered() != Slots {
		t.Fatal("owners do not follow the map")
	}
	if err := topo.Apply(m); err != nil {
		t.Fatalf("the same map again: %v", err)
	}
	old := m
	old.Epoch = 4
	if err := topo.Apply(old); !errors.Is(err, ErrStale) {
		t.Fatalf("an older epoch: %v, want ErrStale", err)
	}
	changed := m
	changed.Nodes = append([]MapNode(nil), m.Nodes...)
	changed.Nodes[0].Slots = [][2]int{{0, 100}}
	if err := topo.Apply(changed); !errors.Is(err, ErrStale) {
		t.Fatalf("another map under the same epoch: %v, want ErrStale", err)
	}
	other, _ := testMap(9)
	if err := topo.Apply(other); err == nil || !strings.Contains(err.Error(), "does not name this node") {
		t.Fatalf("a map without this node: %v", err)
	}
}

func TestParseMapRefusesBadMaps(t *testing.T) {
	id, id2 := NewID(), NewID()
	for _, bad := range []string{
		`{`,
		`{"epoch":1,"nodes":[{"id":"abc","ip":"x","port":1}]}`,
		`{"epoch":1,"nodes":[{"id":"` + id + `","port":70000}]}`,
		`{"epoch":1,"nodes":[{"id":"` + id + `","slots":[[0,16384]]}]}`,
		`{"epoch":1,"nodes":[{"id":"` + id + `","slots":[[5,4]]}]}`,
		`{"epoch":1,"nodes":[{"id":"` + id + `","slots":[[0,10]]},{"id":"` + id2 + `","slots":[[10,20]]}]}`,
		`{"epoch":1,"nodes":[{"id":"` + id + `","primary":"` + id2 + `"}]}`,
		`{"epoch":1,"nodes":[{"id":"` + id + `"},{"id":"` + id2 + `","primary":"` + id + `","slots":[[1,1]]}]}`,
		`{"epoch":1,"nodes":[{"id":"` + id + `"},{"id":"` + id + `"}]}`,
	} {
		if _, err := ParseMap([]byte(bad)); err == nil {
			t.Errorf("ParseMap(%s) accepted", bad)
		}
	}
}

func TestNodesConfRoundTrip(t *testing.T) {
	m, ids := testMap(7)
	topo := New(Node{ID: ids[1]})
	if err := topo.Apply(m); err != nil {
		t.Fatal(err)
	}
	topo.Migrating[9000] = topo.Lookup(ids[0])
	conf := topo.NodesConf()
	if !strings.Contains(conf, "[9000->-"+ids[0]+"]") || !strings.HasSuffix(conf, "vars currentEpoch 7 lastVoteEpoch 0\n") {
		t.Fatalf("nodes.conf:\n%s", conf)
	}
	me, got, err := ParseNodesConf(conf)
	if err != nil {
		t.Fatal(err)
	}
	if me != ids[1] || !same(got, m) {
		t.Fatalf("round trip: me %s, map %+v, want %s, %+v", me, got, ids[1], m)
	}
}

// A map is bounded before it is used: more than MaxNodes nodes are refused.
func TestParseMapRefusesTooManyNodes(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"epoch":1,"nodes":[`)
	for i := range MaxNodes + 1 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"id":"` + NewID() + `","ip":"10.0.0.1","port":6379}`)
	}
	b.WriteString(`]}`)
	if _, err := ParseMap([]byte(b.String())); err == nil || !strings.Contains(err.Error(), "at most 1000") {
		t.Fatalf("a map of %d nodes: %v", MaxNodes+1, err)
	}
}

func TestRangesRoundTrip(t *testing.T) {
	in := [][2]int{{0, 5}, {7, 7}, {100, 16383}}
	text := FormatRanges(in, ",")
	if text != "0-5,7,100-16383" {
		t.Fatalf("FormatRanges: %q", text)
	}
	got, err := ParseRanges(text, ",")
	if err != nil || len(got) != 3 || got[1] != [2]int{7, 7} || got[2] != [2]int{100, 16383} {
		t.Fatalf("ParseRanges: %v, %v", got, err)
	}
	for _, bad := range []string{"5-4", "-1", "16384", "a", "1-", "1-2-3"} {
		if _, err := ParseRange(bad); err == nil {
			t.Errorf("ParseRange(%q) accepted", bad)
		}
	}
}
