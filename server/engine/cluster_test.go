package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/iocache/iocache/server/cluster"
	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/testpeer"
)

// clusterNode is one iocache node of a test cluster.
type clusterNode struct {
	s    *Server
	addr string
	id   string
	port int
}

// startClusterNodes runs n in-process cluster nodes on loopback and pushes them a map that
// splits the slots evenly (node i serves ranges[i]), as the operator does.
func startClusterNodes(t *testing.T, n int) []*clusterNode {
	t.Helper()
	nodes := make([]*clusterNode, n)
	for i := range nodes {
		s, addr := startServer(t, func(c *config.Config) { c.ClusterEnabled = true })
		_, p, _ := strings.Cut(addr, ":")
		port, _ := strconv.Atoi(p)
		nodes[i] = &clusterNode{s: s, addr: addr, id: dialPeer(t, addr).do("CLUSTER", "MYID")[5:45], port: port}
	}
	m := cluster.Map{Epoch: 1}
	for i, nd := range nodes {
		lo, hi := i*cluster.Slots/n, (i+1)*cluster.Slots/n-1
		m.Nodes = append(m.Nodes, cluster.MapNode{ID: nd.id, IP: "127.0.0.1", Port: nd.port, Slots: [][2]int{{lo, hi}}})
	}
	pushMap(t, nodes, m)
	return nodes
}

func pushMap(t *testing.T, nodes []*clusterNode, m cluster.Map) {
	t.Helper()
	b, _ := json.Marshal(m)
	for _, nd := range nodes {
		if got := dialPeer(t, nd.addr).do("CLUSTERMAP", "SET", string(b)); got != "+OK\r\n" {
			t.Fatalf("CLUSTERMAP SET on %s: %q", nd.addr, got)
		}
	}
}

