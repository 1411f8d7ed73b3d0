package engine

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// Every write owes the rest of the server the same effects (write.go): a keyspace notification,
// the deletion of a collection it emptied, the dirty counter, WATCH, client-side caching. This
// test runs every command the command table flags "write" — the list comes from the table, and
// each command runs the examples below plus one built from Redis's COMMAND DOCS (docExamples),
// so a new write command is covered without touching this file — against redis-server and iocache
// side by side, and compares what each server did: the reply, the keyspace events in order, the
// keys whose tracking was invalidated, which WATCHed keys abort a transaction, whether the dirty
// counter moved, and the type, size, contents and TTL of every key afterwards. Each example runs
// once as written and once more with its first key replaced by a missing key and by a key of
// every other type, so the error paths are compared too (a WRONGTYPE must have no effect).

// writeExamples are invocations of each write command, run on the fixture below. "@dump:K" is
// replaced by the server's own DUMP of key K.
var writeExamples = map[string][]string{
	"append":     {"APPEND s xyz", "APPEND d xyz"},
	"bitfield":   {"BITFIELD s SET u8 0 255 GET u8 0", "BITFIELD d INCRBY i5 100 1", "BITFIELD s GET u8 0"},
	"bitop":      {"BITOP AND d s n", "BITOP NOT d missing", "BITOP OR s s"},
	"blmove":     {"BLMOVE l d LEFT RIGHT 0.01", "BLMOVE l1 l RIGHT LEFT 0.01", "BLMOVE l l LEFT RIGHT 0.01"},
	"blmpop":     {"BLMPOP 0.01 2 missing l1 LEFT", "BLMPOP 0.01 1 l RIGHT COUNT 2", "BLMPOP 0.01 1 s LEFT"},
	"blpop":      {"BLPOP l1 0.01", "BLPOP missing l 0.01"},
	"brpop":      {"BRPOP l 0.01", "BRPOP l1 0.01"},
	"brpoplpush": {"BRPOPLPUSH l1 d 0.01", "BRPOPLPUSH l l 0.01"},
	"bzmpop":     {"BZMPOP 0.01 1 z1 MIN", "BZMPOP 0.01 2 missing z MAX COUNT 5", "BZMPOP 0.01 1 s MIN"},
	"bzpopmax":   {"BZPOPMAX z 0.01", "BZPOPMAX z1 0.01"},
	"bzpopmin":   {"BZPOPMIN z1 0.01", "BZPOPMIN missing z 0.01"},
	"copy":       {"COPY s d", "COPY h d", "COPY s h", "COPY s h REPLACE", "COPY z d DB 1"},
	"decr":       {"DECR n", "DECR d", "DECR s"},
	"decrby":     {"DECRBY n 5", "DECRBY d 3"},
	"del":        {"DEL s", "DEL h l missing", "DEL missing"},
	"expire":     {"EXPIRE s 100", "EXPIRE h 0", "EXPIRE s 100 NX", "EXPIRE missing 100", "EXPIRE s -1"},
	"expireat":   {"EXPIREAT s 4000000000", "EXPIREAT l 1"},
	"flushall":   {"FLUSHALL", "FLUSHALL SYNC"},
	"flushdb":    {"FLUSHDB", "FLUSHDB ASYNC"},
	"geoadd":     {"GEOADD geo 13.5 38.1 X", "GEOADD d 13.5 38.1 X", "GEOADD geo XX 13.5 38.1 Palermo", "GEOADD geo NX 13.361389 38.115556 Palermo"},
	// No STOREDIST on a distance whose last bits differ: Go's math.Sin and glibc's round apart.
	"georadius":         {"GEORADIUS geo 15 37 200 km STORE d", "GEORADIUS geo 0 0 1 km STORE s"},
	"georadiusbymember": {"GEORADIUSBYMEMBER geo Palermo 300 km STORE d", "GEORADIUSBYMEMBER geo Palermo 1 m STORE h"},
	"geosearchstore":    {"GEOSEARCHSTORE d geo FROMLONLAT 15 37 BYRADIUS 200 km", "GEOSEARCHSTORE s geo FROMLONLAT 0 0 BYRADIUS 1 km", "GEOSEARCHSTORE d geo FROMMEMBER Palermo BYBOX 400 400 km STOREDIST"},
	"getdel":            {"GETDEL s", "GETDEL missing"},
	"getex":             {"GETEX s EX 100", "GETEX s PERSIST", "GETEX s PXAT 1", "GETEX s"},
	"getset":            {"GETSET s new", "GETSET d new"},
	"hdel":              {"HDEL h f1", "HDEL h1 f", "HDEL h nope", "HDEL h f1 f2"},
	"hincrby":           {"HINCRBY h f2 3", "HINCRBY d f 3", "HINCRBY h f1 1", "HINCRBY d f x"},
	"hincrbyfloat":      {"HINCRBYFLOAT h f2 1.5", "HINCRBYFLOAT d f 1.5", "HINCRBYFLOAT h f1 1", "HINCRBYFLOAT d f inf"},
	"hmset":             {"HMSET h f1 x f3 y", "HMSET d a b"},
	"hset":              {"HSET h f1 x", "HSET h f3 y", "HSET d a b"},
	"hsetnx":            {"HSETNX h f1 x", "HSETNX h f9 x", "HSETNX d f x"},
	"incr":              {"INCR n", "INCR d", "INCR s"},
	"incrby":            {"INCRBY n 5", "INCRBY d 9223372036854775807", "INCRBY n 9223372036854775807"},
	"incrbyfloat":       {"INCRBYFLOAT n 1.5", "INCRBYFLOAT d 2", "INCRBYFLOAT s 1"},
	"linsert":           {"LINSERT l BEFORE b x", "LINSERT l AFTER nope x", "LINSERT d BEFORE a x"},
	"lmove":             {"LMOVE l d LEFT RIGHT", "LMOVE l1 l RIGHT LEFT", "LMOVE l1 l1 LEFT RIGHT", "LMOVE l s LEFT LEFT"},
	"lmpop":             {"LMPOP 2 missing l1 LEFT", "LMPOP 1 l RIGHT COUNT 5", "LMPOP 1 s LEFT"},
	"lpop":              {"LPOP l", "LPOP l1", "LPOP l 10", "LPOP l 0"},
	"lpush":             {"LPUSH l x y", "LPUSH d x"},
	"lpushx":            {"LPUSHX l x", "LPUSHX d x"},
	"lrem":              {"LREM l 0 a", "LREM l1 0 a", "LREM l 0 nope"},
	"lset":              {"LSET l 0 x", "LSET l 9 x", "LSET d 0 x"},
	"ltrim":             {"LTRIM l 0 0", "LTRIM l 5 10", "LTRIM l 0 -1"},
	"migrate":           nil, // connects to the host it names: TestMigrate* (cmd_migrate_test.go) use loopback
	"move":              {"MOVE s 1", "MOVE h 1", "MOVE missing 1"},
	"mset":              {"MSET s 1 d 2"},
	"msetnx":            {"MSETNX d 1 e 2", "MSETNX d 1 s 2"},
	"persist":           {"PERSIST t", "PERSIST s", "PERSIST missing"},
	"pexpire":           {"PEXPIRE s 100000", "PEXPIRE z 0", "PEXPIRE t 100000 GT"},
	"pexpireat":         {"PEXPIREAT s 4000000000000", "PEXPIREAT st 1"},
	"pfadd":             {"PFADD hll x", "PFADD hll a", "PFADD d a", "PFADD d"},
	"pfdebug":           {"PFDEBUG TODENSE hll", "PFDEBUG TODENSE s"},
	"pfmerge":           {"PFMERGE d hll", "PFMERGE hll", "PFMERGE d missing"},
	"psetex":            {"PSETEX s 100000 v", "PSETEX d 100000 v"},
	"rename":            {"RENAME s d", "RENAME h s", "RENAME missing d", "RENAME s s"},
	"renamenx":          {"RENAMENX s d", "RENAMENX h s"},
	"restore":           {"RESTORE d 0 @dump:h", "RESTORE s 0 @dump:z REPLACE", "RESTORE s 0 @dump:h", "RESTORE d 0 garbage"},
	"restore-asking":    {"RESTORE-ASKING d 0 @dump:l"},
	"rpop":              {"RPOP l", "RPOP l1", "RPOP l 2"},
	"rpoplpush":         {"RPOPLPUSH l d", "RPOPLPUSH l1 l", "RPOPLPUSH l1 l1"},
	"rpush":             {"RPUSH l x", "RPUSH d x y"},
	"rpushx":            {"RPUSHX l x", "RPUSHX d x"},
	"sadd":              {"SADD st c", "SADD st a", "SADD d 1 2", "SADD i 3 x"},
	"sdiffstore":        {"SDIFFSTORE d st st1", "SDIFFSTORE d st1 st", "SDIFFSTORE s st1 st"},
	"set":               {"SET s v", "SET d v EX 100", "SET s v NX", "SET s v XX GET", "SET h v", "SET s v KEEPTTL", "SET s v PXAT 1"},
	"setbit":            {"SETBIT s 1 1", "SETBIT d 100 1", "SETBIT s 1 0"},
	"setex":             {"SETEX s 100 v", "SETEX d 100 v"},
	"setnx":             {"SETNX s v", "SETNX d v"},
	"setrange":          {"SETRANGE s 1 xy", "SETRANGE d 5 x", "SETRANGE d 0 \"\""},
	"sinterstore":       {"SINTERSTORE d st st1", "SINTERSTORE d st missing", "SINTERSTORE st st1"},
	"smove":             {"SMOVE st d a", "SMOVE st1 st a", "SMOVE st st1 a", "SMOVE st st nope", "SMOVE st1 s a"},
	"sort":              {"SORT l ALPHA STORE d", "SORT l1 STORE d", "SORT missing STORE s", "SORT i STORE d"},
	"spop":              {"SPOP st1", "SPOP st 5", "SPOP st 1", "SPOP st 0"},
	"srem":              {"SREM st a", "SREM st1 a", "SREM st nope", "SREM i 1 2"},
	"sunionstore":       {"SUNIONSTORE d st i", "SUNIONSTORE s missing"},
	"swapdb":            {"SWAPDB 0 1", "SWAPDB 1 1"},
	"unlink":            {"UNLINK s h", "UNLINK missing"},
	"xack":              {"XACK x g 1-1", "XACK x g 9-9", "XACK x nogroup 1-1"},
	"xadd":              {"XADD x 2-1 f v", "XADD d 1-1 f v", "XADD x 0-1 f v", "XADD x MAXLEN 1 3-1 f v", "XADD d NOMKSTREAM 1-1 f v"},
	"xautoclaim":        {"XAUTOCLAIM x g c2 0 0", "XAUTOCLAIM x nogroup c2 0 0"},
	"xclaim":            {"XCLAIM x g c2 0 1-1", "XCLAIM x g c2 0 1-1 JUSTID", "XCLAIM x g c2 0 9-9"},
	"xdel":              {"XDEL x 1-1", "XDEL x 9-9"},
	"xgroup": {"XGROUP CREATE x g2 0", "XGROUP CREATE x g 0", "XGROUP CREATE d g $ MKSTREAM", "XGROUP SETID x g 0",
		"XGROUP DESTROY x g", "XGROUP DESTROY x nope", "XGROUP CREATECONSUMER x g c9", "XGROUP CREATECONSUMER x g c1",
		"XGROUP DELCONSUMER x g c1", "XGROUP DELCONSUMER x g nope"},
	"xreadgroup":       {"XREADGROUP GROUP g c2 STREAMS x 0", "XREADGROUP GROUP g c2 STREAMS x >", "XREADGROUP GROUP nogroup c2 STREAMS x >"},
	"xsetid":           {"XSETID x 5-0", "XSETID x 0-1"},
	"xtrim":            {"XTRIM x MAXLEN 0", "XTRIM x MAXLEN 5"},
	"zadd":             {"ZADD z 3 c", "ZADD z 1 a", "ZADD d 1 a", "ZADD d XX 1 a", "ZADD d XX INCR 1 a", "ZADD z XX CH 5 a", "ZADD z INCR 1 a", "ZADD z GT 0 a"},
	"zdiffstore":       {"ZDIFFSTORE d 2 z z1", "ZDIFFSTORE d 2 z1 z", "ZDIFFSTORE z1 1 missing"},
	"zincrby":          {"ZINCRBY z 1 a", "ZINCRBY d 1 a"},
	"zinterstore":      {"ZINTERSTORE d 2 z z1", "ZINTERSTORE z 2 z missing", "ZINTERSTORE d 2 z st"},
	"zmpop":            {"ZMPOP 1 z1 MIN", "ZMPOP 2 missing z MAX COUNT 5", "ZMPOP 1 s MIN"},
	"zpopmax":          {"ZPOPMAX z", "ZPOPMAX z1", "ZPOPMAX z 0"},
	"zpopmin":          {"ZPOPMIN z 5", "ZPOPMIN missing"},
	"zrangestore":      {"ZRANGESTORE d z 0 -1", "ZRANGESTORE d z 5 6", "ZRANGESTORE z1 missing 0 -1"},
	"zrem":             {"ZREM z a", "ZREM z1 a", "ZREM z nope"},
	"zremrangebylex":   {"ZREMRANGEBYLEX z - +", "ZREMRANGEBYLEX z [a [a", "ZREMRANGEBYLEX z (z +"},
	"zremrangebyrank":  {"ZREMRANGEBYRANK z 0 -1", "ZREMRANGEBYRANK z 0 0", "ZREMRANGEBYRANK z 5 6"},
	"zremrangebyscore": {"ZREMRANGEBYSCORE z -inf +inf", "ZREMRANGEBYSCORE z 1 1", "ZREMRANGEBYSCORE z 5 6"},
	"zunionstore":      {"ZUNIONSTORE d 2 z z1", "ZUNIONSTORE s 1 missing", "ZUNIONSTORE d 2 z i WEIGHTS 1 2"},
}

