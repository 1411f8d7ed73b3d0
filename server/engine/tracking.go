package engine

import (
	"maps"
	"slices"
	"strings"

	"github.com/iocache/iocache/server/resp"
)

// Client-side caching (CLIENT TRACKING), as in Redis 7.0: the server remembers which keys each
// tracking client read and, when one changes (written, deleted, expired, evicted, flushed), sends
// that client an "invalidate" push message, so the client can keep a local copy until then.
// Default mode remembers the keys of read-only commands (OPTIN: only after CLIENT CACHING YES;
// OPTOUT: except after CLIENT CACHING NO); BCAST mode sends every change under the client's
// prefixes instead. RESP3 clients get the messages on their own connection; REDIRECT sends them to
// another client (as __redis__:invalidate pub/sub messages in RESP2). Like Redis, keys are tracked
// by name across databases, and entries for clients that went away are dropped when the key is
// next invalidated.
//
// Clients libraries use it for near-cache reads: rueidis turns it on at connect by default.

const trackingChannel = "__redis__:invalidate"

type trackingState struct {
	clients int                       // clients with tracking on
	table   map[string]map[int64]bool // key → IDs of clients that may have cached it
	// maxKeys is tracking-table-max-keys (0: no limit), set by its directive's effect
	// (config_effects.go).
	maxKeys int
	bcast   map[string]map[*client]bool // prefix ("" = every key) → BCAST clients
	// bcastPending: per prefix, the keys changed since the main loop last slept, each with the
	// client that changed it last (for NOLOOP). As Redis does, BCAST clients get them in one
	// message per prefix before the loop sleeps, not one message per key.
	bcastPending map[string]map[string]*client
}

// trackingOptions is a client's CLIENT TRACKING setting.
type trackingOptions struct {
	bcast, optin, optout, noloop bool
	caching                      bool  // CLIENT CACHING given for the next command
	redirect                     int64 // 0: none
	prefixes                     []string
}

func cmdClientTracking(s *Server, c *client, argv [][]byte) {
	var opt trackingOptions
	for i := 3; i < len(argv); i++ {
		more := i+1 < len(argv)
		switch a := argv[i]; {
		case resp.EqualFold(a, "redirect") && more:
			if opt.redirect != 0 {
				s.addError(c, "ERR A client can only redirect to a single other client")
				return
			}
			id, ok := s.intArg(c, argv[i+1])
			if !ok {
				return
			}
			if id != c.id {
				if _, exists := s.clients[id]; !exists {
					s.addError(c, "ERR The client ID you want redirect to does not exist")
					return
				}
			}
			opt.redirect = id
			i++
		case resp.EqualFold(a, "bcast"):
			opt.bcast = true
		case resp.EqualFold(a, "optin"):
			opt.optin = true
		case resp.EqualFold(a, "optout"):
			opt.optout = true
		case resp.EqualFold(a, "noloop"):
			opt.noloop = true
		case resp.EqualFold(a, "prefix") && more:
			opt.prefixes = append(opt.prefixes, string(argv[i+1]))
			i++
		default:
			s.addError(c, errSyntax)
			return
		}
	}
	switch {
	case resp.EqualFold(argv[2], "on"):
		if !opt.bcast && len(opt.prefixes) > 0 {
			s.addError(c, "ERR PREFIX option requires BCAST mode to be enabled")
			return
		}
		if c.tracking != nil && c.tracking.bcast != opt.bcast {
			s.addError(c, "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.")
			return
		}
		if opt.optin && opt.optout {
			s.addError(c, "ERR You can't specify both OPTIN mode and OPTOUT mode")
			return
		}
		if opt.bcast && (opt.optin || opt.optout) {
			s.addError(c, "ERR OPTIN and OPTOUT are not compatible with BCAST")
			return
		}
		if c.tracking != nil && ((opt.optin && c.tracking.optout) || (opt.optout && c.tracking.optin)) {
			s.addError(c, "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.")
			return
		}
		if opt.bcast && !s.checkPrefixes(c, opt.prefixes) {
			return
		}
		s.enableTracking(c, opt)
	case resp.EqualFold(argv[2], "off"):
		s.disableTracking(c)
	default:
		s.addError(c, errSyntax)
		return
	}
	c.w.OK()
}

// checkPrefixes refuses BCAST prefixes that overlap each other or the client's existing ones: a
// key would otherwise be reported twice.
func (s *Server) checkPrefixes(c *client, prefixes []string) bool {
	var existing []string
	if c.tracking != nil {
		existing = c.tracking.prefixes
	}
	for i, p := range prefixes {
		for _, q := range existing {
			if strings.HasPrefix(p, q) || strings.HasPrefix(q, p) {
				s.addError(c, "ERR Prefix '"+p+"' overlaps with an existing prefix '"+q+"'. Prefixes for a single client must not overlap.")
				return false
			}
		}
		for _, q := range prefixes[i+1:] {
			if strings.HasPrefix(p, q) || strings.HasPrefix(q, p) {
				s.addError(c, "ERR Prefix '"+p+"' overlaps with another provided prefix '"+q+"'. Prefixes for a single client must not overlap.")
				return false
			}
		}
	}
	return true
}

