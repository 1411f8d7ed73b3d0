package acl

import (
	"crypto/sha256"
	"crypto/subtle"
)

// Perm is the access a key pattern grants (%R~ read, %W~ write, ~ both), and the access a call
// needs of a key: read when the command returns or copies the key's data, write when it
// inserts, deletes or updates, and none (0) when it only names the key (EXISTS, TYPE), which
// any pattern that matches allows.
type Perm uint8

// The permissions of key patterns and keys.
const (
	Read Perm = 1 << iota
	Write
	ReadWrite = Read | Write
)

type keyPattern struct {
	pattern string
	perm    Perm
}

// selector is one set of permissions: the commands and subcommands (a bitmap over the Table's
// units), the keys and the channels. A user has its root selector and, from "(...)" rules,
// more; a call is allowed when one selector allows all of it.
type selector struct {
	allowed     []uint64 // one bit per unit, plus the last bit: "future commands" (+@all)
	allCommands bool     // +@all with nothing removed since: no command check
	firstArgs   map[int][]string
	allKeys     bool
	keys        []keyPattern
	allChannels bool
	channels    []string
}

// User is one user. Clients hold a pointer to it; ACL SETUSER and ACL LOAD change it in place
// (Users.SetUser, Users.Install), so a change applies to the connections already authenticated
// as the user, as in Redis.
type User struct {
	name      string
	enabled   bool
	nopass    bool
	sanitize  int      // 0: neither flag, 1: sanitize-payload, 2: skip-sanitize-payload
	passwords [][]byte // SHA-256 of each password, in the order added
	selector           // the root selector, which rules outside parentheses change
	selectors []*selector
	// restricted is the one thing the hot path reads: the root selector lacks allcommands,
	// allkeys or allchannels, so the user's calls need Check.
	restricted bool
}

// Unrestricted is a user no rule restricts and no Users holds, so that no ACL command can reach
// it: the server runs its primary's replication stream as it, obeyed whatever the rules, as
// Redis runs its master client with no user.
func Unrestricted(name string) *User { return &User{name: name} }

// Name is the user's name.
func (u *User) Name() string { return u.name }

// Enabled is whether the user is on: only then may a client authenticate as it.
func (u *User) Enabled() bool { return u.enabled }

// NoPass is whether any password authenticates as the user (nopass).
func (u *User) NoPass() bool { return u.nopass }

// Restricted reports whether the user's calls need Check: its root selector lacks allcommands,
// allkeys or allchannels. The default user as Redis creates it is not, so its calls pay this one
// branch and nothing else.
func (u *User) Restricted() bool { return u.restricted }

// CheckPassword reports whether pass authenticates as u, in time independent of the password.
func (u *User) CheckPassword(pass []byte) bool {
	if !u.enabled {
		return false
	}
	if u.nopass {
		return true
	}
	h := sha256.Sum256(pass)
	ok := 0
	for _, p := range u.passwords {
		ok |= subtle.ConstantTimeCompare(p, h[:])
	}
	return ok == 1
}

func (sel *selector) clone() selector {
	v := *sel
	v.allowed = append([]uint64(nil), sel.allowed...)
	v.keys = append([]keyPattern(nil), sel.keys...)
	v.channels = append([]string(nil), sel.channels...)
	if sel.firstArgs != nil {
		v.firstArgs = make(map[int][]string, len(sel.firstArgs))
		for k, s := range sel.firstArgs {
			v.firstArgs[k] = append([]string(nil), s...)
		}
	}
	return v
}

// clone copies a user, so that ACL SETUSER can apply its rules to the copy and keep the original
// when one of them is wrong.
func (u *User) clone() *User {
	v := *u
	v.passwords = append([][]byte(nil), u.passwords...)
	v.selector = u.selector.clone()
	v.selectors = make([]*selector, len(u.selectors))
	for i, sel := range u.selectors {
		c := sel.clone()
		v.selectors[i] = &c
	}
	return &v
}

// assign copies src's rules into u, keeping u's name and identity.
func (u *User) assign(src *User) {
	name := u.name
	*u = *src.clone()
	u.name = name
	u.refresh()
}

func (u *User) refresh() {
	u.restricted = !u.allCommands || !u.allKeys || !u.allChannels
}

func (sel *selector) bit(id int) bool { return sel.allowed[id/64]&(1<<(id%64)) != 0 }

func (sel *selector) setBit(id int, on bool) {
	if on {
		sel.allowed[id/64] |= 1 << (id % 64)
	} else {
		sel.allowed[id/64] &^= 1 << (id % 64)
		sel.allCommands = false
	}
}
