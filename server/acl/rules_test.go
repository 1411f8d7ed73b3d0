package acl

import (
	"strings"
	"testing"
)

// Every rule error, in Redis's words (TestACLSetUserMatchesRedis in server/engine compares them
// with redis-server's replies), and a wrong rule leaves the user as it was.
func TestSetUserErrors(t *testing.T) {
	us := NewUsers(testTable())
	setUser(t, us, "x", "on >p ~a:* +get")
	before := us.Describe(us.Get("x"))
	for _, tc := range []struct{ rules, err string }{
		{"foo", "Error in ACL SETUSER modifier 'foo': Syntax error"},
		{"+nosuch", "Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL"},
		{"+@nosuch", "Error in ACL SETUSER modifier '+@nosuch': Unknown command or category name in ACL"},
		{"+@", "Error in ACL SETUSER modifier '+@': Unknown command or category name in ACL"},
		{"+config|nosuch", "Error in ACL SETUSER modifier '+config|nosuch': Unknown command or category name in ACL"},
		{"+config|get|x", "Error in ACL SETUSER modifier '+config|get|x': Allowing first-arg of a subcommand is not supported"},
		{"-get|foo", "Error in ACL SETUSER modifier '-get|foo': Unknown command or category name in ACL"},
		{"+get|", "Error in ACL SETUSER modifier '+get|': Syntax error"},
		{"<nosuch", "Error in ACL SETUSER modifier '<nosuch': The password you are trying to remove from the user does not exist"},
		{"#abc", "Error in ACL SETUSER modifier '#abc': The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"},
		{"%X~a", "Error in ACL SETUSER modifier '%X~a': Syntax error"},
		{"%~a", "Error in ACL SETUSER modifier '%~a': Syntax error"},
		{"%RR~a", "Error in ACL SETUSER modifier '%RR~a': Syntax error"},
		{"%R", "Error in ACL SETUSER modifier '%R': Syntax error"},
		{"allkeys ~foo", "Error in ACL SETUSER modifier '~foo': Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns"},
		{"allchannels &foo", "Error in ACL SETUSER modifier '&foo': Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels"},
		{"(on)", "Error in ACL SETUSER modifier '(on)': Syntax error"},
		{"(~a", "Unmatched parenthesis in acl selector starting at '(~a'."},
		{"on " + strings.Repeat("y", 200), "Error in ACL SETUSER modifier '" + strings.Repeat("y", 128) + "': Syntax error"},
	} {
		u, created, err := us.SetUser("x", strings.Fields(tc.rules))
		if err == nil || err.Error() != tc.err || u != nil || created {
			t.Errorf("SETUSER x %s: %v, %v, %v; want %q", tc.rules, u, created, err, tc.err)
		}
		if got := us.Describe(us.Get("x")); got != before {
			t.Errorf("SETUSER x %s changed the user: %q, was %q", tc.rules, got, before)
		}
	}
	if _, _, err := us.SetUser("a b", nil); err == nil || err.Error() != "Usernames can't contain spaces or null characters" {
		t.Errorf("a name with a space: %v", err)
	}
	if us.Get("a b") != nil {
		t.Error("a refused user was created")
	}
}

// A user keeps its identity through SETUSER, so connections holding it are bound by the new
// rules; a new one starts off, with no password and no permissions.
func TestSetUserCreatesAndChangesInPlace(t *testing.T) {
	us := NewUsers(testTable())
	u, created, err := us.SetUser("bob", nil)
	if err != nil || !created {
		t.Fatalf("new user: %v %v", created, err)
	}
	if got := us.Describe(u); got != "off resetchannels -@all" {
		t.Errorf("new user: %q", got)
	}
	if !u.Restricted() || u.Enabled() || u.CheckPassword([]byte("")) {
		t.Errorf("a new user is open")
	}
	u2, created, _ := us.SetUser("bob", []string{"on", "nopass", "~*", "&*", "+@all"})
	if u2 != u || created {
		t.Fatalf("SETUSER of an existing user gave another: %p %p %v", u, u2, created)
	}
	if u.Restricted() || !u.CheckPassword([]byte("anything")) {
		t.Errorf("the rules did not reach the user connections hold: %q", us.Describe(u))
	}
	if got := us.Names(); strings.Join(got, " ") != "bob default" {
		t.Errorf("Names: %q", got)
	}
	if us.Delete("default") != nil || us.Delete("nosuch") != nil || us.Delete("bob") != u || us.Get("bob") != nil {
		t.Error("Delete")
	}
}

