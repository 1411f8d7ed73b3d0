package acl

import (
	"strings"
	"testing"
)

// testTable is a small command table, with Redis's categories for the commands it has: enough
// for every kind of rule (containers, first args, categories, no-auth commands).
func testTable() *Table {
	cat := func(names string) Categories {
		var c Categories
		for _, n := range strings.Fields(names) {
			c |= Category(n)
		}
		return c
	}
	return NewTable([]Command{
		{Name: "get", Categories: cat("read string fast")},
		{Name: "set", Categories: cat("write string slow")},
		{Name: "mget", Categories: cat("read string fast")},
		{Name: "exists", Categories: cat("keyspace read fast")},
		{Name: "hset", Categories: cat("write hash fast")},
		{Name: "select", Categories: cat("fast connection")},
		{Name: "auth", Categories: cat("fast connection"), NoAuth: true},
		{Name: "publish", Categories: cat("pubsub fast")},
		{Name: "psubscribe", Categories: cat("pubsub slow")},
		{Name: "flushall", Categories: cat("keyspace write slow dangerous")},
		{Name: "config", Categories: cat("slow"), Subcommands: []Subcommand{
			{Name: "get", Categories: cat("admin slow dangerous")},
			{Name: "set", Categories: cat("admin slow dangerous")},
		}},
		{Name: "client", Categories: cat("slow"), Subcommands: []Subcommand{
			{Name: "id", Categories: cat("slow connection")},
			{Name: "kill", Categories: cat("admin slow dangerous connection")},
		}},
	})
}

// setUser applies rules (split at spaces) with SetUser and fails the test on an error.
func setUser(t *testing.T, us *Users, name, rules string) *User {
	t.Helper()
	u, _, err := us.SetUser(name, strings.Fields(rules))
	if err != nil {
		t.Fatalf("SETUSER %s %s: %v", name, rules, err)
	}
	return u
}

func args(s string) [][]byte {
	var out [][]byte
	for _, w := range strings.Fields(s) {
		out = append(out, []byte(w))
	}
	return out
}

// call is a Call of argv with the keys given (each with the access it needs), as the server
// builds one.
func call(t *Table, argv string, keys ...Key) *Call {
	a := args(argv)
	top := t.Unit(strings.ToLower(string(a[0])))
	c := &Call{Unit: top.Called(a), Args: a, Keys: keys}
	switch top.Name() {
	case "publish":
		c.Channels = a[1:2]
	case "psubscribe":
		c.Channels, c.ChannelPatterns = a[1:], true
	}
	return c
}

func key(name string, pos int, perm Perm) Key { return Key{Name: []byte(name), Pos: pos, Perm: perm} }