// startRedisCluster runs two redis-server nodes in cluster mode, serving 0-8191 and
// 8192-16383, joined by CLUSTER MEET, and waits until both say cluster_state:ok.
func startRedisCluster(t *testing.T) (a, b string, ids [2]string) {
	t.Helper()
	a = startRedisPeer(t, "--cluster-enabled", "yes")
	b = startRedisPeer(t, "--cluster-enabled", "yes")
	pa, pb := dialPeer(t, a), dialPeer(t, b)
	pa.do("CLUSTER", "ADDSLOTSRANGE", "0", "8191")
	pb.do("CLUSTER", "ADDSLOTSRANGE", "8192", "16383")
	_, port, _ := strings.Cut(b, ":")
	pa.do("CLUSTER", "MEET", "127.0.0.1", port)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if strings.Contains(pa.do("CLUSTER", "INFO"), "cluster_state:ok") && strings.Contains(pb.do("CLUSTER", "INFO"), "cluster_state:ok") &&
			strings.Count(pa.do("CLUSTER", "NODES"), "connected") == 2 && strings.Count(pb.do("CLUSTER", "NODES"), "connected") == 2 {
			return a, b, [2]string{pa.do("CLUSTER", "MYID")[5:45], pb.do("CLUSTER", "MYID")[5:45]}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("the redis-server cluster did not reach cluster_state:ok within 20s")
	return
}

// TestClusterAgreesWithRedis sends the same commands to node A of a two-node redis-server
// cluster and of a two-node iocache cluster with the same slots, and compares the raw replies
// once node IDs and ports are named alike: redirections, cross-slot and cluster-mode errors,
// CLUSTER's answers and errors, and a slot caught mid-move (ASK, TRYAGAIN, ASKING).
func TestClusterAgreesWithRedis(t *testing.T) {
	ra, rb, rids := startRedisCluster(t)
	ic := startClusterNodesSplit(t, [][2]int{{0, 8191}, {8192, 16383}})
	norm := func(s string, addrs [2]string, ids [2]string) string {
		for i, tag := range []string{"A", "B"} {
			s = strings.ReplaceAll(s, ids[i], "<id"+tag+">")
			_, port, _ := strings.Cut(addrs[i], ":")
			s = strings.ReplaceAll(s, ":"+port, ":<port"+tag+">")
			s = strings.ReplaceAll(s, ":"+port+"\r\n", ":<port"+tag+">\r\n")
		}
		return s
	}
	rA, rB := dialPeer(t, ra), dialPeer(t, rb)
	iA, iB := dialPeer(t, ic[0].addr), dialPeer(t, ic[1].addr)
	raddrs, iaddrs := [2]string{ra, rb}, [2]string{ic[0].addr, ic[1].addr}
	iids := [2]string{ic[0].id, ic[1].id}
	same := func(onB bool, args ...string) {
		t.Helper()
		r, i := rA, iA
		if onB {
			r, i = rB, iB
		}
		rargs := append([]string(nil), args...)
		iargs := append([]string(nil), args...)
		for j := range args {
			for k, tag := range []string{"<idA>", "<idB>"} {
				rargs[j] = strings.ReplaceAll(rargs[j], tag, rids[k])
				iargs[j] = strings.ReplaceAll(iargs[j], tag, iids[k])
			}
		}
		want := norm(r.do(rargs...), raddrs, rids)
		got := norm(i.do(iargs...), iaddrs, iids)
		if got != want {
			t.Errorf("%v:\n iocache %q\n redis   %q", args, got, want)
		}
	}
	same(false, "SET", "bar", "1") // slot 5061: served by A
	same(false, "GET", "foo")      // slot 12182: MOVED to B
	same(false, "GET", "bar")
	same(false, "MSET", "a", "1", "b", "2")
	same(false, "MSET", "{bar}a", "1", "{bar}b", "2")
	same(false, "MGET", "{bar}a", "{bar}b", "{bar}c")
	same(false, "DEL", "bar", "bar")
	same(false, "SELECT", "1")
	same(false, "SELECT", "0")
	same(false, "MOVE", "{bar}a", "1")
	same(false, "SWAPDB", "0", "1")
	same(false, "COPY", "{bar}a", "{bar}z", "DB", "1")
	same(false, "EVAL", "return redis.call('get', KEYS[1])", "1", "foo")
	same(false, "EVAL", "return redis.call('get', KEYS[1])", "1", "{bar}a")
	same(false, "EVAL", "return redis.call('get', 'foo')", "0")                             // not this node's
	same(false, "EVAL", "return redis.pcall('get', 'foo')", "0")                            // the same, caught
	same(false, "EVAL", "redis.call('set', 'bar', '1') return redis.call('get', 'b')", "0") // two slots, both here
	same(false, "EVAL", "redis.call('set', 'bar', '1') return redis.call('get', 'a')", "1", "bar")
	same(false, "FCALL", "nosuch", "0")
	same(false, "SPUBLISH", "foo", "m")
	same(false, "PING")
	same(false, "DBSIZE")
	same(false, "COMMAND", "GETKEYS", "MIGRATE", "h", "1", "", "0", "5000", "AUTH2", "u", "p", "KEYS", "a", "b")
	same(false, "COMMAND", "GETKEYSANDFLAGS", "MIGRATE", "h", "1", "", "0", "5000", "KEYS", "a")
	same(false, "COMMAND", "GETKEYS", "MIGRATE", "h", "1", "k", "0", "5000", "KEYS", "a")
	for _, k := range []string{"", "a", "foo", "{", "}", "{}", "{a}b", "a{b}c{d}", "{{a}}", "\xff\x00{x"} {
		same(false, "CLUSTER", "KEYSLOT", k)
	}
	for _, args := range [][]string{
		{"COUNTKEYSINSLOT", "5061"}, {"COUNTKEYSINSLOT", "-1"}, {"COUNTKEYSINSLOT", "16384"}, {"COUNTKEYSINSLOT", "x"},
		{"GETKEYSINSLOT", "5061", "10"}, {"GETKEYSINSLOT", "5061", "-1"}, {"GETKEYSINSLOT", "16384", "1"}, {"GETKEYSINSLOT", "x", "1"},
		{"ADDSLOTS", "1"}, {"ADDSLOTS", "16384"}, {"ADDSLOTS", "9000"}, {"DELSLOTS", "99999"},
		{"ADDSLOTSRANGE", "5", "1"}, {"ADDSLOTSRANGE", "1"}, {"DELSLOTSRANGE", "1", "2", "3"},
		{"DELSLOTSRANGE", "1", "2", "0", "8191"}, {"DELSLOTS", "7", "8", "7"}, {"ADDSLOTSRANGE", "9000", "9001", "0", "1"},
		{"SETSLOT", "1", "foo"}, {"SETSLOT", "99999", "STABLE"}, {"SETSLOT", "1", "STABLE", "x"},
		{"SETSLOT", "1", "MIGRATING", "0123456789012345678901234567890123456789"},
		{"SETSLOT", "9000", "MIGRATING", "<idB>"}, {"SETSLOT", "1", "IMPORTING", "<idB>"},
		{"SETSLOT", "1", "NODE", "0123456789012345678901234567890123456789"},
		{"FORGET", "0123456789012345678901234567890123456789"}, {"FORGET", "<idA>"},
		{"COUNT-FAILURE-REPORTS", "0123456789012345678901234567890123456789"}, {"COUNT-FAILURE-REPORTS", "<idB>"},
		{"REPLICAS", "0123456789012345678901234567890123456789"}, {"REPLICAS", "<idB>"},
		{"RESET"}, {"RESET", "FOO"}, {"FLUSHSLOTS"}, {"MYID"}, {"NOSUCH"}, {"SLOTS"}, {"LINKS", "x"},
	} {
		same(false, append([]string{"CLUSTER"}, args...)...)
	}
	same(false, "READONLY")
	same(false, "READWRITE")
	same(false, "ASKING")
	// A transaction: a moved key marks it, EXEC aborts.
	same(false, "MULTI")
	same(false, "SET", "foo", "1")
	same(false, "SET", "bar", "1")
	same(false, "EXEC")
	// Slot 5061 ("bar") mid-move from A to B: A answers ASK for a key it no longer has and
	// TRYAGAIN when it has some keys of a multi-key request; B answers MOVED unless ASKING.
	same(false, "SET", "{bar}here", "1")
	same(false, "CLUSTER", "SETSLOT", "5061", "MIGRATING", "<idB>")
	same(true, "CLUSTER", "SETSLOT", "5061", "IMPORTING", "<idA>")
	same(false, "GET", "{bar}here")
	same(false, "GET", "{bar}gone")
	same(false, "MGET", "{bar}here", "{bar}gone")
	same(false, "SET", "{bar}new", "1")
	same(true, "GET", "{bar}gone")
	same(true, "ASKING")
	same(true, "GET", "{bar}gone")
	same(true, "GET", "{bar}gone") // ASKING was for one command
	same(true, "ASKING")
	same(true, "MGET", "{bar}x", "{bar}y")
	same(true, "CLUSTER", "COUNTKEYSINSLOT", "5061")
	same(false, "CLUSTER", "SETSLOT", "5061", "STABLE")
	same(true, "CLUSTER", "SETSLOT", "5061", "STABLE")
	same(false, "GET", "{bar}gone")
	same(false, "CLUSTER", "GETKEYSINSLOT", "5061", "0")
	for _, field := range []string{"cluster_state:ok", "cluster_slots_assigned:16384", "cluster_known_nodes:2", "cluster_size:2"} {
		if !strings.Contains(iA.do("CLUSTER", "INFO"), field) {
			t.Errorf("CLUSTER INFO lacks %s", field)
		}
	}
}

// startClusterNodesSplit is startClusterNodes with the given slot range per node.
func startClusterNodesSplit(t *testing.T, ranges [][2]int) []*clusterNode {
	t.Helper()
	nodes := startClusterNodes(t, len(ranges))
	m := cluster.Map{Epoch: 2}
	for i, nd := range nodes {
		m.Nodes = append(m.Nodes, cluster.MapNode{ID: nd.id, IP: "127.0.0.1", Port: nd.port, Slots: [][2]int{ranges[i]}})
	}
	pushMap(t, nodes, m)
	return nodes
}

// TestClusterServesClusterClients: go-redis's ClusterClient, rueidis in cluster mode,
// redis-cli -c, redis-cli --cluster check and redis-benchmark --cluster against three nodes.
func TestClusterServesClusterClients(t *testing.T) {
	nodes := startClusterNodes(t, 3)
	ctx := context.Background()
	gr := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{nodes[0].addr}})
	defer gr.Close()
	for i := range 300 {
		if err := gr.Set(ctx, fmt.Sprint("k:", i), i, 0).Err(); err != nil {
			t.Fatalf("go-redis SET: %v", err)
		}
	}
	total := 0
	for _, nd := range nodes {
		n, _ := strconv.Atoi(strings.TrimSpace(dialPeer(t, nd.addr).do("DBSIZE")[1:]))
		if n == 0 {
			t.Errorf("node %s holds no keys: the client did not spread them", nd.addr)
		}
		total += n
	}
	if total != 300 {
		t.Fatalf("the nodes hold %d keys, want 300", total)
	}
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{nodes[1].addr}, DisableCache: true})
	if err != nil {
		t.Fatalf("rueidis: %v", err)
	}
	defer rc.Close()
	for i := range 300 {
		v, err := rc.Do(ctx, rc.B().Get().Key(fmt.Sprint("k:", i)).Build()).ToString()
		if err != nil || v != strconv.Itoa(i) {
			t.Fatalf("rueidis GET k:%d = %q, %v", i, v, err)
		}
	}
	cli := testpeer.Require(t, "redis-cli")
	host, port, _ := strings.Cut(nodes[2].addr, ":")
	out, err := exec.Command(cli, "-c", "-h", host, "-p", port, "GET", "k:7").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "7" {
		t.Fatalf("redis-cli -c GET k:7: %q, %v", out, err)
	}
	out, err = exec.Command(cli, "--cluster", "check", nodes[0].addr).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "[OK] All nodes agree about slots configuration.") ||
		!strings.Contains(string(out), "[OK] All 16384 slots covered.") || !strings.Contains(string(out), "[OK] 300 keys in 3 masters.") {
		t.Fatalf("redis-cli --cluster check: %v\n%s", err, out)
	}
	bench := testpeer.Require(t, "redis-benchmark")
	out, err = exec.Command(bench, "--cluster", "-h", host, "-p", port, "-t", "set,get", "-n", "3000", "-c", "4", "-q").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "GET: ") || strings.Contains(string(out), "rror") {
		t.Fatalf("redis-benchmark --cluster: %v\n%s", err, out)
	}
}

