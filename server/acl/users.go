package acl

import (
	"fmt"
	"sort"
)

// Users is the server's user table: every user by name, the default user among them, and what
// rules need besides a user (the command Table, acl-pubsub-default).
type Users struct {
	table       *Table
	byName      map[string]*User
	defaultUser *User
	// allChannels is acl-pubsub-default allchannels: new users and selectors, and reset, start
	// with &*.
	allChannels bool
}

// NewUsers is a table holding the default user as Redis creates it: on, nopass, ~* &* +@all.
func NewUsers(t *Table) *Users {
	us := &Users{table: t, byName: map[string]*User{}}
	d := us.newDefaultUser()
	us.byName[d.name] = d
	us.defaultUser = d
	return us
}

// Get is the user of that name, or nil.
func (us *Users) Get(name string) *User { return us.byName[name] }

// Default is the default user: the one new connections start as. It keeps its identity for as
// long as the table lives.
func (us *Users) Default() *User { return us.defaultUser }

// Names lists the users' names, sorted, as ACL USERS and ACL LIST order them.
func (us *Users) Names() []string {
	names := make([]string, 0, len(us.byName))
	for n := range us.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Delete removes a user and returns it, so that the caller can deal with its connections; it
// returns nil for a user that does not exist, and for the default user, which stays.
func (us *Users) Delete(name string) *User {
	u := us.byName[name]
	if u == nil || u == us.defaultUser {
		return nil
	}
	delete(us.byName, name)
	return u
}

// SetChannelsDefault is acl-pubsub-default: whether new users and selectors, and reset, allow
// every channel (allchannels) or none (resetchannels). Existing users keep theirs.
func (us *Users) SetChannelsDefault(all bool) { us.allChannels = all }

// SetRequirePass makes pass the default user's only password, as requirepass is in Redis:
// resetpass, then the password, or nopass when it is empty.
func (us *Users) SetRequirePass(pass string) {
	d := us.defaultUser
	_ = us.applyRule(d, "resetpass")
	if pass == "" {
		_ = us.applyRule(d, "nopass")
	} else {
		_ = us.applyRule(d, ">"+pass)
	}
}

// SetUser applies ACL SETUSER's rules to the user of that name, or to a new one (off, with no
// permissions) when there is none. The rules apply to a copy that replaces the user only when
// every rule is valid, as in Redis, so a wrong rule changes nothing. created says whether the
// user is new; an existing one keeps its identity, so its connections are bound by the new
// rules. The error is Redis's text, without "ERR ".
func (us *Users) SetUser(name string, rules []string) (u *User, created bool, err error) {
	if err := CheckName(name); err != nil {
		return nil, false, err
	}
	u = us.byName[name]
	var tmp *User
	if u != nil {
		tmp = u.clone()
	} else {
		tmp = us.newUser(name)
	}
	rules, err = mergeSelectorArgs(rules)
	if err != nil {
		return nil, false, err
	}
	for _, r := range rules {
		if err := us.applyRule(tmp, r); err != nil {
			return nil, false, fmt.Errorf("Error in ACL SETUSER modifier '%s': %s", truncate(r, 128), err.Error())
		}
	}
	if u == nil {
		us.byName[name] = tmp
		return tmp, true, nil
	}
	u.assign(tmp)
	return u, false, nil
}

// FromRules builds a user, not yet in the table, from the rules of a user line (in a config
// file or an aclfile): a new user's, with a selector over several arguments joined as ACL
// SETUSER joins it. The error is Redis's text for a user line.
func (us *Users) FromRules(name string, rules []string) (*User, error) {
	rules, err := mergeSelectorArgs(rules)
	if err != nil {
		return nil, err
	}
	u := us.newUser(name)
	for _, r := range rules {
		if err := us.applyRule(u, r); err != nil {
			return nil, fmt.Errorf("Error in applying operation '%s': %s", truncate(r, 128), err.Error())
		}
	}
	return u, nil
}

// Install puts a user built by FromRules in the table and returns the table's user of that
// name: the one already there keeps its identity and takes u's rules, so that its connections
// stay and are bound by the new rules.
func (us *Users) Install(u *User) *User {
	if old := us.byName[u.name]; old != nil {
		old.assign(u)
		return old
	}
	us.byName[u.name] = u
	return u
}

// Replace makes users (built by FromRules, one of them named default) the whole table, as ACL
// LOAD does, installing each, and returns the users it removed, whose connections the caller
// closes.
func (us *Users) Replace(users []*User) (removed []*User) {
	keep := make(map[string]bool, len(users))
	for _, u := range users {
		keep[u.name] = true
	}
	for name, old := range us.byName {
		if !keep[name] && old != us.defaultUser {
			removed = append(removed, old)
			delete(us.byName, name)
		}
	}
	for _, u := range users {
		us.Install(u)
	}
	return removed
}
