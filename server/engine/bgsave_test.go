package engine

import (
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/keyspace"
	"github.com/iocache/iocache/server/rdb"
)

// A model of the keyspace that the BGSAVE test keeps beside the server: the snapshot must hold
// exactly the model as it was when BGSAVE ran, whatever was written while the save went on.
type modelValue struct {
	str  *string
	hash map[string]string
	list []string
	set  map[string]bool
	zset map[string]float64
}

func (m *modelValue) canon() string {
	switch {
	case m.str != nil:
		return "string " + strconv.Quote(*m.str)
	case m.hash != nil:
		var p []string
		for f, v := range m.hash {
			p = append(p, strconv.Quote(f)+"="+strconv.Quote(v))
		}
		sort.Strings(p)
		return "hash " + strings.Join(p, " ")
	case m.list != nil:
		return "list " + strings.Join(m.list, "\x00")
	case m.set != nil:
		var p []string
		for k := range m.set {
			p = append(p, k)
		}
		sort.Strings(p)
		return "set " + strings.Join(p, "\x00")
	default:
		var p []string
		for k, v := range m.zset {
			p = append(p, k+":"+strconv.FormatFloat(v, 'g', -1, 64))
		}
		sort.Strings(p)
		return "zset " + strings.Join(p, " ")
	}
}

// canonValue renders a loaded value the way modelValue.canon does.
func canonValue(v rdb.Value) string {
	m := &modelValue{}
	switch o := v.Obj.(type) {
	case nil:
		s := string(v.Str)
		m.str = &s
	case *keyspace.Hash:
		m.hash = map[string]string{}
		o.Each(func(f, v []byte) bool { m.hash[string(f)] = string(v); return true })
	case *keyspace.List:
		m.list = []string{}
		o.Each(func(v []byte) bool { m.list = append(m.list, string(v)); return true })
	case *keyspace.Set:
		m.set = map[string]bool{}
		o.Each(func(x []byte) bool { m.set[string(x)] = true; return true })
	case *keyspace.ZSet:
		m.zset = map[string]float64{}
		o.Each(func(e keyspace.Entry) bool { m.zset[string(e.Member)] = e.Score; return true })
	}
	return m.canon()
}

type keyModel struct {
	rng  *rand.Rand
	keys map[string]*modelValue // "db/key"
}

// op returns a random write and applies it to the model.
func (km *keyModel) op(strings, colls int) []string {
	r := km.rng
	pick := func(prefix string, n int) string { return fmt.Sprintf("%s:%d", prefix, r.IntN(n)) }
	val := fmt.Sprintf("v%d", r.IntN(1_000_000))
	get := func(k string) *modelValue { return km.keys["0/"+k] }
	switch r.IntN(12) {
	case 0, 1, 2:
		k := pick("str", strings+strings/10)
		km.keys["0/"+k] = &modelValue{str: &val}
		return []string{"SET", k, val}
	case 3:
		k := pick("str", strings)
		if m := get(k); m != nil {
			s := *m.str + "x"
			m.str = &s
		} else {
			s := "x"
			km.keys["0/"+k] = &modelValue{str: &s}
		}
		return []string{"APPEND", k, "x"}
	case 4:
		k := pick([]string{"str", "hash", "list", "set", "zset"}[r.IntN(5)], colls)
		delete(km.keys, "0/"+k)
		return []string{"DEL", k}
	case 5:
		k, f := pick("hash", colls), pick("f", 300)
		m := get(k)
		if m == nil {
			m = &modelValue{hash: map[string]string{}}
			km.keys["0/"+k] = m
		}
		m.hash[f] = val
		return []string{"HSET", k, f, val}
	case 6:
		k := pick("list", colls)
		m := get(k)
		if m == nil {
			m = &modelValue{list: []string{}}
			km.keys["0/"+k] = m
		}
		m.list = append(m.list, val)
		return []string{"RPUSH", k, val}
	case 7:
		k := pick("list", colls)
		if m := get(k); m != nil {
			m.list = m.list[1:]
			if len(m.list) == 0 {
				delete(km.keys, "0/"+k)
			}
		}
		return []string{"LPOP", k}
	case 8:
		k := pick("set", colls)
		m := get(k)
		if m == nil {
			m = &modelValue{set: map[string]bool{}}
			km.keys["0/"+k] = m
		}
		m.set[val] = true
		return []string{"SADD", k, val}
	case 9:
		k := pick("zset", colls)
		m := get(k)
		if m == nil {
			m = &modelValue{zset: map[string]float64{}}
			km.keys["0/"+k] = m
		}
		score := float64(r.IntN(1000)) / 4
		m.zset[val] = score
		return []string{"ZADD", k, strconv.FormatFloat(score, 'g', -1, 64), val}
	case 10:
		a, b := pick("str", strings), pick("str", strings)
		if m := get(a); m != nil && a != b {
			km.keys["0/"+b] = m
			delete(km.keys, "0/"+a)
			return []string{"RENAME", a, b}
		}
		return []string{"PING"}
	default:
		k := pick("str", strings)
		return []string{"EXPIRE", k, "100000"} // TTLs are not compared; the value stays
	}
}