// randomWrites choose what they take at random: their replies and the contents they leave are
// not compared, only the effects and sizes.
var randomWrites = map[string]bool{"spop": true}

// writeFixture is the data every example starts from: a key of each type, small and one-element
// collections (an emptying write), a key with a TTL and a stream with a group and a pending entry.
var writeFixture = []string{
	"SET s abc", "SET n 10", "SET t v EX 1000",
	"RPUSH l a b c", "RPUSH l1 a",
	"HSET h f1 v1 f2 2", "HSET h1 f 1",
	"SADD st a b", "SADD st1 a", "SADD i 1 2",
	"ZADD z 1 a 2 b", "ZADD z1 1 a",
	"XADD x 1-1 f v", "XGROUP CREATE x g 0", "XREADGROUP GROUP g c1 STREAMS x >",
	"GEOADD geo 13.361389 38.115556 Palermo 15.087269 37.502669 Catania",
	"PFADD hll a b c",
	"SELECT 1", "SET s other-db", "SELECT 0",
}

// writeKeys are the keys whose state and WATCH are compared after each example.
var writeKeys = []string{"s", "n", "t", "l", "l1", "h", "h1", "st", "st1", "i", "z", "z1", "x", "geo", "hll", "d", "e", "missing"}

// substitutes replace an example's first key: missing, and one key of each type.
var substitutes = []string{"missing", "s", "l", "h", "st", "z", "x"}