// TestClusterMovesSlotsUnderLoad moves slots between nodes with redis-cli --cluster reshard
// (SETSLOT IMPORTING/MIGRATING, GETKEYSINSLOT, MIGRATE ... KEYS, SETSLOT NODE) while go-redis
// clients increment counters and write known keys, then has the operator's map catch up with
// a new epoch: no key is lost, every counter equals the increments acknowledged, and the
// clients see no error (they follow MOVED and ASK themselves).
func TestClusterMovesSlotsUnderLoad(t *testing.T) {
	cli := testpeer.Require(t, "redis-cli")
	nodes := startClusterNodes(t, 3)
	ctx := context.Background()
	gr := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{nodes[0].addr}, MaxRedirects: 16})
	defer gr.Close()
	const counters, keys = 64, 2000
	for i := range keys {
		if err := gr.Set(ctx, fmt.Sprint("key:", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var acked [counters]atomic.Int64
	var errs atomic.Int64
	var longest atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				c := (i*4 + w) % counters
				start := time.Now()
				err := gr.Incr(ctx, fmt.Sprint("counter:", c)).Err()
				if d := time.Since(start).Nanoseconds(); d > longest.Load() {
					longest.Store(d)
				}
				if err != nil {
					if errs.Add(1) <= 3 {
						t.Logf("INCR counter:%d: %v", c, err)
					}
					continue
				}
				acked[c].Add(1)
			}
		}()
	}
	reshard := func(from, to *clusterNode, slots int) {
		t.Helper()
		out, err := exec.Command(cli, "--cluster", "reshard", nodes[0].addr, "--cluster-from", from.id, "--cluster-to", to.id,
			"--cluster-slots", strconv.Itoa(slots), "--cluster-yes", "--cluster-pipeline", "50").CombinedOutput()
		if err != nil || strings.Contains(string(out), "ERR") || strings.Contains(string(out), "failed") {
			t.Fatalf("reshard %d slots %s → %s: %v\n%s", slots, from.addr, to.addr, err, tail(string(out), 2000))
		}
	}
	time.Sleep(200 * time.Millisecond)
	reshard(nodes[0], nodes[2], 1500)
	reshard(nodes[1], nodes[0], 5461) // empties node 1, as a scale-in does
	// The operator's map catches up: node 1 leaves with nothing, under a new epoch.
	var m cluster.Map
	if err := json.Unmarshal([]byte(bulkOf(dialPeer(t, nodes[2].addr).do("CLUSTERMAP", "GET"))), &m); err != nil {
		t.Fatal(err)
	}
	m.Epoch = 10
	pushMap(t, nodes, m)
	time.Sleep(200 * time.Millisecond)
	close(stop)
	wg.Wait()
	if n := dialPeer(t, nodes[1].addr).do("DBSIZE"); n != ":0\r\n" {
		t.Errorf("the emptied node still holds %q keys", n)
	}
	for i := range keys {
		v, err := gr.Get(ctx, fmt.Sprint("key:", i)).Result()
		if err != nil || v != strconv.Itoa(i) {
			t.Fatalf("key:%d after the moves: %q, %v", i, v, err)
		}
	}
	var sum int64
	for c := range counters {
		v, err := gr.Get(ctx, fmt.Sprint("counter:", c)).Int64()
		if err != nil && err != redis.Nil {
			t.Fatal(err)
		}
		if v != acked[c].Load() {
			t.Errorf("counter:%d = %d, acknowledged increments %d", c, v, acked[c].Load())
		}
		sum += v
	}
	if errs.Load() != 0 {
		t.Errorf("%d client errors during the moves", errs.Load())
	}
	out, _ := exec.Command(cli, "--cluster", "check", nodes[0].addr).CombinedOutput()
	if !strings.Contains(string(out), "[OK] All 16384 slots covered.") || strings.Contains(string(out), "WARNING") {
		t.Errorf("after the moves, redis-cli --cluster check:\n%s", out)
	}
	t.Logf("moved 1500 then 5461 slots under load: %d increments acknowledged and all counted, %d keys intact, %d client errors, longest request %v",
		sum, keys, errs.Load(), time.Duration(longest.Load()))
}

