package engine

// ACL users, as Redis 7.0 has them: each user is on or off, has passwords (SHA-256 hashes, any
// number, so that a password can be rotated without a window) or nopass, and selectors of
// permissions: the commands and subcommands it may run (a bitmap over aclTable's units, changed
// by +cmd, -cmd, +@category, -@category, +cmd|sub), the keys it may name (~pattern, %R~ and %W~
// for read-only and write-only patterns, allkeys) and the Pub/Sub channels (&pattern,
// allchannels). Rules outside parentheses change the root selector, "(...)" adds another. The
// default user starts as Redis's: on, nopass, ~* &* +@all; requirepass is its password.
//
// The hot path pays one branch: call() checks permissions only when the client's user is
// restricted (not allcommands, allkeys and allchannels at once), which the default user is not.

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/glob"
)

// Key pattern permissions (%R~, %W~; ~ is both).
const (
	aclRead  = 1
	aclWrite = 2
	aclAll   = aclRead | aclWrite
)

type keyPattern struct {
	pattern string
	perm    int
}

// aclSelector is one set of permissions: the commands and subcommands (a bitmap over aclTable's
// units), the keys and the channels. A user has its root selector and, from "(...)" rules, more;
// a command is allowed when one selector allows all of it.
type aclSelector struct {
	allowed     []uint64 // one bit per aclTable unit, plus the last bit: "future commands" (+@all)
	allCommands bool     // +@all with nothing removed since: no command check
	firstArgs   map[int][]string
	allKeys     bool
	keys        []keyPattern
	allChannels bool
	channels    []string
}

// aclUser is one user. Clients hold a pointer to it; ACL SETUSER changes it in place, so a change
// applies to the connections already authenticated as the user, as in Redis.
type aclUser struct {
	name      string
	enabled   bool
	nopass    bool
	sanitize  int      // 0: neither flag, 1: sanitize-payload, 2: skip-sanitize-payload
	passwords [][]byte // SHA-256 of each password, in the order added
	aclSelector
	selectors []*aclSelector
	// restricted is the one thing the hot path reads: the root selector lacks allcommands,
	// allkeys or allchannels, so the user's commands go through aclCheck.
	restricted bool
}

// aclState is the server's user table and security log.
type aclState struct {
	table       *aclTable
	users       map[string]*aclUser
	defaultUser *aclUser
	log         aclLog
	// requirepass is the value last applied to the default user (nil before the first).
	requirepass *string
	// allChannelsDefault is acl-pubsub-default allchannels: new users and selectors, and reset,
	// start with &*.
	allChannelsDefault bool
	// Denials counted for INFO stats (Redis 7.2's acl_access_denied_* fields).
	deniedAuth, deniedCmd, deniedKey, deniedChannel int64
}

func newACLState(builtin map[string]*command) aclState {
	st := aclState{table: buildACLTable(builtin), users: map[string]*aclUser{}}
	d := st.newDefaultUser()
	st.users["default"] = d
	st.defaultUser = d
	return st
}

// newDefaultUser is the default user as Redis creates it: on, nopass, ~* &* +@all.
func (st *aclState) newDefaultUser() *aclUser {
	d := st.newUser("default")
	for _, op := range []string{"+@all", "~*", "&*", "on", "nopass"} {
		_ = st.applyRule(d, op)
	}
	return d
}

// newUser is a user as ACL SETUSER creates it: off, no password, no permissions, and no channels
// (Redis 7.0's acl-pubsub-default resetchannels).
func (st *aclState) newUser(name string) *aclUser {
	u := &aclUser{name: name, aclSelector: st.newSelector()}
	u.refresh()
	return u
}

// newSelector is a selector that allows nothing, but the channels acl-pubsub-default gives.
func (st *aclState) newSelector() aclSelector {
	return aclSelector{allowed: make([]uint64, (len(st.table.units)+1+63)/64), allChannels: st.allChannelsDefault}
}

// futureBit is the bitmap position +@all sets and no command has: whether the rules began with
// +@all (all commands, also those added later) or -@all.
func (st *aclState) futureBit() int { return len(st.table.units) }

