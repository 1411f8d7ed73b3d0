package acl

import (
	"strings"
	"testing"
)

// Descriptions rebuild command rules as Redis does (the fewest categories, then single
// commands), and a description read back as rules gives the same user: what ACL SAVE writes,
// ACL LOAD reads.
func TestDescribeRoundTrips(t *testing.T) {
	us := NewUsers(testTable())
	for _, tc := range []struct{ rules, want string }{
		{"", "off resetchannels -@all"},
		{"on nopass ~* &* +@all", "on nopass ~* &* +@all"},
		{"on ~a %R~b %W~c %RW~d &ch +@read", "on ~a %R~b %W~c ~d resetchannels &ch -@all +@read"},
		{"+@all -@dangerous", "off resetchannels +@all -@dangerous"},
		// -@admin takes config|get and config|set, +client|kill puts back the one other admin.
		{"+@all -config", "off resetchannels +@all -@admin +client|kill -config"},
		{"-@all +@string -mget +select|0 +config|get", "off resetchannels -@all +@string +config|get -mget +select|0"},
		{"+client|id +client|kill", "off resetchannels -@all +client|id +client|kill"},
		{"reset", "off sanitize-payload resetchannels -@all"},
		{"skip-sanitize-payload", "off skip-sanitize-payload resetchannels -@all"},
		{"on nopass (~a +get) (%R~b &c +@read)", "on nopass resetchannels -@all (~a resetchannels -@all +get) (%R~b resetchannels &c -@all +@read)"},
	} {
		u, err := us.FromRules("u", splitSelectors(tc.rules))
		if err != nil {
			t.Fatalf("%q: %v", tc.rules, err)
		}
		got := us.Describe(u)
		if got != tc.want {
			t.Errorf("%q: %q, want %q", tc.rules, got, tc.want)
		}
		back, err := us.FromRules("back", splitSelectors(got))
		if err != nil {
			t.Fatalf("%q read back: %v", got, err)
		}
		if again := us.Describe(back); again != got {
			t.Errorf("%q read back is %q", got, again)
		}
	}
}

// splitSelectors splits a description into rules, a selector's parentheses kept together.
func splitSelectors(s string) []string {
	rules, err := mergeSelectorArgs(strings.Fields(s))
	if err != nil {
		panic(err)
	}
	return rules
}

// Details are a user field by field, as ACL GETUSER shows them.
func TestDetails(t *testing.T) {
	us := NewUsers(testTable())
	u := setUser(t, us, "u", "on >password %R~k* &ch +@hash (~s:* +set)")
	d := us.Details(u)
	want := Details{
		Flags:     []string{"on"},
		Passwords: []string{"5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8"},
		Root:      SelectorDetails{Commands: "-@all +@hash", Keys: "%R~k*", Channels: "&ch"},
		Selectors: []SelectorDetails{{Commands: "-@all +set", Keys: "~s:*", Channels: ""}},
	}
	if strings.Join(d.Flags, " ") != strings.Join(want.Flags, " ") || strings.Join(d.Passwords, " ") != strings.Join(want.Passwords, " ") ||
		d.Root != want.Root || len(d.Selectors) != 1 || d.Selectors[0] != want.Selectors[0] {
		t.Errorf("%+v, want %+v", d, want)
	}
}

// Categories by name, in any case, and ACL CAT's lists.
func TestCategories(t *testing.T) {
	if Category("READ") != Category("read") || Category("read") == 0 || Category("nosuch") != 0 || Category("") != 0 {
		t.Error("Category")
	}
	names := AllCategories.Names()
	if len(names) != 21 || names[0] != "keyspace" || names[20] != "scripting" {
		t.Errorf("AllCategories: %q", names)
	}
	if got := (Category("write") | Category("hash")).Names(); strings.Join(got, " ") != "write hash" {
		t.Errorf("Names: %q", got)
	}
	tb := testTable()
	if got := strings.Join(tb.Members(Category("dangerous")), " "); got != "client|kill config|get config|set flushall" {
		t.Errorf("ACL CAT dangerous: %q", got)
	}
}