func bulkOf(reply string) string {
	_, rest, _ := strings.Cut(reply, "\r\n")
	return strings.TrimSuffix(rest, "\r\n")
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// TestClusterNodeKeepsIdentityAcrossRestart: the node's ID and map survive a restart on the
// same directory (cluster-config-file), and a stale map is refused.
func TestClusterNodeKeepsIdentityAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	mutate := func(c *config.Config) { c.ClusterEnabled, c.Dir = true, dir }
	s, addr := startServer(t, mutate)
	p := dialPeer(t, addr)
	id := p.do("CLUSTER", "MYID")[5:45]
	m := cluster.Map{Epoch: 7, Nodes: []cluster.MapNode{{ID: id, IP: "127.0.0.1", Port: 7000, Slots: [][2]int{{0, 16383}}}}}
	b, _ := json.Marshal(m)
	if got := p.do("CLUSTERMAP", "SET", string(b)); got != "+OK\r\n" {
		t.Fatalf("CLUSTERMAP SET: %q", got)
	}
	nodes := p.do("CLUSTER", "NODES")
	s.Shutdown()
	_, addr2 := startServer(t, mutate)
	p2 := dialPeer(t, addr2)
	if got := p2.do("CLUSTER", "MYID")[5:45]; got != id {
		t.Fatalf("ID after restart %s, want %s", got, id)
	}
	if got := p2.do("CLUSTER", "NODES"); got != nodes {
		t.Fatalf("CLUSTER NODES after restart:\n%q\nwant\n%q", got, nodes)
	}
	m.Epoch = 6
	b, _ = json.Marshal(m)
	if got := p2.do("CLUSTERMAP", "SET", string(b)); !strings.HasPrefix(got, "-STALE ") {
		t.Fatalf("an older map: %q, want STALE", got)
	}
	if got := p2.do("CLUSTERMAP", "SET", "{"); !strings.HasPrefix(got, "-ERR the cluster map is not valid JSON") {
		t.Fatalf("a broken map: %q", got)
	}
}