func (sel *aclSelector) clone() aclSelector {
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
func (u *aclUser) clone() *aclUser {
	v := *u
	v.passwords = append([][]byte(nil), u.passwords...)
	v.aclSelector = u.aclSelector.clone()
	v.selectors = make([]*aclSelector, len(u.selectors))
	for i, sel := range u.selectors {
		c := sel.clone()
		v.selectors[i] = &c
	}
	return &v
}

// assign copies src's rules into u, keeping u's name and identity.
func (u *aclUser) assign(src *aclUser) {
	name := u.name
	*u = *src.clone()
	u.name = name
	u.refresh()
}

func (u *aclUser) refresh() {
	u.restricted = !u.allCommands || !u.allKeys || !u.allChannels
}

func (sel *aclSelector) bit(id int) bool { return sel.allowed[id/64]&(1<<(id%64)) != 0 }

func (sel *aclSelector) setBit(id int, on bool) {
	if on {
		sel.allowed[id/64] |= 1 << (id % 64)
	} else {
		sel.allowed[id/64] &^= 1 << (id % 64)
		sel.allCommands = false
	}
}

// changePerm allows or denies a unit; a container's change applies to its subcommands too.
func (st *aclState) changePerm(sel *aclSelector, unit *aclUnit, allow bool) {
	sel.setBit(unit.id, allow)
	delete(sel.firstArgs, unit.id)
	if st.table.top[unit.cmd] == unit {
		for _, sub := range st.table.subs[unit.cmd] {
			sel.setBit(sub.id, allow)
		}
	}
}

// changeCategory allows or denies every unit of a category, walking commands as Redis does: a
// container in the category changes with all its subcommands, then each subcommand by its own.
func (st *aclState) changeCategory(sel *aclSelector, bit uint32, allow bool) {
	for _, unit := range st.table.units {
		if unit.cats&bit != 0 {
			st.changePerm(sel, unit, allow)
		}
	}
}

// Errors of ACL SETUSER rules, with Redis's texts.
var (
	errACLUnknown     = errors.New("Unknown command or category name in ACL")
	errACLSyntax      = errors.New("Syntax error")
	errACLAllKeys     = errors.New("Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns")
	errACLAllChannels = errors.New("Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels")
	errACLNoPassword  = errors.New("The password you are trying to remove from the user does not exist")
	errACLBadHash     = errors.New("The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters")
	errACLSubFirstArg = errors.New("Allowing first-arg of a subcommand is not supported")
)

func hashPassword(p string) []byte {
	h := sha256.Sum256([]byte(p))
	return h[:]
}

// parseHash reads a #hash or !hash rule's 64 lower-case hex digits.
func parseHash(s string) ([]byte, error) {
	if len(s) != 64 {
		return nil, errACLBadHash
	}
	for i := 0; i < len(s); i++ {
		if ch := s[i]; (ch < 'a' || ch > 'f') && (ch < '0' || ch > '9') {
			return nil, errACLBadHash
		}
	}
	b, _ := hex.DecodeString(s)
	return b, nil
}

func indexHash(list [][]byte, h []byte) int {
	for i, p := range list {
		if subtle.ConstantTimeCompare(p, h) == 1 {
			return i
		}
	}
	return -1
}

func hasSpace(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\r', '\v', '\f', 0:
			return true
		}
	}
	return false
}

// applyRule applies one ACL SETUSER rule to u, as Redis's ACLSetUser does; rules about
// commands, keys and channels go to the root selector (applySelectorRule).
func (st *aclState) applyRule(u *aclUser, op string) error {
	defer u.refresh()
	if op == "" {
		return nil
	}
	switch strings.ToLower(op) {
	case "on":
		u.enabled = true
		return nil
	case "off":
		u.enabled = false
		return nil
	case "skip-sanitize-payload":
		u.sanitize = 2
		return nil
	case "sanitize-payload":
		u.sanitize = 1
		return nil
	case "nopass":
		u.nopass, u.passwords = true, nil
		return nil
	case "resetpass":
		u.nopass, u.passwords = false, nil
		return nil
	case "reset":
		for _, r := range []string{"resetpass", "resetkeys", "resetchannels", "off", "sanitize-payload", "clearselectors", "-@all"} {
			_ = st.applyRule(u, r)
		}
		u.allChannels = st.allChannelsDefault
		return nil
	case "clearselectors":
		u.selectors = nil
		return nil
	}
	switch op[0] {
	case '>', '#':
		var h []byte
		if op[0] == '>' {
			h = hashPassword(op[1:])
		} else {
			var err error
			if h, err = parseHash(op[1:]); err != nil {
				return err
			}
		}
		if indexHash(u.passwords, h) < 0 {
			u.passwords = append(u.passwords, h)
		}
		u.nopass = false
		return nil
	case '<', '!':
		var h []byte
		if op[0] == '<' {
			h = hashPassword(op[1:])
		} else {
			var err error
			if h, err = parseHash(op[1:]); err != nil {
				return err
			}
		}
		i := indexHash(u.passwords, h)
		if i < 0 {
			return errACLNoPassword
		}
		u.passwords = append(u.passwords[:i:i], u.passwords[i+1:]...)
		return nil
	case '(':
		if op[len(op)-1] == ')' {
			sel, err := st.selectorFromRules(op[1 : len(op)-1])
			if err != nil {
				return err
			}
			u.selectors = append(u.selectors, sel)
			return nil
		}
	}
	return st.applySelectorRule(&u.aclSelector, op)
}

