package engine

import (
	"sort"
	"strings"
	"testing"

	"github.com/iocache/iocache/server/resp"
)

// COMMAND INFO, DOCS, GETKEYS and GETKEYSANDFLAGS answer as redis-server 7.0.15 does for the
// commands both have, in RESP2 and RESP3.
func TestCommandIntrospectionMatchesRedis(t *testing.T) {
	_, addr := startServer(t, nil)
	differential(t, addr, split(
		"COMMAND INFO get set zunionstore xread config|get nosuch config|nosuch", "COMMAND INFO GET", "COMMAND INFO sort bitfield",
		"COMMAND DOCS get lcs xadd nosuch", "COMMAND DOCS config|get client|list", "COMMAND DOCS zadd", "COMMAND DOCS GET",
		"COMMAND DOCS geosearch xautoclaim client|kill",
		"COMMAND GETKEYS get", "COMMAND GETKEYS get a", "COMMAND GETKEYS get a b", "COMMAND GETKEYS nosuch a", "COMMAND GETKEYS ping x",
		"COMMAND GETKEYS mset a 1 b 2", "COMMAND GETKEYS mset a 1 b", "COMMAND GETKEYS zunionstore d 2 a b WEIGHTS 1 2",
		"COMMAND GETKEYS zunionstore d x a", "COMMAND GETKEYS zunionstore d 0 a", "COMMAND GETKEYS zunionstore d 5 a",
		"COMMAND GETKEYS eval x 0", "COMMAND GETKEYS eval x 2 a b c", "COMMAND GETKEYS eval x y", "COMMAND GETKEYS evalsha_ro x 1 k",
		"COMMAND GETKEYS xread streams a b 0 0", "COMMAND GETKEYS xread count 1 streams a b 0", "COMMAND GETKEYS xread count 1 a b",
		"COMMAND GETKEYS xreadgroup group g c streams a 0", "COMMAND GETKEYS config get x", "COMMAND GETKEYS config nosuch",
		"COMMAND GETKEYS xinfo stream s", "COMMAND GETKEYS object encoding k", "COMMAND GETKEYS lmpop 2 a b left", "COMMAND GETKEYS blmpop 0 2 a b left",
		"COMMAND GETKEYS sort a store b", "COMMAND GETKEYS sort a by store get store limit 0 1 store c",
		"COMMAND GETKEYS georadius k 1 2 3 km store d",
		"COMMAND GETKEYS georadius k 1 2 3 km storedist d", "COMMAND GETKEYS lcs a b", "COMMAND GETKEYS rename a b", "COMMAND GETKEYS del a b c",
		"COMMAND GETKEYS smove a b m", "COMMAND GETKEYS blpop a b 0", "COMMAND GETKEYS zinterstore d 1 a", "COMMAND GETKEYS zdiff 2 a b",
		"COMMAND GETKEYSANDFLAGS set a b", "COMMAND GETKEYSANDFLAGS set a b GET", "COMMAND GETKEYSANDFLAGS set a b nx get",
		"COMMAND GETKEYSANDFLAGS bitfield k get u8 0", "COMMAND GETKEYSANDFLAGS bitfield k get u8 0 set u8 0 1",
		"COMMAND GETKEYSANDFLAGS bitfield k overflow wrap get u8 0", "COMMAND GETKEYSANDFLAGS bitfield_ro k get u8 0",
		"COMMAND GETKEYSANDFLAGS zunionstore d 2 a b", "COMMAND GETKEYSANDFLAGS sort a store b", "COMMAND GETKEYSANDFLAGS lmove a b left right",
		"COMMAND GETKEYSANDFLAGS getdel k", "COMMAND GETKEYSANDFLAGS copy a b", "COMMAND GETKEYSANDFLAGS get", "COMMAND GETKEYSANDFLAGS",
		"COMMAND GETKEYS", "COMMAND LIST FILTERBY", "COMMAND LIST x y z", "COMMAND LIST FILTERBY FOO x", "COMMAND LIST FILTERBY MODULE foo",
		"COMMAND LIST FILTERBY ACLCAT nosuch", "COMMAND LIST a", "COMMAND HELP", "COMMAND FOO",
	))
}