// TestClusterReplicaServesReadsWithReadonly: a replica in the map answers MOVED to its primary,
// unless the client said READONLY, and then serves reads of its primary's slots, not writes.
func TestClusterReplicaServesReadsWithReadonly(t *testing.T) {
	nodes := startClusterNodes(t, 2)
	m := cluster.Map{Epoch: 5, Nodes: []cluster.MapNode{
		{ID: nodes[0].id, IP: "127.0.0.1", Port: nodes[0].port, Slots: [][2]int{{0, 16383}}},
		{ID: nodes[1].id, IP: "127.0.0.1", Port: nodes[1].port, Primary: nodes[0].id},
	}}
	pushMap(t, nodes, m)
	r := dialPeer(t, nodes[1].addr)
	moved := "-MOVED 12182 127.0.0.1:" + strconv.Itoa(nodes[0].port) + "\r\n"
	if got := r.do("GET", "foo"); got != moved {
		t.Fatalf("GET on the replica: %q, want %q", got, moved)
	}
	r.do("READONLY")
	if got := r.do("GET", "foo"); got != "$-1\r\n" {
		t.Fatalf("READONLY GET on the replica: %q", got)
	}
	if got := r.do("SET", "foo", "1"); got != moved {
		t.Fatalf("READONLY SET on the replica: %q, want %q", got, moved)
	}
	if got := r.do("CLUSTER", "SLOTS"); !strings.Contains(got, nodes[1].id) {
		t.Fatalf("CLUSTER SLOTS does not list the replica: %q", got)
	}
}

// TestClusterSlotRangesBounded: ADDSLOTSRANGE repeating the whole range 100,000 times is 1.6
// billion slots named; the node answers at once with Redis's error and holds no more than the
// arguments (the slots go to a 16,384-entry bitmap, not a list).
func TestClusterSlotRangesBounded(t *testing.T) {
	_, addr := startServer(t, func(c *config.Config) { c.ClusterEnabled = true })
	p := dialPeer(t, addr)
	args := []string{"CLUSTER", "ADDSLOTSRANGE"}
	for range 100000 {
		args = append(args, "0", "16383")
	}
	start := time.Now()
	if got := p.do(args...); got != "-ERR Slot 0 specified multiple times\r\n" {
		t.Fatalf("reply %q", got)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("answered after %v", d)
	}
	if got := p.do("CLUSTER", "INFO"); !strings.Contains(got, "cluster_slots_assigned:0\r\n") {
		t.Fatalf("a refused ADDSLOTSRANGE changed the map: %q", got)
	}
}
