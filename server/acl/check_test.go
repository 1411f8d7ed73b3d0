package acl

import "testing"

// Check's verdicts for commands, subcommands, first arguments, read-only and write-only key
// patterns, channels and PSUBSCRIBE patterns, and with selectors the "most relevant" denial
// Redis reports (TestACLPermissionsMatchRedis and TestACLKeyPermissionsMatchRedis in
// server/engine compare them with redis-server's).
func TestCheck(t *testing.T) {
	tb := testTable()
	us := NewUsers(tb)
	alice := setUser(t, us, "alice", "on ~cache:* %R~ro:* %W~wo:* &chan* +@read -@dangerous +config|get +set +publish +psubscribe +select|0")
	sel := setUser(t, us, "sel", "on resetkeys -@all ~k:* +get (~s:* +set) (%R~r:* +mget)")
	for _, tc := range []struct {
		u      *User
		call   *Call
		reason Reason
		object string
	}{
		{alice, call(tb, "GET cache:1", key("cache:1", 1, Read)), Allowed, ""},
		{alice, call(tb, "GET other", key("other", 1, Read)), DeniedKey, "other"},
		{alice, call(tb, "MGET cache:1 other", key("cache:1", 1, Read), key("other", 2, Read)), DeniedKey, "other"},
		{alice, call(tb, "GET ro:1", key("ro:1", 1, Read)), Allowed, ""},
		{alice, call(tb, "SET ro:1 x", key("ro:1", 1, Write)), DeniedKey, "ro:1"},
		{alice, call(tb, "SET wo:1 x", key("wo:1", 1, Write)), Allowed, ""},
		{alice, call(tb, "GET wo:1", key("wo:1", 1, Read)), DeniedKey, "wo:1"},
		{alice, call(tb, "EXISTS wo:1", key("wo:1", 1, 0)), Allowed, ""}, // any pattern names a key
		{alice, call(tb, "HSET cache:1 f v", key("cache:1", 1, Write)), DeniedCommand, "hset"},
		{alice, call(tb, "FLUSHALL"), DeniedCommand, "flushall"},
		{alice, call(tb, "CONFIG GET maxmemory"), Allowed, ""},
		{alice, call(tb, "config Get maxmemory"), Allowed, ""},
		{alice, call(tb, "CONFIG SET maxmemory 1"), DeniedCommand, "config|set"},
		{alice, call(tb, "CONFIG NOSUCH"), DeniedCommand, "config"},
		{alice, call(tb, "CLIENT ID"), DeniedCommand, "client|id"},
		{alice, call(tb, "SELECT 0"), Allowed, ""},
		{alice, call(tb, "SELECT 1"), DeniedCommand, "select"},
		{alice, call(tb, "AUTH x"), Allowed, ""}, // no rule denies what runs before authentication
		{alice, call(tb, "PUBLISH chan1 x"), Allowed, ""},
		{alice, call(tb, "PUBLISH other x"), DeniedChannel, "other"},
		{alice, call(tb, "PSUBSCRIBE chan*"), Allowed, ""},
		{alice, call(tb, "PSUBSCRIBE chan1*"), DeniedChannel, "chan1*"}, // a pattern must be the user's literally
		{sel, call(tb, "GET k:1", key("k:1", 1, Read)), Allowed, ""},
		{sel, call(tb, "SET s:1 v", key("s:1", 1, Write)), Allowed, ""},
		{sel, call(tb, "MGET r:1 r:2", key("r:1", 1, Read), key("r:2", 2, Read)), Allowed, ""},
		// No selector allows it: a key denial is more relevant than a command denial.
		{sel, call(tb, "SET k:1 v", key("k:1", 1, Write)), DeniedKey, "k:1"},
		{sel, call(tb, "GET s:1", key("s:1", 1, Read)), DeniedKey, "s:1"},
		// Of two key denials, the one further in the arguments.
		{sel, call(tb, "MGET r:1 x", key("r:1", 1, Read), key("x", 2, Read)), DeniedKey, "x"},
		{sel, call(tb, "FLUSHALL"), DeniedCommand, "flushall"},
	} {
		if reason, object := tc.u.Check(tc.call); reason != tc.reason || object != tc.object {
			t.Errorf("%s %q: %v %q, want %v %q", tc.u.Name(), tc.call.Args, reason, object, tc.reason, tc.object)
		}
	}
	if !sel.Restricted() || !alice.Restricted() || us.Default().Restricted() {
		t.Error("Restricted")
	}
	if alice.ReadsAllKeys() || !setUser(t, us, "r", "%R~*").ReadsAllKeys() || !setUser(t, us, "s", "(~*)").ReadsAllKeys() {
		t.Error("ReadsAllKeys")
	}
	if !alice.MayUseChannel([]byte("chan1"), false) || alice.MayUseChannel([]byte("other"), false) ||
		!alice.MayUseChannel([]byte("chan*"), true) || alice.MayUseChannel([]byte("chan1*"), true) {
		t.Error("MayUseChannel")
	}
	if Unrestricted("default").Restricted() {
		t.Error("Unrestricted")
	}
}

// The check of an allowed call allocates nothing: the server runs it for every command of a
// restricted user.
func TestCheckAllocatesNothing(t *testing.T) {
	tb := testTable()
	us := NewUsers(tb)
	u := setUser(t, us, "app", "on ~cache:* &chan* +@all -@dangerous (~x:* +get)")
	for _, c := range []*Call{
		call(tb, "GET cache:1", key("cache:1", 1, Read)),
		call(tb, "CONFIG GET maxmemory"),
		call(tb, "PUBLISH chan1 x"),
	} {
		if n := testing.AllocsPerRun(100, func() { u.Check(c) }); n != 0 {
			t.Errorf("%q: %v allocations", c.Args, n)
		}
	}
}

// Called finds a container's subcommand in any case, and leaves other calls to the command.
func TestCalled(t *testing.T) {
	tb := testTable()
	config := tb.Unit("config")
	for argv, want := range map[string]string{
		"CONFIG GET x": "config|get", "config gEt": "config|get", "CONFIG": "config",
		"CONFIG NOSUCH": "config", "CONFIG " + string(make([]byte, 40)): "config",
	} {
		if got := config.Called(args(argv)).Name(); got != want {
			t.Errorf("%q: %s, want %s", argv, got, want)
		}
	}
	if get := tb.Unit("get"); get.Called(args("GET config")) != get {
		t.Error("a command that is not a container")
	}
	a := args("CONFIG GET")
	if n := testing.AllocsPerRun(100, func() { config.Called(a) }); n != 0 {
		t.Errorf("Called allocates: %v", n)
	}
}