// mergeSelectorArgs joins the arguments of a selector written over several of them ("(~a:*"
// "+get)") into one rule, as Redis's ACLMergeSelectorArguments does; an unclosed one is an error.
func mergeSelectorArgs(args []string) ([]string, error) {
	out := make([]string, 0, len(args))
	open := -1
	var sel string
	for i, op := range args {
		if open < 0 && strings.HasPrefix(op, "(") && !strings.HasSuffix(op, ")") {
			open, sel = i, op
			continue
		}
		if open >= 0 {
			sel += " " + op
			if strings.HasSuffix(op, ")") {
				out, open = append(out, sel), -1
			}
			continue
		}
		out = append(out, op)
	}
	if open >= 0 {
		return nil, fmt.Errorf("Unmatched parenthesis in acl selector starting at '%s'.", truncate(args[open], 128))
	}
	return out, nil
}

// selectorFromRules builds a selector from the rules inside "(...)", starting from nothing.
func (st *aclState) selectorFromRules(rules string) (*aclSelector, error) {
	ops, err := config.SplitArgs(rules)
	if err != nil {
		return nil, errACLSyntax
	}
	sel := st.newSelector()
	for _, op := range ops {
		if err := st.applySelectorRule(&sel, op); err != nil {
			return nil, err
		}
	}
	return &sel, nil
}

// applySelectorRule applies a rule about commands, keys or channels, as Redis's ACLSetSelector.
func (st *aclState) applySelectorRule(sel *aclSelector, op string) error {
	switch lower := strings.ToLower(op); lower {
	case "allkeys", "~*":
		sel.allKeys, sel.keys = true, nil
		return nil
	case "resetkeys":
		sel.allKeys, sel.keys = false, nil
		return nil
	case "allchannels", "&*":
		sel.allChannels, sel.channels = true, nil
		return nil
	case "resetchannels":
		sel.allChannels, sel.channels = false, nil
		return nil
	case "allcommands", "+@all":
		for i := range sel.allowed {
			sel.allowed[i] = ^uint64(0)
		}
		sel.allCommands, sel.firstArgs = true, nil
		return nil
	case "nocommands", "-@all":
		for i := range sel.allowed {
			sel.allowed[i] = 0
		}
		sel.allCommands, sel.firstArgs = false, nil
		return nil
	}
	if op == "" {
		return errACLSyntax
	}
	switch op[0] {
	case '~', '%':
		return st.addKeyPattern(sel, op)
	case '&':
		if sel.allChannels {
			return errACLAllChannels
		}
		if hasSpace(op[1:]) {
			return errACLSyntax
		}
		for _, ch := range sel.channels {
			if ch == op[1:] {
				return nil
			}
		}
		sel.channels = append(sel.channels, op[1:])
		return nil
	case '+', '-':
		allow := op[0] == '+'
		if len(op) > 1 && op[1] == '@' {
			bit := categoryBit(op[2:])
			if bit == 0 || op[2:] == "" {
				return errACLUnknown
			}
			st.changeCategory(sel, bit, allow)
			return nil
		}
		return st.commandRule(sel, strings.ToLower(op[1:]), allow)
	}
	return errACLSyntax
}