func (s *Server) enableTracking(c *client, opt trackingOptions) {
	t := &s.tracking
	if c.tracking == nil {
		t.clients++
		c.tracking = &trackingOptions{}
	}
	cur := c.tracking
	cur.redirect, cur.bcast, cur.noloop = opt.redirect, opt.bcast, opt.noloop
	cur.optin, cur.optout, cur.caching = opt.optin, opt.optout, false
	if opt.bcast {
		if t.bcast == nil {
			t.bcast = map[string]map[*client]bool{}
		}
		prefixes := opt.prefixes
		if len(prefixes) == 0 && len(cur.prefixes) == 0 {
			prefixes = []string{""}
		}
		for _, p := range prefixes {
			if t.bcast[p] == nil {
				t.bcast[p] = map[*client]bool{}
			}
			t.bcast[p][c] = true
			cur.prefixes = append(cur.prefixes, p)
		}
	}
}

func (s *Server) disableTracking(c *client) {
	if c.tracking == nil {
		return
	}
	t := &s.tracking
	for _, p := range c.tracking.prefixes {
		delete(t.bcast[p], c)
		if len(t.bcast[p]) == 0 {
			delete(t.bcast, p)
		}
	}
	c.tracking = nil
	t.clients--
}

func cmdClientCaching(s *Server, c *client, argv [][]byte) {
	if c.tracking == nil {
		s.addError(c, "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled")
		return
	}
	switch {
	case resp.EqualFold(argv[2], "yes"):
		if !c.tracking.optin {
			s.addError(c, "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
			return
		}
	case resp.EqualFold(argv[2], "no"):
		if !c.tracking.optout {
			s.addError(c, "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
			return
		}
	default:
		s.addError(c, errSyntax)
		return
	}
	c.tracking.caching = true
	c.w.OK()
}

func cmdClientGetRedir(s *Server, c *client) {
	if c.tracking == nil {
		c.w.Int(-1)
		return
	}
	c.w.Int(c.tracking.redirect)
}

func cmdClientTrackingInfo(s *Server, c *client) {
	c.w.Map(3)
	c.w.BulkString("flags")
	t := c.tracking
	if t == nil {
		c.w.Set(1)
		c.w.BulkString("off")
		c.w.BulkString("redirect")
		c.w.Int(-1)
		c.w.BulkString("prefixes")
		c.w.EmptyArray()
		return
	}
	flags := []string{"on"}
	for _, f := range []struct {
		on   bool
		name string
	}{{t.bcast, "bcast"}, {t.optin, "optin"}, {t.optout, "optout"}, {t.caching && t.optin, "caching-yes"}, {t.caching && t.optout, "caching-no"}, {t.noloop, "noloop"}} {
		if f.on {
			flags = append(flags, f.name)
		}
	}
	if _, ok := s.clients[t.redirect]; t.redirect != 0 && !ok {
		flags = append(flags, "broken_redirect")
	}
	c.w.Set(len(flags))
	for _, f := range flags {
		c.w.BulkString(f)
	}
	c.w.BulkString("redirect")
	c.w.Int(t.redirect)
	c.w.BulkString("prefixes")
	prefixes := slices.Sorted(slices.Values(t.prefixes)) // Redis lists them in radix-tree order
	if len(prefixes) == 1 && prefixes[0] == "" {
		prefixes = nil
	}
	c.w.Array(len(prefixes))
	for _, p := range prefixes {
		c.w.BulkString(p)
	}
}

// trackingRemember records the keys a read-only command of a tracking client read.
func (s *Server) trackingRemember(c *client, cmd *command, argv [][]byte) {
	s.trackingRememberKeys(c, commandKeys(cmd, argv))
}

// trackingRememberScript is a read-only command run by a script: as Redis does, the script's
// caller, when it tracks keys, is taken to have read every key the script declared.
func (s *Server) trackingRememberScript() {
	if caller := s.lua.caller; caller != nil && caller.tracking != nil {
		s.trackingRememberKeys(caller, s.lua.callerKeys)
	}
}

func (s *Server) trackingRememberKeys(c *client, keys [][]byte) {
	t := c.tracking
	if t.bcast || (t.optin && !t.caching) || (t.optout && t.caching) {
		return
	}
	if s.tracking.table == nil {
		s.tracking.table = map[string]map[int64]bool{}
	}
	for _, k := range keys {
		ids := s.tracking.table[string(k)]
		if ids == nil {
			ids = map[int64]bool{}
			s.tracking.table[string(k)] = ids
		}
		ids[c.id] = true
	}
	s.trackingLimitKeys(len(keys) + 100)
}

// trackingLimitKeys keeps the table within tracking-table-max-keys as Redis does: keys over the
// limit are invalidated for the clients that cached them, picked at random (Go's map order), at
// most effort of them per call so that a lowered limit is reached over several commands.
func (s *Server) trackingLimitKeys(effort int) {
	t := &s.tracking
	for key := range t.table {
		if t.maxKeys <= 0 || len(t.table) <= t.maxKeys || effort == 0 {
			return
		}
		s.trackingInvalidateKey([]byte(key))
		effort--
	}
}

// trackingAfterCommand ends what CLIENT CACHING applied to (the next command, or the next
// transaction) and sends the invalidations the client's own command caused, after its reply.
func (s *Server) trackingAfterCommand(c *client, name []byte) {
	if c.tracking != nil && c.tracking.caching && c.flags&flagMulti == 0 && !resp.EqualFold(name, "client") {
		c.tracking.caching = false
	}
	for _, m := range c.pendingInvalidations {
		c.w.Buf = append(c.w.Buf, m...)
	}
	clear(c.pendingInvalidations)
	c.pendingInvalidations = c.pendingInvalidations[:0]
}

// trackingInvalidateKey tells every client that may have cached key that it changed.
func (s *Server) trackingInvalidateKey(key []byte) {
	t := &s.tracking
	for prefix := range t.bcast {
		if !strings.HasPrefix(string(key), prefix) {
			continue
		}
		if t.bcastPending == nil {
			t.bcastPending = map[string]map[string]*client{}
		}
		if t.bcastPending[prefix] == nil {
			t.bcastPending[prefix] = map[string]*client{}
		}
		t.bcastPending[prefix][string(key)] = s.commandOrigin()
	}
	ids, ok := t.table[string(key)]
	if !ok {
		return
	}
	delete(t.table, string(key))
	for id := range ids {
		target := s.clients[id]
		if target == nil || target.tracking == nil || target.tracking.bcast {
			continue
		}
		s.sendInvalidation(target, key, false)
	}
}

// trackingInvalidateAll is FLUSHDB's and FLUSHALL's: every tracking client drops everything.
func (s *Server) trackingInvalidateAll() {
	for _, target := range s.clients {
		if target.tracking != nil {
			s.sendInvalidation(target, nil, true)
		}
	}
	s.tracking.table = nil
}

// commandOrigin is the client whose command is running: the caller of a script when the command
// runs inside it, as Redis takes the script's caller for NOLOOP (and the reply order).
func (s *Server) commandOrigin() *client {
	if s.lua != nil && s.executing != nil && s.executing == s.lua.sc && s.lua.caller != nil {
		return s.lua.caller
	}
	return s.executing
}

// trackingBroadcast sends BCAST clients the keys of their prefixes changed since the loop last
// slept (Redis's trackingBroadcastInvalidationMessages): one message per prefix, its keys in
// lexicographic order, less those a NOLOOP client changed itself.
func (s *Server) trackingBroadcast() {
	t := &s.tracking
	pending := t.bcastPending
	t.bcastPending = nil
	for _, prefix := range slices.Sorted(maps.Keys(pending)) {
		changed := pending[prefix]
		names := slices.Sorted(maps.Keys(changed))
		for target := range t.bcast[prefix] {
			keys := make([][]byte, 0, len(names))
			for _, k := range names {
				if !target.tracking.noloop || changed[k] != target {
					keys = append(keys, []byte(k))
				}
			}
			if len(keys) > 0 {
				s.deliverInvalidation(target, keys, false)
			}
		}
	}
}

// sendInvalidation delivers one invalidation (all keys when all is set) to a tracking client or
// the client it redirects to.
func (s *Server) sendInvalidation(target *client, key []byte, all bool) {
	if target.tracking.noloop && target == s.commandOrigin() {
		return
	}
	s.deliverInvalidation(target, [][]byte{key}, all)
}

// deliverInvalidation writes an invalidation message of keys (all keys when all is set).
func (s *Server) deliverInvalidation(target *client, keys [][]byte, all bool) {
	dest := target
	var w resp.Writer
	if r := target.tracking.redirect; r != 0 && r != target.id {
		if dest = s.clients[r]; dest == nil {
			// The redirect target is gone (CLIENT TRACKINGINFO says broken_redirect): as Redis
			// does, a RESP3 client is told so in place of each invalidation it would have had.
			if !target.w.RESP3 {
				return
			}
			w.RESP3 = true
			w.Push(2)
			w.BulkString("tracking-redir-broken")
			w.Int(r)
			s.queueInvalidation(target, w.Buf)
			return
		}
	}
	w.RESP3 = dest.w.RESP3
	switch {
	case dest.w.RESP3:
		w.Push(2)
		w.BulkString("invalidate")
	case dest != target && dest.flags&flagPubSub != 0:
		w.Push(3)
		w.BulkString("message")
		w.BulkString(trackingChannel)
	default:
		return // RESP2 on its own connection, or a redirect target not subscribed: nowhere to send it
	}
	if all {
		w.Null() // $-1 in RESP2, as Redis sends it
	} else {
		w.Array(len(keys))
		for _, k := range keys {
			w.Bulk(k)
		}
	}
	s.queueInvalidation(dest, w.Buf)
}

// queueInvalidation sends a tracking message to dest: at once, or after the reply to the command
// being executed when dest sent that command.
func (s *Server) queueInvalidation(dest *client, msg []byte) {
	if dest == s.commandOrigin() {
		dest.pendingInvalidations = append(dest.pendingInvalidations, msg)
		return
	}
	s.pushTo(dest, msg)
}
