package rdb

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/iocache/iocache/server/keyspace"
	"github.com/iocache/iocache/server/testpeer"
)

// Differential tests against Debian's redis-server: files it writes load with the same contents,
// and files iocache writes pass redis-check-rdb and load into it with the same contents.

// redisPeer runs redis-server on a unix socket in dir, loading dir/dump.rdb if present.
func redisPeer(t *testing.T, dir string, args ...string) *redis.Client {
	t.Helper()
	bin := testpeer.Require(t, "redis-server")
	sock := filepath.Join(dir, "redis.sock")
	all := append([]string{"--port", "0", "--unixsocket", sock, "--dir", dir, "--dbfilename", "dump.rdb",
		"--save", "", "--appendonly", "no", "--enable-debug-command", "yes"}, args...)
	cmd := exec.Command(bin, all...)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	c := redis.NewClient(&redis.Options{Network: "unix", Addr: sock, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	for i := 0; i < 300; i++ {
		if c.Ping(context.Background()).Err() == nil {
			return c
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("redis-server did not start: %s", logs.String())
	return nil
}

// populate writes every type in its small and large encodings, with TTLs, in three databases.
func populate(t *testing.T, c *redis.Client) {
	ctx := context.Background()
	do := func(args ...any) {
		t.Helper()
		if err := c.Do(ctx, args...).Err(); err != nil && err != redis.Nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	do("DEBUG", "POPULATE", 2000, "pop", 20)
	for name, v := range map[string]string{"int8": "12", "int16": "-3000", "int32": "2000000000", "int64": "9000000000", "empty": "", "lzf": strings.Repeat("abcdefgh", 200), "text": "hello world", "lead0": "007"} {
		do("SET", "s:"+name, v)
	}
	do("SET", "ttl:1", "v", "PX", 86400000)
	do("APPEND", "appended", "x")
	do("SETRANGE", "appended", 100, "y")
	do("INCRBYFLOAT", "float", "1.5")
	do("RPUSH", "l:small", "a", "1", "-70000", "b")
	for i := 0; i < 3000; i++ {
		do("RPUSH", "l:big", fmt.Sprintf("element-%d", i), i*i, strings.Repeat("q", i%300))
	}
	do("LPUSH", "l:huge", strings.Repeat("h", 20000))
	do("HSET", "h:small", "a", "1", "b", "two", "c", "-3")
	do("HSET", "h:longval", "f", strings.Repeat("v", 100))
	for i := 0; i < 300; i++ {
		do("HSET", "h:big", fmt.Sprintf("field%d", i), i)
	}
	do("SADD", "set:int", 1, 2, 3, -100, 70000, "9223372036854775807")
	do("SADD", "set:str", "a", "b", "c")
	for i := 0; i < 600; i++ {
		do("SADD", "set:bigint", i*3)
		do("SADD", "set:big", fmt.Sprintf("m%d", i))
	}
	do("ZADD", "z:small", 1, "a", 2.5, "b", "-inf", "c", "+inf", "d", 0.1, "e", -3, "f")
	do("ZADD", "z:long", 1, strings.Repeat("m", 80))
	for i := 0; i < 300; i++ {
		do("ZADD", "z:big", float64(i)/7, fmt.Sprintf("member%d", i))
	}
	do("EXPIRE", "z:big", 100000)
	do("XADD", "x:small", "1-1", "a", "1")
	do("XADD", "x:small", "1-2", "a", "2", "b", "3")
	for i := 0; i < 1500; i++ {
		if i%10 == 0 {
			do("XADD", "x:big", "*", "odd", i, "more", "fields")
		} else {
			do("XADD", "x:big", "*", "field", i, "name", fmt.Sprintf("value-%d", i))
		}
	}
	ids, err := c.XRangeN(ctx, "x:big", "-", "+", 40).Result()
	if err != nil {
		t.Fatal(err)
	}
	do("XDEL", "x:big", ids[3].ID, ids[20].ID)
	do("XGROUP", "CREATE", "x:big", "g1", "0")
	do("XGROUP", "CREATE", "x:big", "g2", "$")
	do("XREADGROUP", "GROUP", "g1", "alice", "COUNT", 10, "STREAMS", "x:big", ">")
	do("XREADGROUP", "GROUP", "g1", "bob", "COUNT", 5, "STREAMS", "x:big", ">")
	do("XACK", "x:big", "g1", ids[0].ID, ids[1].ID)
	do("XGROUP", "CREATECONSUMER", "x:big", "g1", "carol")
	do("XCLAIM", "x:big", "g1", "carol", 0, ids[5].ID)
	do("XADD", "x:empty", "5-5", "a", "b")
	do("XDEL", "x:empty", "5-5")
	do("XGROUP", "CREATE", "x:empty", "g", "$")
	do("XADD", "x:trim", "MAXLEN", 3, "*", "a", 1)
	for i := 0; i < 10; i++ {
		do("XADD", "x:trim", "MAXLEN", 3, "*", "a", i)
	}
	do("SELECT", 2)
	do("SET", "db2", "x")
	do("HSET", "db2h", "a", "b")
	do("SELECT", 15)
	do("RPUSH", "db15", "x")
	do("PEXPIREAT", "db15", time.Now().Add(time.Hour).UnixMilli())
	do("SELECT", 0)
}

// fetch reads every key of every database from a server into values, with expiry times.
func fetch(t *testing.T, c *redis.Client) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	for db := 0; db < 16; db++ {
		conn := c.Conn()
		if err := conn.Select(ctx, db).Err(); err != nil {
			t.Fatal(err)
		}
		keys, err := conn.Keys(ctx, "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			v := fetchValue(t, conn, k)
			exp, err := conn.Do(ctx, "PEXPIRETIME", k).Int64()
			if err != nil {
				t.Fatal(err)
			}
			out[fmt.Sprintf("%d/%s", db, k)] = fmt.Sprintf("%s ttl=%d", canonical(v), max(exp, 0))
		}
		conn.Close()
	}
	return out
}

func fetchValue(t *testing.T, c *redis.Conn, k string) Value {
	ctx := context.Background()
	typ, err := c.Type(ctx, k).Result()
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
	}
	switch typ {
	case "string":
		s, err := c.Get(ctx, k).Result()
		must(err)
		return Value{Type: keyspace.TypeString, Str: []byte(s)}
	case "list":
		l := keyspace.NewList()
		items, err := c.LRange(ctx, k, 0, -1).Result()
		must(err)
		for _, s := range items {
			l.PushBack([]byte(s))
		}
		return Value{Type: keyspace.TypeList, Obj: l}
	case "hash":
		h := keyspace.NewHash()
		m, err := c.HGetAll(ctx, k).Result()
		must(err)
		for f, v := range m {
			h.Set([]byte(f), []byte(v))
		}
		return Value{Type: keyspace.TypeHash, Obj: h}
	case "set":
		s := keyspace.NewSet()
		m, err := c.SMembers(ctx, k).Result()
		must(err)
		for _, v := range m {
			s.Add([]byte(v))
		}
		return Value{Type: keyspace.TypeSet, Obj: s}
	case "zset":
		z := keyspace.NewZSet()
		m, err := c.ZRangeWithScores(ctx, k, 0, -1).Result()
		must(err)
		for _, e := range m {
			z.Add([]byte(e.Member.(string)), e.Score)
		}
		return Value{Type: keyspace.TypeZSet, Obj: z}
	case "stream":
		return Value{Type: keyspace.TypeStream, Obj: fetchStream(t, c, k)}
	}
	t.Fatalf("%s: type %s", k, typ)
	return Value{}
}

func parseID(t *testing.T, s string) keyspace.StreamID {
	ms, seq, _ := strings.Cut(s, "-")
	a, err1 := strconv.ParseUint(ms, 10, 64)
	b, err2 := strconv.ParseUint(seq, 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("bad id %q", s)
	}
	return keyspace.StreamID{Ms: a, Seq: b}
}

func fetchStream(t *testing.T, c *redis.Conn, k string) *keyspace.Stream {
	ctx := context.Background()
	s := keyspace.NewStream()
	// The raw reply keeps the fields in order (go-redis's XRange returns a map).
	raw, err := c.Do(ctx, "XRANGE", k, "-", "+").Slice()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range raw {
		pair := e.([]any)
		var fields [][]byte
		for _, f := range pair[1].([]any) {
			fields = append(fields, []byte(f.(string)))
		}
		s.Append(parseID(t, pair[0].(string)), fields)
	}
	info, err := c.Do(ctx, "XINFO", "STREAM", k).Slice()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(info); i += 2 {
		switch info[i].(string) {
		case "last-generated-id":
			s.LastID = parseID(t, info[i+1].(string))
		case "max-deleted-entry-id":
			s.MaxDeletedID = parseID(t, info[i+1].(string))
		case "entries-added":
			s.EntriesAdded = uint64(info[i+1].(int64))
		}
	}
	groups, err := c.Do(ctx, "XINFO", "GROUPS", k).Slice()
	if err != nil {
		t.Fatal(err)
	}
	for _, gr := range groups {
		f := gr.([]any)
		var name string
		var last keyspace.StreamID
		read := int64(keyspace.InvalidEntriesRead)
		for i := 0; i+1 < len(f); i += 2 {
			switch f[i].(string) {
			case "name":
				name = f[i+1].(string)
			case "last-delivered-id":
				last = parseID(t, f[i+1].(string))
			case "entries-read":
				if f[i+1] != nil {
					read = f[i+1].(int64)
				}
			}
		}
		s.CreateGroup(name, last, read)
		g := s.Groups[name]
		consumers, err := c.XInfoConsumers(ctx, k, name).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, cn := range consumers {
			g.Consumer(cn.Name, 0, true)
		}
		pel, err := c.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: k, Group: name, Start: "-", End: "+", Count: 1 << 20}).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pel {
			pe := g.Claim(parseID(t, p.ID), g.Consumers[p.Consumer])
			pe.DeliveryCount = p.RetryCount
		}
	}
	return s
}

// loadFile reads an RDB file into the same form as fetch.
func loadFile(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	if _, err := Load(f, Handler{Entry: func(e *Entry) error {
		out[fmt.Sprintf("%d/%s", e.DB, e.Key)] = fmt.Sprintf("%s ttl=%d", canonical(e.Value), e.ExpireAt)
		return nil
	}}); err != nil {
		t.Fatalf("loading %s: %v", path, err)
	}
	return out
}

func compareKeyspaces(t *testing.T, want, got map[string]string) {
	t.Helper()
	if len(want) < 2000 || !strings.Contains(want["0/x:big"], `group "g1"`) {
		t.Fatalf("the populated keyspace is not what the test expects: %d keys", len(want))
	}
	for k, w := range want {
		if g, ok := got[k]; !ok {
			t.Errorf("%s missing", k)
		} else if g != w {
			t.Errorf("%s differs:\nwant %.400s\ngot  %.400s", k, w, g)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s unexpected", k)
		}
	}
}

// TestLoadRedisWrittenFile: what Redis 7.0 writes (compressed and not, every encoding) loads with
// the contents Redis serves.
func TestLoadRedisWrittenFile(t *testing.T) {
	for _, compression := range []string{"yes", "no"} {
		dir := t.TempDir()
		c := redisPeer(t, dir, "--rdbcompression", compression)
		populate(t, c)
		want := fetch(t, c)
		if err := c.Save(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		compareKeyspaces(t, want, loadFile(t, filepath.Join(dir, "dump.rdb")))
	}
}

// TestRedisLoadsIocacheFile: a file this package writes passes redis-check-rdb and loads into
// Redis with the same contents.
func TestRedisLoadsIocacheFile(t *testing.T) {
	check := testpeer.Require(t, "redis-check-rdb")
	src := t.TempDir()
	c := redisPeer(t, src)
	populate(t, c)
	want := fetch(t, c)
	if err := c.Save(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	// Re-encode what Redis wrote, with iocache's encoder, grouped by database.
	f, err := os.Open(filepath.Join(src, "dump.rdb"))
	if err != nil {
		t.Fatal(err)
	}
	type keyed struct {
		key []byte
		v   Value
		m   KeyMeta
	}
	byDB := map[int][]keyed{}
	if _, err := Load(f, Handler{Entry: func(e *Entry) error {
		byDB[e.DB] = append(byDB[e.DB], keyed{append([]byte(nil), e.Key...), e.Value, e.KeyMeta})
		return nil
	}}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, compression := range []bool{true, false} {
		dir := t.TempDir()
		out, err := os.Create(filepath.Join(dir, "dump.rdb"))
		if err != nil {
			t.Fatal(err)
		}
		o := DefaultOptions()
		o.Compression = compression
		e := NewEncoder(out, o)
		e.Header()
		e.Aux("redis-ver", "7.0.15")
		e.Aux("redis-bits", "64")
		e.Aux("ctime", strconv.FormatInt(time.Now().Unix(), 10))
		e.Aux("used-mem", "1000000")
		e.Aux("aof-base", "0")
		for db := 0; db < 16; db++ {
			keys := byDB[db]
			if len(keys) == 0 {
				continue
			}
			expires := 0
			for _, k := range keys {
				if k.m.ExpireAt > 0 {
					expires++
				}
			}
			e.SelectDB(db, len(keys), expires)
			for _, k := range keys {
				e.Key(k.key, k.v, k.m)
			}
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		out.Close()
		if res, err := exec.Command(check, filepath.Join(dir, "dump.rdb")).CombinedOutput(); err != nil || !strings.Contains(string(res), "RDB looks OK!") {
			t.Fatalf("redis-check-rdb (compression %v): %v\n%s", compression, err, res)
		}
		back := redisPeer(t, dir)
		compareKeyspaces(t, want, fetch(t, back))
	}
}

// TestDumpPayloadsWithRedis: Redis's DUMP payloads decode to what Redis serves, and iocache's
// payloads RESTORE into Redis with the same contents.
func TestDumpPayloadsWithRedis(t *testing.T) {
	ctx := context.Background()
	c := redisPeer(t, t.TempDir())
	populate(t, c)
	conn := c.Conn()
	defer conn.Close()
	keys, err := conn.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, k := range keys {
		if strings.HasPrefix(k, "pop:") && checked > 50 {
			continue
		}
		checked++
		want := canonical(fetchValue(t, conn, k))
		payload, err := conn.Dump(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		v, err := Restore([]byte(payload))
		if err != nil {
			t.Fatalf("%s: Redis's payload: %v", k, err)
		}
		if got := canonical(v); got != want {
			t.Fatalf("%s: Redis's payload decodes to\n%.300s\nnot\n%.300s", k, got, want)
		}
		for _, compression := range []bool{true, false} {
			o := DefaultOptions()
			o.Compression = compression
			if err := conn.Do(ctx, "RESTORE", "restored", 0, Dump(v, o), "REPLACE").Err(); err != nil {
				t.Fatalf("%s: Redis refuses iocache's payload: %v", k, err)
			}
			if got := canonical(fetchValue(t, conn, "restored")); got != want {
				t.Fatalf("%s: restored in Redis as\n%.300s\nnot\n%.300s", k, got, want)
			}
		}
	}
}