// Passwords: several at once, removed by clear text or hash, nopass and resetpass, and the
// default user's requirepass.
func TestPasswords(t *testing.T) {
	us := NewUsers(testTable())
	const pHash = "5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8" // "password"
	u := setUser(t, us, "app", "on >old #"+pHash+" >old")
	if d := us.Details(u); len(d.Passwords) != 2 || d.Passwords[1] != pHash {
		t.Errorf("passwords: %q", d.Passwords)
	}
	for pass, ok := range map[string]bool{"old": true, "password": true, "new": false, "": false} {
		if u.CheckPassword([]byte(pass)) != ok {
			t.Errorf("CheckPassword(%q) != %v", pass, ok)
		}
	}
	setUser(t, us, "app", "<old !"+pHash+" >new")
	if u.CheckPassword([]byte("old")) || u.CheckPassword([]byte("password")) || !u.CheckPassword([]byte("new")) {
		t.Error("removed passwords still work")
	}
	setUser(t, us, "app", "off")
	if u.CheckPassword([]byte("new")) {
		t.Error("an off user authenticates")
	}
	setUser(t, us, "app", "on nopass")
	if !u.NoPass() || !u.CheckPassword([]byte("x")) {
		t.Error("nopass")
	}
	setUser(t, us, "app", "resetpass")
	if u.NoPass() || u.CheckPassword([]byte("x")) {
		t.Error("resetpass")
	}

	d := us.Default()
	if !d.NoPass() || d.Restricted() || !d.Enabled() {
		t.Fatalf("the default user: %q", us.Describe(d))
	}
	us.SetRequirePass("s3cret")
	if d.NoPass() || d.CheckPassword([]byte("x")) || !d.CheckPassword([]byte("s3cret")) {
		t.Error("requirepass s3cret")
	}
	us.SetRequirePass("")
	if !d.NoPass() || len(us.Details(d).Passwords) != 0 {
		t.Error("requirepass \"\"")
	}
}

// acl-pubsub-default decides the channels of new users, new selectors and reset, not of
// existing users.
func TestChannelsDefault(t *testing.T) {
	us := NewUsers(testTable())
	old := setUser(t, us, "old", "on")
	us.SetChannelsDefault(true)
	u := setUser(t, us, "u", "on (~a +get)")
	if got := us.Describe(u); got != "on &* -@all (~a &* -@all +get)" {
		t.Errorf("with allchannels: %q", got)
	}
	if got := us.Describe(old); got != "on resetchannels -@all" {
		t.Errorf("an existing user changed: %q", got)
	}
	us.SetChannelsDefault(false)
	setUser(t, us, "u", "reset")
	if got := us.Describe(u); got != "off sanitize-payload resetchannels -@all" {
		t.Errorf("reset with resetchannels: %q", got)
	}
}

// A selector may be written over several arguments; each joined one is one rule.
func TestMergeSelectorArgs(t *testing.T) {
	got, err := mergeSelectorArgs([]string{"on", "(~a", "+get)", "(+set)", "(~b", "&c", "+mget)", "off"})
	if want := []string{"on", "(~a +get)", "(+set)", "(~b &c +mget)", "off"}; err != nil || strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("%q %v, want %q", got, err, want)
	}
}

// Users from rules, as user lines give them: the error names the rule, in Redis's words.
func TestFromRules(t *testing.T) {
	us := NewUsers(testTable())
	u, err := us.FromRules("alice", []string{"on", ">p1", "~cache:*", "+@read"})
	if err != nil || us.Get("alice") != nil {
		t.Fatalf("FromRules: %v (or it installed the user)", err)
	}
	if got := us.Describe(u); !strings.HasPrefix(got, "on #") || !strings.HasSuffix(got, " ~cache:* resetchannels -@all +@read") {
		t.Errorf("alice: %q", got)
	}
	if us.Install(u) != u || us.Get("alice") != u {
		t.Error("Install of a new user")
	}
	again, _ := us.FromRules("alice", []string{"off"})
	if us.Install(again) != u || u.Enabled() {
		t.Error("Install keeps the identity of the user there and gives it the new rules")
	}
	if _, err := us.FromRules("x", []string{"on", ">p", "foo"}); err == nil || err.Error() != "Error in applying operation 'foo': Syntax error" {
		t.Errorf("a wrong rule: %v", err)
	}
}
