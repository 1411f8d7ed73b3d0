package acl

// The rules of ACL SETUSER, user lines and aclfiles, as Redis 7.0's ACLSetUser and
// ACLSetSelector apply them, with Redis's error texts. A user is on or off, has passwords
// (SHA-256 hashes, any number, so that a password can be rotated without a window) or nopass,
// and selectors: +cmd, -cmd, +@category, -@category, +cmd|sub change the commands, ~pattern,
// %R~, %W~ and allkeys the keys, &pattern and allchannels the channels. Rules outside
// parentheses change the root selector, "(...)" adds another.

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/iocache/iocache/server/config"
)

// Errors of rules, with Redis's texts.
var (
	errUnknown     = errors.New("Unknown command or category name in ACL")
	errSyntax      = errors.New("Syntax error")
	errAllKeys     = errors.New("Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns")
	errAllChannels = errors.New("Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels")
	errNoPassword  = errors.New("The password you are trying to remove from the user does not exist")
	errBadHash     = errors.New("The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters")
	errSubFirstArg = errors.New("Allowing first-arg of a subcommand is not supported")
	errNameSpaces  = errors.New("Usernames can't contain spaces or null characters")
)

// CheckName refuses a user name Redis refuses: one with spaces or null characters, which a user
// line could not hold.
func CheckName(name string) error {
	if hasSpace(name) {
		return errNameSpaces
	}
	return nil
}

// ruleHash is the password hash a rule names: of the password after '>' or '<', or the hash
// itself after '#' or '!'.
func ruleHash(op string) ([]byte, error) {
	if op[0] == '>' || op[0] == '<' {
		return hashPassword(op[1:]), nil
	}
	return parseHash(op[1:])
}

func hashPassword(p string) []byte {
	h := sha256.Sum256([]byte(p))
	return h[:]
}

// parseHash reads a #hash or !hash rule's 64 lower-case hex digits.
func parseHash(s string) ([]byte, error) {
	if len(s) != 64 {
		return nil, errBadHash
	}
	for i := 0; i < len(s); i++ {
		if ch := s[i]; (ch < 'a' || ch > 'f') && (ch < '0' || ch > '9') {
			return nil, errBadHash
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

// newUser is a user as ACL SETUSER creates it: off, no password, no permissions, and no channels
// (Redis 7.0's acl-pubsub-default resetchannels) unless acl-pubsub-default gives them.
func (us *Users) newUser(name string) *User {
	u := &User{name: name, selector: us.newSelector()}
	u.refresh()
	return u
}

// newDefaultUser is the default user as Redis creates it: on, nopass, ~* &* +@all.
func (us *Users) newDefaultUser() *User {
	d := us.newUser("default")
	for _, op := range []string{"+@all", "~*", "&*", "on", "nopass"} {
		_ = us.applyRule(d, op)
	}
	return d
}

// newSelector is a selector that allows nothing, but the channels acl-pubsub-default gives.
func (us *Users) newSelector() selector {
	return selector{allowed: make([]uint64, us.table.bitmapWords()), allChannels: us.allChannels}
}

// applyRule applies one rule to u, as Redis's ACLSetUser does; rules about commands, keys and
// channels go to the root selector (applySelectorRule).
func (us *Users) applyRule(u *User, op string) error {
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
			_ = us.applyRule(u, r)
		}
		u.allChannels = us.allChannels
		return nil
	case "clearselectors":
		u.selectors = nil
		return nil
	}
	switch op[0] {
	case '>', '#':
		h, err := ruleHash(op)
		if err != nil {
			return err
		}
		if indexHash(u.passwords, h) < 0 {
			u.passwords = append(u.passwords, h)
		}
		u.nopass = false
		return nil
	case '<', '!':
		h, err := ruleHash(op)
		if err != nil {
			return err
		}
		i := indexHash(u.passwords, h)
		if i < 0 {
			return errNoPassword
		}
		u.passwords = append(u.passwords[:i:i], u.passwords[i+1:]...)
		return nil
	case '(':
		if op[len(op)-1] == ')' {
			sel, err := us.selectorFromRules(op[1 : len(op)-1])
			if err != nil {
				return err
			}
			u.selectors = append(u.selectors, sel)
			return nil
		}
	}
	return us.applySelectorRule(&u.selector, op)
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
func (us *Users) selectorFromRules(rules string) (*selector, error) {
	ops, err := config.SplitArgs(rules)
	if err != nil {
		return nil, errSyntax
	}
	sel := us.newSelector()
	for _, op := range ops {
		if err := us.applySelectorRule(&sel, op); err != nil {
			return nil, err
		}
	}
	return &sel, nil
}

// applySelectorRule applies a rule about commands, keys or channels, as Redis's ACLSetSelector.
func (us *Users) applySelectorRule(sel *selector, op string) error {
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
		return errSyntax
	}
	switch op[0] {
	case '~', '%':
		return addKeyPattern(sel, op)
	case '&':
		if sel.allChannels {
			return errAllChannels
		}
		if hasSpace(op[1:]) {
			return errSyntax
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
			cat := Category(op[2:])
			if cat == 0 || op[2:] == "" {
				return errUnknown
			}
			us.table.changeCategory(sel, cat, allow)
			return nil
		}
		return us.commandRule(sel, strings.ToLower(op[1:]), allow)
	}
	return errSyntax
}

// commandRule applies +name, -name, +name|sub, -name|sub and the first-arg form +name|arg.
func (us *Users) commandRule(sel *selector, name string, allow bool) error {
	if unit := us.table.byName[name]; unit != nil {
		us.table.changePerm(sel, unit, allow)
		return nil
	}
	parent, arg, found := cutLast(name, '|')
	if !found || !allow {
		return errUnknown
	}
	p := us.table.byName[parent]
	if p == nil {
		return errUnknown
	}
	if strings.Contains(parent, "|") {
		return errSubFirstArg
	}
	if arg == "" {
		return errSyntax
	}
	if p.subs != nil {
		return errUnknown // a container's unknown subcommand
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
func addKeyPattern(sel *selector, op string) error {
	if sel.allKeys {
		return errAllKeys
	}
	perm, i := ReadWrite, 1
	if op[0] == '%' {
		tilde := strings.IndexByte(op, '~')
		if tilde < 0 {
			return errSyntax
		}
		perm = 0
		for _, ch := range op[1:tilde] {
			switch {
			case (ch == 'R' || ch == 'r') && perm&Read == 0:
				perm |= Read
			case (ch == 'W' || ch == 'w') && perm&Write == 0:
				perm |= Write
			default:
				return errSyntax
			}
		}
		if perm == 0 {
			return errSyntax
		}
		i = tilde + 1
	}
	pattern := op[i:]
	if hasSpace(pattern) {
		return errSyntax
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

// truncate cuts s to n bytes, as Redis cuts names and rules it quotes in errors and in the log.
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