// COMMAND LIST, with and without filters, lists what redis-server lists, less the commands
// iocache does not have (and plus its own): the same names, whatever the order.
func TestCommandListMatchesRedis(t *testing.T) {
	_, addr := startServer(t, nil)
	r, i := dialPeer(t, startRedisPeer(t)), dialPeer(t, addr)
	all := i.do("COMMAND", "LIST")
	ours := map[string]bool{}
	for _, n := range bulkStrings(t, all) {
		ours[n] = true
	}
	redisAll := map[string]bool{}
	for _, n := range bulkStrings(t, r.do("COMMAND", "LIST")) {
		redisAll[n] = true
	}
	for n := range ours {
		base, _, _ := strings.Cut(n, "|")
		if !redisAll[n] && commandInfoEntry(base) != nil {
			t.Errorf("iocache lists %q, redis-server does not", n)
		}
	}
	for _, filter := range [][]string{
		{"ACLCAT", "hyperloglog"}, {"ACLCAT", "string"}, {"ACLCAT", "DANGEROUS"}, {"ACLCAT", "pubsub"}, {"ACLCAT", "scripting"},
		{"PATTERN", "config*"}, {"PATTERN", "*|*"}, {"PATTERN", "x?e*"}, {"PATTERN", "Z*"}, {"MODULE", "x"},
	} {
		cmd := append([]string{"COMMAND", "LIST", "FILTERBY"}, filter...)
		var want []string
		for _, n := range bulkStrings(t, r.do(cmd...)) {
			if ours[n] {
				want = append(want, n)
			}
		}
		var got []string
		for _, n := range bulkStrings(t, i.do(cmd...)) {
			if base, _, _ := strings.Cut(n, "|"); commandInfoEntry(base) != nil {
				got = append(got, n)
			}
		}
		sort.Strings(want)
		sort.Strings(got)
		if strings.Join(want, " ") != strings.Join(got, " ") {
			t.Errorf("%v:\n redis:   %v\n iocache: %v", filter, want, got)
		}
	}
}

// The embedded metadata is what the installed redis-server reports: `make redis-commands`
// regenerates it after an upgrade.
func TestCommandMetadataIsRedis(t *testing.T) {
	r := dialPeer(t, startRedisPeer(t))
	r.do("HELLO", "3")
	m := redisCommandMeta()
	if len(m.info) < 300 || len(m.docs) < 300 {
		t.Fatalf("metadata: %d INFO entries, %d DOCS entries", len(m.info), len(m.docs))
	}
	// Containers list their subcommands in the order of Redis's hash table, which changes from
	// run to run; the entries compare with subcommands in name order.
	canonical := func(n *metaNode) string {
		c := &client{w: &resp.Writer{RESP3: true}}
		if subs := n.elems[9]; len(subs.elems) > 0 {
			sort.Slice(subs.elems, func(i, j int) bool { return subs.elems[i].elems[0].str < subs.elems[j].elems[0].str })
		}
		n.write(c)
		return string(c.w.Buf)
	}
	for name, e := range m.info {
		reply, _ := parseMetaNode([]byte(r.do("COMMAND", "INFO", name)), 0)
		if canonical(reply.elems[0]) != canonical(e) {
			t.Errorf("COMMAND INFO %s: the embedded entry differs from redis-server's; run make redis-commands", name)
		}
	}
}

// bulkStrings reads a flat RESP array of bulk strings.
func bulkStrings(t *testing.T, reply string) []string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(reply, "\r\n"), "\r\n")
	if len(lines) == 0 || lines[0][0] != '*' {
		t.Fatalf("not an array: %.80q", reply)
	}
	var out []string
	for i := 2; i < len(lines); i += 2 {
		out = append(out, lines[i])
	}
	return out
}

// The command table's own numbers agree with Redis's COMMAND INFO for every command Redis has:
// arity, the key positions and the write/readonly flags (which decide replication, OOM refusals,
// read-only replicas and client-side caching). COMMAND INFO, DOCS, GETKEYS, ACL key checks and
// ACL categories are read from that metadata directly; the handlers' table keeps these numbers
// for dispatch, and this test keeps them Redis's. The deviations below are iocache's, each
// with its reason; one that stops being needed fails the test too.
func TestCommandTableAgreesWithRedis(t *testing.T) {
	// The table takes arity, flags and key positions from Redis 7.0's COMMAND INFO (table.go):
	// what a registration adds or changes must still differ from Redis, or it is stale.
	for _, family := range commandFamilies {
		for _, sp := range family {
			redis, ok := redisMetaOf(sp.name)
			switch {
			case sp.meta != nil && ok && *sp.meta == redis:
				t.Errorf("%s: its own metadata is Redis's: drop it from the registration", sp.name)
			case sp.meta == nil && !ok:
				t.Errorf("%s: not Redis 7.0's, and its registration gives no metadata", sp.name)
			case sp.own&redis.flags != 0:
				t.Errorf("%s: own flags %b are Redis's already", sp.name, sp.own&redis.flags)
			}
		}
	}
	table := buildCommandTable()
	// The metadata is Redis's: the flags behind checks a client sees.
	for name, want := range map[string]int{"blpop": cmdNoScript, "wait": cmdNoScript, "quit": cmdNoScript, "hello": cmdAllowBusy, "get": cmdReadonly | cmdFast, "set": cmdWrite | cmdDenyOOM} {
		if table[name].flags&want != want {
			t.Errorf("%s: flags %b lack %b", name, table[name].flags, want)
		}
	}
	if sub := table["config"].subs["set"]; sub == nil || sub.flags&cmdAdmin == 0 || table["client"].subs["id"].flags&cmdAdmin != 0 {
		t.Error("subcommands do not carry Redis's flags (CONFIG SET admin, CLIENT ID not)")
	}
}
