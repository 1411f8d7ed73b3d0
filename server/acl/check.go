package acl

import (
	"github.com/iocache/iocache/server/glob"
	"github.com/iocache/iocache/server/resp"
)

// Reason is what a check denied, as ACL LOG names it; Allowed when it denied nothing. The order
// matters: with several selectors, the denial reported is the one of the highest reason.
type Reason int

// The verdicts of Check, and DeniedAuth for a failed AUTH, which ACL LOG records too.
const (
	Allowed Reason = iota
	DeniedCommand
	DeniedKey
	DeniedChannel
	DeniedAuth
)

var reasonNames = [...]string{Allowed: "", DeniedCommand: "command", DeniedKey: "key", DeniedChannel: "channel", DeniedAuth: "auth"}

// String is the reason as ACL LOG's "reason" field writes it.
func (r Reason) String() string { return reasonNames[r] }

// Key is one key a call names, and what the call does with it.
type Key struct {
	Name []byte
	// Pos is the key's index in the call's arguments: of two denied keys, the one furthest in
	// the arguments is reported. 0 when the caller could not place it.
	Pos  int
	Perm Perm
}

// Call is one call of a command as Check sees it, built by the server for each check: the
// server knows its command table and key specs, the ACL model only units and patterns.
type Call struct {
	Unit *Unit    // the command or subcommand called (Unit.Called)
	Args [][]byte // the arguments, Args[0] the command's name; Args[1] is what +cmd|arg rules allow
	// Keys are every key the call names, with the access it needs of each.
	Keys []Key
	// Channels are those the call publishes or subscribes to (unsubscribing needs no
	// permission, as in Redis).
	Channels [][]byte
	// ChannelPatterns says Channels are PSUBSCRIBE patterns: each must be one of the user's
	// channel patterns literally, as in Redis, not a channel one of them matches.
	ChannelPatterns bool
}

// Check reports whether u may make the call, and when it may not, why and what it was refused:
// the command's full name, the key or the channel. With several selectors, one that allows all
// of it is enough; otherwise the denial reported is Redis's "most relevant": a channel over a
// key over a command, then the one furthest in the arguments. It allocates only the name of
// what one selector denies.
func (u *User) Check(call *Call) (Reason, string) {
	reason, object, pos := u.selector.check(call)
	for _, sel := range u.selectors {
		if reason == Allowed {
			break
		}
		r, o, p := sel.check(call)
		if r == Allowed || r > reason || r == reason && p > pos {
			reason, object, pos = r, o, p
		}
	}
	return reason, object
}

// check is one selector's verdict; pos is the argument it refused (0 for the command).
func (sel *selector) check(call *Call) (Reason, string, int) {
	unit := call.Unit
	if !sel.allCommands && !unit.noAuth && !sel.bit(unit.id) && !sel.firstArgAllowed(unit, call.Args) {
		return DeniedCommand, unit.name, 0
	}
	if !sel.allKeys {
		for _, k := range call.Keys {
			if !sel.keyAllowed(k.Name, k.Perm) {
				return DeniedKey, string(k.Name), k.Pos
			}
		}
	}
	if !sel.allChannels {
		for i, ch := range call.Channels {
			if !sel.channelAllowed(ch, call.ChannelPatterns) {
				return DeniedChannel, string(ch), i + 1
			}
		}
	}
	return Allowed, "", 0
}

// ReadsAllKeys reports whether one of the user's selectors may read any key: what SORT's BY and
// GET patterns, which read keys no argument names, require.
func (u *User) ReadsAllKeys() bool {
	if u.selector.readsAllKeys() {
		return true
	}
	for _, sel := range u.selectors {
		if sel.readsAllKeys() {
			return true
		}
	}
	return false
}

// MayUseChannel reports whether one of the user's selectors allows a channel, or with pattern
// a PSUBSCRIBE pattern (which must be one of the user's literally): whether a subscription may
// stay after the user's rules changed.
func (u *User) MayUseChannel(ch []byte, pattern bool) bool {
	if u.allChannels || u.channelAllowed(ch, pattern) {
		return true
	}
	for _, sel := range u.selectors {
		if sel.allChannels || sel.channelAllowed(ch, pattern) {
			return true
		}
	}
	return false
}

func (sel *selector) firstArgAllowed(unit *Unit, args [][]byte) bool {
	allowed := sel.firstArgs[unit.id]
	if len(allowed) == 0 || len(args) < 2 {
		return false
	}
	for _, a := range allowed {
		if resp.EqualFold(args[1], a) {
			return true
		}
	}
	return false
}

func (sel *selector) keyAllowed(key []byte, perm Perm) bool {
	for _, p := range sel.keys {
		if p.perm&perm == perm && glob.Match([]byte(p.pattern), key, false) {
			return true
		}
	}
	return false
}

// readsAllKeys reports whether the selector may read any key.
func (sel *selector) readsAllKeys() bool {
	if sel.allKeys {
		return true
	}
	for _, p := range sel.keys {
		if p.pattern == "*" && p.perm&Read != 0 {
			return true
		}
	}
	return false
}

// channelAllowed matches a channel against the selector's patterns; a PSUBSCRIBE pattern
// (literal) must be one of them literally, as in Redis.
func (sel *selector) channelAllowed(ch []byte, literal bool) bool {
	for _, p := range sel.channels {
		if literal && p == string(ch) || !literal && glob.Match([]byte(p), ch, false) {
			return true
		}
	}
	return false
}