// commandRule applies +name, -name, +name|sub, -name|sub and the first-arg form +name|arg.
func (st *aclState) commandRule(sel *aclSelector, name string, allow bool) error {
	if unit := st.table.byName[name]; unit != nil {
		st.changePerm(sel, unit, allow)
		return nil
	}
	parent, arg, found := cutLast(name, '|')
	if !found || !allow {
		return errACLUnknown
	}
	p := st.table.byName[parent]
	if p == nil {
		return errACLUnknown
	}
	if strings.Contains(parent, "|") {
		return errACLSubFirstArg
	}
	if arg == "" {
		return errACLSyntax
	}
	if st.table.subs[p.cmd] != nil {
		return errACLUnknown // a container's unknown subcommand
	}
	// A first argument of an otherwise denied command ("+select|0"), which Redis 7.0 deprecates.
	if sel.firstArgs == nil {
		sel.firstArgs = map[int][]string{}
	}
	for _, a := range sel.firstArgs[p.id] {
		if a == arg {
			return nil
		}
	}
	sel.firstArgs[p.id] = append(sel.firstArgs[p.id], arg)
	return nil
}

func cutLast(s string, sep byte) (string, string, bool) {
	i := strings.LastIndexByte(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+1:], true
}

// addKeyPattern applies ~pattern, %R~pattern, %W~pattern and %RW~pattern.
func (st *aclState) addKeyPattern(sel *aclSelector, op string) error {
	if sel.allKeys {
		return errACLAllKeys
	}
	perm, i := aclAll, 1
	if op[0] == '%' {
		tilde := strings.IndexByte(op, '~')
		if tilde < 0 {
			return errACLSyntax
		}
		perm = 0
		for _, ch := range op[1:tilde] {
			switch {
			case (ch == 'R' || ch == 'r') && perm&aclRead == 0:
				perm |= aclRead
			case (ch == 'W' || ch == 'w') && perm&aclWrite == 0:
				perm |= aclWrite
			default:
				return errACLSyntax
			}
		}
		if perm == 0 {
			return errACLSyntax
		}
		i = tilde + 1
	}
	pattern := op[i:]
	if hasSpace(pattern) {
		return errACLSyntax
	}
	for j := range sel.keys {
		if sel.keys[j].pattern == pattern {
			sel.keys[j].perm |= perm
			return nil
		}
	}
	sel.keys = append(sel.keys, keyPattern{pattern: pattern, perm: perm})
	return nil
}