func TestWritesHaveTheirEffects(t *testing.T) {
	_, addr := startServer(t, nil)
	redisAddr := startRedisPeer(t)
	ours, theirs := newWriteObserver(t, addr), newWriteObserver(t, redisAddr)
	table := buildCommandTable()
	var names []string
	for name, cmd := range table {
		if cmd.flags&cmdWrite != 0 {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	if len(names) < 90 {
		t.Fatalf("only %d write commands in the table", len(names))
	}
	failures, runs := 0, 0
	for _, name := range names {
		hand, listed := writeExamples[name]
		if listed && hand == nil {
			continue // skipped, with the reason given in writeExamples
		}
		var examples [][]string
		for _, ex := range hand {
			examples = append(examples, strings.Fields(ex))
		}
		examples = append(examples, docExamples(name)...)
		if len(examples) == 0 {
			t.Errorf("write command %q has neither an example in writeExamples nor COMMAND DOCS to build one from", name)
			continue
		}
		for _, ex := range examples {
			for _, argv := range variants(ex, table[name].firstKey) {
				runs++
				want := theirs.run(argv, randomWrites[name])
				got := ours.run(argv, randomWrites[name])
				if want != got {
					failures++
					if failures <= 300 {
						t.Errorf("%s:\n%s", strings.Join(argv, " "), lineDiff(want, got))
					}
				}
			}
		}
	}
	if failures > 300 {
		t.Errorf("... and %d more examples differ", failures-300)
	}
	t.Logf("%d write commands, %d runs compared", len(names), runs)
}

// variants is the example itself and, when it has a first key, the example with that key
// replaced by each substitute.
func variants(argv []string, firstKey int) [][]string {
	out := [][]string{argv}
	if firstKey <= 0 || firstKey >= len(argv) {
		return out
	}
	for _, k := range substitutes {
		if k == argv[firstKey] {
			continue
		}
		v := slices.Clone(argv)
		v[firstKey] = k
		out = append(out, v)
	}
	return out
}

// writeObserver watches one server: main runs the commands, events hears every keyspace event,
// inval every tracking invalidation (BCAST, redirected to it), and one connection per key WATCHes
// it.
type writeObserver struct {
	t                   *testing.T
	main, events, inval *peerConn
	invalID             string // the inval connection's CLIENT ID, for REDIRECT
	watchers            []*peerConn
}

const subscribedPong = "*2\r\n$4\r\npong\r\n$0\r\n\r\n"

func newWriteObserver(t *testing.T, addr string) *writeObserver {
	o := &writeObserver{t: t, main: dialPeer(t, addr), events: dialPeer(t, addr), inval: dialPeer(t, addr)}
	o.main.do("CONFIG", "SET", "notify-keyspace-events", "KEAn")
	o.events.do("PSUBSCRIBE", "__key*__:*")
	o.invalID = strings.TrimSpace(strings.TrimPrefix(o.inval.do("CLIENT", "ID"), ":"))
	o.inval.do("SUBSCRIBE", "__redis__:invalidate")
	for range writeKeys {
		o.watchers = append(o.watchers, dialPeer(t, addr))
	}
	return o
}

// run sets the fixture up, runs argv and describes everything it changed.
func (o *writeObserver) run(argv []string, random bool) string {
	o.main.do("FLUSHALL")
	o.main.pipeline(splitAll(writeFixture))
	o.drain()
	for i, k := range writeKeys {
		o.watchers[i].do("UNWATCH")
		o.watchers[i].do("WATCH", k)
	}
	dirty := o.dirty()
	argv = o.fillDumps(argv)
	var b strings.Builder
	reply := o.main.do(argv...)
	if random {
		reply = replyKind(reply)
	}
	fmt.Fprintf(&b, "  reply: %q\n", reply)
	var aborted []string
	for i, k := range writeKeys {
		w := o.watchers[i]
		w.do("MULTI")
		w.do("PING")
		if w.do("EXEC") == "*-1\r\n" {
			aborted = append(aborted, k)
		}
	}
	fmt.Fprintf(&b, "  watch aborted: %v\n", aborted)
	fmt.Fprintf(&b, "  dirty moved: %v\n", o.dirty() != dirty)
	for _, k := range writeKeys {
		fmt.Fprintf(&b, "  %s: %s\n", k, o.describe(k, random))
	}
	// The events are read last: a key set with a time already past expires at once in iocache
	// and at the first read in Redis, so the reads above are what make the transcripts comparable.
	o.events.send("PING")
	fmt.Fprintf(&b, "  events: %q\n", strings.TrimSuffix(o.events.readUntil(subscribedPong), subscribedPong))
	o.inval.send("PING")
	fmt.Fprintf(&b, "  invalidated: %v\n", invalidatedKeys(o.inval.readUntil(subscribedPong)))
	return b.String()
}

// drain reads what the fixture's writes sent the listeners, and switches tracking on after them,
// so that only the example invalidates.
func (o *writeObserver) drain() {
	o.events.send("PING")
	o.events.readUntil(subscribedPong)
	o.main.do("CLIENT", "TRACKING", "off")
	o.main.do("CLIENT", "TRACKING", "on", "BCAST", "REDIRECT", o.invalID)
	o.inval.send("PING")
	o.inval.readUntil(subscribedPong)
}

// dirty is the server's count of changes since the last save.
func (o *writeObserver) dirty() string {
	info := o.main.do("INFO", "persistence")
	_, rest, _ := strings.Cut(info, "rdb_changes_since_last_save:")
	v, _, _ := strings.Cut(rest, "\r\n")
	return v
}

// fillDumps replaces "@dump:K" by this server's DUMP of K, and `""` by an empty argument.
func (o *writeObserver) fillDumps(argv []string) []string {
	out := slices.Clone(argv)
	for i, a := range out {
		if a == `""` {
			out[i] = ""
		}
		if k, ok := strings.CutPrefix(a, "@dump:"); ok {
			d := o.main.do("DUMP", k)
			out[i] = d[strings.Index(d, "\r\n")+2 : len(d)-2]
		}
	}
	return out
}

// describe is a key's type, size, TTL class and (unless random) contents.
func (o *writeObserver) describe(k string, random bool) string {
	typ := strings.TrimSpace(strings.TrimPrefix(o.main.do("TYPE", k), "+"))
	ttl := o.main.do("TTL", k)
	if ttl != ":-1\r\n" && ttl != ":-2\r\n" {
		ttl = "has a TTL"
	}
	var size, contents string
	switch typ {
	case "string":
		size, contents = o.main.do("STRLEN", k), o.main.do("GET", k)
	case "list":
		size, contents = o.main.do("LLEN", k), o.main.do("LRANGE", k, "0", "-1")
	case "hash":
		size, contents = o.main.do("HLEN", k), o.main.do("HGETALL", k)
	case "set":
		size, contents = o.main.do("SCARD", k), sortedMembers(o.main.do("SMEMBERS", k))
	case "zset":
		size, contents = o.main.do("ZCARD", k), o.main.do("ZRANGE", k, "0", "-1", "WITHSCORES")
	case "stream":
		size = o.main.do("XLEN", k)
		contents = o.main.do("XRANGE", k, "-", "+") + o.main.do("XINFO", "GROUPS", k)
	}
	if random {
		contents = ""
	}
	return fmt.Sprintf("%s %q %q %q", typ, size, ttl, contents)
}

// invalidatedKeys are the keys that tracking messages name, each once and in order, "(all)" for
// a flush. A set, not the messages: how invalidations are batched into messages is timing (a
// key set with a past time expires at once in iocache, at the next read in Redis).
func invalidatedKeys(messages string) []string {
	var keys []string
	lines := strings.Split(messages, "\r\n")
	for i := 0; i+1 < len(lines); i++ {
		if lines[i] != "__redis__:invalidate" {
			continue
		}
		var n int
		if _, err := fmt.Sscanf(lines[i+1], "*%d", &n); err != nil || n < 0 {
			keys = append(keys, "(all)")
			continue
		}
		for j := 0; j < n && i+3+2*j < len(lines); j++ {
			keys = append(keys, lines[i+3+2*j])
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// lineDiff shows the lines of two descriptions that differ.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, " redis-server %s\n      iocache %s\n", wl, gl)
		}
	}
	return b.String()
}

// replyKind is a reply's type and length line, for replies chosen at random.
func replyKind(reply string) string {
	line, _, _ := strings.Cut(reply, "\r\n")
	return line
}

// sortedMembers puts an array reply's lines in order: sets have no order to compare.
func sortedMembers(reply string) string {
	lines := strings.Split(reply, "\r\n")
	if len(lines) < 2 {
		return reply
	}
	body := lines[1:]
	var items []string
	for i := 0; i+1 < len(body); i += 2 {
		items = append(items, body[i]+"\r\n"+body[i+1])
	}
	slices.Sort(items)
	return lines[0] + "\r\n" + strings.Join(items, "\r\n")
}

// splitAll splits each command line into arguments.
func splitAll(lines []string) [][]string {
	out := make([][]string, len(lines))
	for i, l := range lines {
		out[i] = strings.Fields(l)
	}
	return out
}