// pipeline sends commands in one write and reads every reply.
func (p *peerConn) pipeline(cmds [][]string) []string {
	p.t.Helper()
	var b strings.Builder
	for _, cmd := range cmds {
		fmt.Fprintf(&b, "*%d\r\n", len(cmd))
		for _, a := range cmd {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
	}
	go func() { _, _ = io.WriteString(p.c, b.String()) }()
	_ = p.c.SetReadDeadline(time.Now().Add(60 * time.Second))
	out := make([]string, len(cmds))
	for i := range cmds {
		var r strings.Builder
		if err := readRawReply(p.br, &r); err != nil {
			p.t.Fatalf("reply %d: %v", i, err)
		}
		out[i] = r.String()
	}
	return out
}

// TestBGSaveIsPointInTime: BGSAVE under a write load saves exactly the keyspace of the moment it
// ran, checked against the test's own model, for strings and collections, keys changed, deleted,
// renamed and created during the save, and a database flushed during it.
func TestBGSaveIsPointInTime(t *testing.T) {
	const strs, colls = 60000, 300
	dir := t.TempDir()
	_, addr := startServer(t, func(c *config.Config) { c.Dir = dir; c.Save = "" })
	c := dialPeer(t, addr)
	km := &keyModel{rng: rand.New(rand.NewPCG(7, 7)), keys: map[string]*modelValue{}}
	var batch [][]string
	send := func() {
		for i, r := range c.pipeline(batch) {
			if strings.HasPrefix(r, "-") {
				t.Fatalf("%q: %q", batch[i], r)
			}
		}
		batch = batch[:0]
	}
	for i := 0; i < strs; i++ {
		v := fmt.Sprintf("value-%d", i)
		km.keys[fmt.Sprintf("0/str:%d", i)] = &modelValue{str: &v}
		batch = append(batch, []string{"SET", fmt.Sprintf("str:%d", i), v})
		if len(batch) == 5000 {
			send()
		}
	}
	for i := 0; i < colls*200; i++ {
		batch = append(batch, km.opOn(i%colls, i/colls))
		if len(batch) == 5000 {
			send()
		}
	}
	send()
	for i := 0; i < 50; i++ {
		v := fmt.Sprint(i)
		km.keys[fmt.Sprintf("2/db2:%d", i)] = &modelValue{str: &v}
		batch = append(batch, []string{"SELECT", "2"}, []string{"SET", fmt.Sprintf("db2:%d", i), v}, []string{"SELECT", "0"})
	}
	send()

	cut := map[string]string{}
	for k, m := range km.keys {
		cut[k] = m.canon()
	}
	batch = append(batch, []string{"BGSAVE"}, []string{"SELECT", "2"}, []string{"FLUSHDB"}, []string{"SET", "after", "x"}, []string{"SELECT", "0"})
	for k := range km.keys {
		if strings.HasPrefix(k, "2/") {
			delete(km.keys, k)
		}
	}
	duringSave := 0
	for round := 0; round < 40; round++ {
		for i := 0; i < 3000; i++ {
			batch = append(batch, km.op(strs, colls))
		}
		send()
		if !strings.Contains(c.do("INFO", "persistence"), "rdb_bgsave_in_progress:1") {
			break
		}
		duringSave++
	}
	t.Logf("%d rounds of 3000 writes ran during the save", duringSave)
	deadline := time.Now().Add(60 * time.Second)
	for strings.Contains(c.do("INFO", "persistence"), "rdb_bgsave_in_progress:1") {
		if time.Now().After(deadline) {
			t.Fatal("BGSAVE did not finish")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if info := c.do("INFO", "persistence"); !strings.Contains(info, "rdb_last_bgsave_status:ok") {
		t.Fatalf("BGSAVE failed: %s", info)
	}
	got := loadDump(t, filepath.Join(dir, "dump.rdb"))
	bad := 0
	for k, want := range cut {
		if g, ok := got[k]; !ok {
			t.Errorf("%s missing from the snapshot", k)
			bad++
		} else if g != want {
			t.Errorf("%s in the snapshot:\n got  %.200s\n want %.200s", k, g, want)
			bad++
		}
		if bad > 10 {
			t.FailNow()
		}
	}
	for k := range got {
		if _, ok := cut[k]; !ok {
			t.Errorf("%s is in the snapshot but did not exist at the cut", k)
		}
	}
	// The server itself went on with every write.
	for _, k := range []string{"str:1", "hash:1", "list:2", "zset:3"} {
		m := km.keys["0/"+k]
		reply := c.do("TYPE", k)
		if (m == nil) != (reply == "+none\r\n") {
			t.Errorf("%s: model %v, TYPE %q", k, m != nil, reply)
		}
	}
}

// opOn fills collection j with its n-th element (the initial data set).
func (km *keyModel) opOn(j, n int) []string {
	v := fmt.Sprintf("e%d", n)
	switch j % 4 {
	case 0:
		k := fmt.Sprintf("hash:%d", j)
		m := km.keys["0/"+k]
		if m == nil {
			m = &modelValue{hash: map[string]string{}}
			km.keys["0/"+k] = m
		}
		m.hash["f"+v] = v
		return []string{"HSET", k, "f" + v, v}
	case 1:
		k := fmt.Sprintf("list:%d", j)
		m := km.keys["0/"+k]
		if m == nil {
			m = &modelValue{list: []string{}}
			km.keys["0/"+k] = m
		}
		m.list = append(m.list, v)
		return []string{"RPUSH", k, v}
	case 2:
		k := fmt.Sprintf("set:%d", j)
		m := km.keys["0/"+k]
		if m == nil {
			m = &modelValue{set: map[string]bool{}}
			km.keys["0/"+k] = m
		}
		m.set[v] = true
		return []string{"SADD", k, v}
	default:
		k := fmt.Sprintf("zset:%d", j)
		m := km.keys["0/"+k]
		if m == nil {
			m = &modelValue{zset: map[string]float64{}}
			km.keys["0/"+k] = m
		}
		m.zset[v] = float64(n)
		return []string{"ZADD", k, strconv.Itoa(n), v}
	}
}