// checkPassword reports whether pass authenticates as u, in time independent of the password.
func (u *aclUser) checkPassword(pass []byte) bool {
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

// What a permission check denied, as ACL LOG's reason names it.
const (
	aclDeniedNone = iota
	aclDeniedCmd
	aclDeniedKey
	aclDeniedChannel
	aclDeniedAuth
)

// aclCheck reports whether u may run argv (cmd found by its name), and when it may not, why, and
// what it was refused (the command's full name, the key or the channel). With several selectors,
// one that allows all of it is enough; otherwise the denial reported is Redis's "most relevant":
// a channel over a key over a command, then the one furthest in the arguments.
func (st *aclState) aclCheck(u *aclUser, cmd *command, argv [][]byte) (int, string) {
	unit := st.table.unitFor(cmd, argv)
	reason, object, pos := st.selectorCheck(&u.aclSelector, unit, cmd, argv)
	for _, sel := range u.selectors {
		if reason == aclDeniedNone {
			break
		}
		r, o, p := st.selectorCheck(sel, unit, cmd, argv)
		if r == aclDeniedNone || r > reason || r == reason && p > pos {
			reason, object, pos = r, o, p
		}
	}
	return reason, object
}

// selectorCheck is one selector's verdict; pos is the argument it refused (0 for the command).
func (st *aclState) selectorCheck(sel *aclSelector, unit *aclUnit, cmd *command, argv [][]byte) (int, string, int) {
	if !sel.allCommands && cmd.flags&cmdNoAuth == 0 && !sel.bit(unit.id) && !sel.firstArgAllowed(unit, argv) {
		return aclDeniedCmd, unit.fullname, 0
	}
	if !sel.allKeys {
		if key, pos, denied := sel.deniedKey(unit, cmd, argv); denied {
			return aclDeniedKey, key, pos
		}
	}
	if !sel.allChannels {
		for i, ch := range commandChannels(cmd, argv) {
			if !sel.channelAllowed(ch, cmd.name == "psubscribe") {
				return aclDeniedChannel, string(ch), i + 1
			}
		}
	}
	return aclDeniedNone, "", 0
}

// readsAllKeys reports whether one of the user's selectors may read any key: what SORT's BY and
// GET patterns, which read keys no argument names, require.
func (u *aclUser) readsAllKeys() bool {
	if u.aclSelector.readsAllKeys() {
		return true
	}
	for _, sel := range u.selectors {
		if sel.readsAllKeys() {
			return true
		}
	}
	return false
}

// mayUseChannel reports whether one of the user's selectors allows a channel (a pattern, literal).
func (u *aclUser) mayUseChannel(ch []byte, literal bool) bool {
	if u.allChannels || u.channelAllowed(ch, literal) {
		return true
	}
	for _, sel := range u.selectors {
		if sel.allChannels || sel.channelAllowed(ch, literal) {
			return true
		}
	}
	return false
}

func (sel *aclSelector) firstArgAllowed(unit *aclUnit, argv [][]byte) bool {
	args := sel.firstArgs[unit.id]
	if len(args) == 0 || len(argv) < 2 {
		return false
	}
	for _, a := range args {
		if equalFold(argv[1], a) {
			return true
		}
	}
	return false
}

func (sel *aclSelector) keyAllowed(key []byte, perm int) bool {
	for _, p := range sel.keys {
		if p.perm&perm == perm && glob.Match([]byte(p.pattern), key, false) {
			return true
		}
	}
	return false
}

// readsAllKeys reports whether the selector may read any key.
func (sel *aclSelector) readsAllKeys() bool {
	if sel.allKeys {
		return true
	}
	for _, p := range sel.keys {
		if p.pattern == "*" && p.perm&aclRead != 0 {
			return true
		}
	}
	return false
}

// channelAllowed matches a channel against the user's patterns; a PSUBSCRIBE pattern must be one
// of them literally, as in Redis.
func (sel *aclSelector) channelAllowed(ch []byte, literal bool) bool {
	for _, p := range sel.channels {
		if literal && p == string(ch) || !literal && glob.Match([]byte(p), ch, false) {
			return true
		}
	}
	return false
}

// commandChannels are the channels a command publishes or subscribes to (unsubscribing needs no
// permission, as in Redis).
func commandChannels(cmd *command, argv [][]byte) [][]byte {
	switch cmd.name {
	case "publish", "spublish":
		return argv[1:2]
	case "subscribe", "psubscribe", "ssubscribe":
		return argv[1:]
	}
	return nil
}

// aclCommandKeys are the keys a command names: its first/last/step positions, and for commands
// whose keys move (numkeys arguments, STREAMS, STORE options) the keys their syntax places.
func aclCommandKeys(cmd *command, argv [][]byte) [][]byte {
	numkeysAt := func(i int) [][]byte {
		if len(argv) <= i {
			return nil
		}
		n, ok := parseInt(argv[i])
		if !ok || n < 0 {
			return nil
		}
		end := min(int64(len(argv)), int64(i+1)+n)
		return argv[i+1 : end]
	}
	switch cmd.name {
	case "eval", "evalsha", "eval_ro", "evalsha_ro", "blmpop", "bzmpop":
		return numkeysAt(2)
	case "lmpop", "zmpop", "sintercard", "zinter", "zunion", "zdiff", "zintercard":
		return numkeysAt(1)
	case "zunionstore", "zinterstore", "zdiffstore":
		return append(argv[1:2:2], numkeysAt(2)...)
	case "xread", "xreadgroup":
		for i := 1; i < len(argv); i++ {
			if equalFold(argv[i], "streams") {
				rest := argv[i+1:]
				return rest[:len(rest)/2]
			}
		}
		return nil
	case "sort", "sort_ro", "georadius", "georadiusbymember":
		keys := argv[1:2:2]
		for i := 2; i+1 < len(argv); i++ {
			if equalFold(argv[i], "store") || equalFold(argv[i], "storedist") {
				keys = append(keys, argv[i+1])
			}
		}
		return keys
	}
	return commandKeys(cmd, argv)
}
