package acl

import (
	"strings"
	"testing"
)

// An aclfile with an error changes nothing and says every error, in Redis's words
// (TestACLFileMatchesRedis in server/engine compares them with redis-server's); a right one
// replaces the users, keeping the identity of those that stay.
func TestParseFileAndReplace(t *testing.T) {
	us := NewUsers(testTable())
	alice := setUser(t, us, "alice", "on >p")
	bob := setUser(t, us, "bob", "on >p")
	d := us.Default()

	_, err := us.ParseFile("users.acl", []byte("user alice on >p ~* +@all +nosuch\nfoo bar\nuser alice off\n\n# comment\nuser a\"b on\n"))
	want := "users.acl:1: Error in applying operation '+nosuch': Unknown command or category name in ACL. " +
		"users.acl:2 should start with user keyword followed by the username. " +
		"WARNING: Duplicate user 'alice' found on line 3. " +
		"users.acl:5 should start with user keyword followed by the username. " +
		"users.acl:6 should start with user keyword followed by the username. " +
		"WARNING: ACL errors detected, no change to the previously active ACL rules was performed"
	if err == nil || err.Error() != want {
		t.Errorf("errors:\n%v\nwant\n%s", err, want)
	}

	users, err := us.ParseFile("users.acl", []byte("user alice off\r\nuser carol on nopass (~a +get)\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(users) != 3 || users[2].Name() != "default" {
		t.Fatalf("users: %d (a file without the default user gets Redis's)", len(users))
	}
	removed := us.Replace(users)
	if len(removed) != 1 || removed[0] != bob {
		t.Errorf("removed %v, want bob", removed)
	}
	if strings.Join(us.Names(), " ") != "alice carol default" || us.Get("alice") != alice || alice.Enabled() || us.Default() != d {
		t.Errorf("after Replace: %q", us.Names())
	}
	if got := us.Describe(us.Get("carol")); got != "on nopass resetchannels -@all (~a resetchannels -@all +get)" {
		t.Errorf("carol: %q", got)
	}
}
