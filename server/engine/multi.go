package engine

import (
	"github.com/iocache/iocache/server/acl"
	"github.com/iocache/iocache/server/keyspace"
)

// MULTI/EXEC transactions and WATCH. Queued commands copy their arguments, because the query
// buffer they came from is reused once the client returns to its I/O thread.

func (s *Server) queueMulti(c *client, cmd *command, argv [][]byte) {
	if cmd.flags&cmdNoMulti != 0 {
		c.flags |= flagDirtyExec
		s.addError(c, "ERR Command not allowed inside a transaction")
		return
	}
	cp := make([][]byte, len(argv))
	for i, a := range argv {
		cp[i] = append([]byte(nil), a...)
	}
	c.multiQueue = append(c.multiQueue, queuedCommand{cmd: cmd, argv: cp})
	c.w.Simple("QUEUED")
}

func cmdMulti(s *Server, c *client, argv [][]byte) {
	if c.flags&flagMulti != 0 {
		s.addError(c, "ERR MULTI calls can not be nested")
		return
	}
	c.flags |= flagMulti
	c.w.OK()
}

func (s *Server) discardTransaction(c *client) {
	c.multiQueue = nil
	c.flags &^= flagMulti | flagDirtyCAS | flagDirtyExec
	s.unwatchAll(c)
}

func cmdDiscard(s *Server, c *client, argv [][]byte) {
	if c.flags&flagMulti == 0 {
		s.addError(c, "ERR DISCARD without MULTI")
		return
	}
	s.discardTransaction(c)
	c.w.OK()
}

// cmdExec runs the transaction, then shows EXEC to monitors: Redis feeds it last, after the
// commands it ran, whatever its outcome.
func cmdExec(s *Server, c *client, argv [][]byte) {
	s.execTransaction(c)
	if len(s.pubsub.monitors) > 0 {
		s.feedMonitors(c, argv)
	}
}

func (s *Server) execTransaction(c *client) {
	if c.flags&flagMulti == 0 {
		s.addError(c, "ERR EXEC without MULTI")
		return
	}
	if c.flags&flagDirtyExec != 0 {
		s.discardTransaction(c)
		s.addError(c, "EXECABORT Transaction discarded because of previous errors.")
		return
	}
	if c.flags&flagDirtyCAS != 0 || s.watchedKeyExpired(c) {
		s.discardTransaction(c)
		c.w.NullArray()
		return
	}
	queue := c.multiQueue
	c.multiQueue = nil
	c.flags &^= flagMulti
	s.unwatchAll(c)
	c.w.Array(len(queue))
	c.flags |= flagExecuting
	for _, q := range queue {
		if c.user.Restricted() {
			// Permissions may have changed since the command was queued.
			if reason, object := s.aclCheck(c.user, q.cmd, q.argv); reason != acl.Allowed {
				s.addACLLog(c, reason, "multi", object, c.user.Name())
				s.addError(c, aclExecError(reason))
				continue
			}
		}
		s.execute(c, q.cmd, q.argv)
	}
	c.flags &^= flagExecuting
}

// flagExecuting marks a client running EXEC: blocking commands do not block inside it.
const flagExecuting = 1 << 20

func cmdWatch(s *Server, c *client, argv [][]byte) {
	if c.flags&flagMulti != 0 {
		s.addError(c, "ERR WATCH inside MULTI is not allowed")
		return
	}
	if c.flags&flagDirtyCAS != 0 {
		c.w.OK() // the transaction fails anyway: no point watching more, as in Redis
		return
	}
	if s.watchedKeys == nil {
		s.watchedKeys = map[watchedKey][]watcher{}
	}
	for _, k := range argv[1:] {
		wk := watchedKey{db: c.db, key: string(k)}
		if s.watches(c, wk) {
			continue
		}
		c.watched = append(c.watched, clientWatch{watchedKey: wk, expired: s.keyIsStale(s.dbs[c.db], k)})
		s.watchedKeys[wk] = append(s.watchedKeys[wk], watcher{c: c, i: len(c.watched) - 1})
	}
	c.w.OK()
}

// watcher is one client watching a key: the client, and its watch's index in c.watched (which
// only grows until unwatchAll empties it), so that a touch finds the watch's stale flag in O(1)
// however many keys the client watches.
type watcher struct {
	c *client
	i int
}

func (w watcher) watch() *clientWatch { return &w.c.watched[w.i] }

// watches reports whether c watches wk already: a look at the key's watchers, not at the
// client's keys, so that WATCH of n keys costs O(n).
func (s *Server) watches(c *client, wk watchedKey) bool {
	for _, w := range s.watchedKeys[wk] {
		if w.c == c {
			return true
		}
	}
	return false
}

// keyIsStale reports whether key is in db but past its expiry time (not yet deleted).
func (s *Server) keyIsStale(db *keyspace.DB, key []byte) bool {
	if db == nil {
		return false
	}
	r, ok := db.Find(key)
	if !ok {
		return false
	}
	exp, has := db.ExpireAt(r)
	return has && exp <= s.nowMs
}

func cmdUnwatch(s *Server, c *client, argv [][]byte) {
	s.unwatchAll(c)
	c.flags &^= flagDirtyCAS
	c.w.OK()
}

func (s *Server) unwatchAll(c *client) {
	for _, cw := range c.watched {
		wk := cw.watchedKey
		list := s.watchedKeys[wk]
		for i, x := range list {
			if x.c == c {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(s.watchedKeys, wk)
		} else {
			s.watchedKeys[wk] = list
		}
	}
	c.watched = nil
}

// watchedKeyExpired reports whether a watched key has expired since WATCH (Redis 7 treats that
// as a modification); a key already stale when it was watched does not count.
func (s *Server) watchedKeyExpired(c *client) bool {
	for _, cw := range c.watched {
		if !cw.expired && s.keyIsStale(s.dbs[cw.db], []byte(cw.key)) {
			return true
		}
	}
	return false
}

// touchWatched marks clients watching key as dirty. A client that watched the key while it was
// stale is not: if the key is gone now, its going was no logical change (the flag is cleared,
// as the key is now simply missing); if it is still there, Redis 7.0 leaves the client alone too.
func (s *Server) touchWatched(dbIndex int, key []byte) {
	if len(s.watchedKeys) == 0 {
		return
	}
	wk := watchedKey{db: dbIndex, key: string(key)}
	for _, w := range s.watchedKeys[wk] {
		if cw := w.watch(); cw.expired {
			if _, exists := s.dbs[dbIndex].Find(key); !exists {
				cw.expired = false
			}
			continue
		}
		w.c.flags |= flagDirtyCAS
	}
}

// touchReplacedDB marks as dirty the clients watching a key of database dbIndex whose contents
// were replaced whole (FLUSHDB, SWAPDB, a load), as Redis 7.0's touchAllWatchedKeysInDb: only a
// key that existed before or exists after (old and now; either may be nil) changed, and a stale
// key going away, staying stale, or a missing key replaced by a stale one is no change.
func (s *Server) touchReplacedDB(dbIndex int, old, now *keyspace.DB) {
	for wk, list := range s.watchedKeys {
		if wk.db != dbIndex {
			continue
		}
		inOld, inNow := hasKey(old, wk.key), hasKey(now, wk.key)
		if !inOld && !inNow {
			continue
		}
		for _, w := range list {
			cw := w.watch()
			switch {
			case cw.expired && !inNow:
				cw.expired = false // the stale key is gone: no logical change
				continue
			case cw.expired && s.keyIsStale(now, []byte(wk.key)):
				continue // stale before, stale after
			case !cw.expired && !inOld && s.keyIsStale(now, []byte(wk.key)):
				cw.expired = true // a missing key replaced by a stale one
				continue
			}
			w.c.flags |= flagDirtyCAS
		}
	}
}

func hasKey(db *keyspace.DB, key string) bool {
	if db == nil {
		return false
	}
	_, ok := db.Find([]byte(key))
	return ok
}

// multiCommands registers this file's commands (see table.go).
var multiCommands = []commandSpec{
	{name: "multi", h: cmdMulti},
	{name: "exec", h: cmdExec, own: cmdSkipMonitor}, // iocache's: EXEC feeds monitors its commands itself (monitor_filter.go)
	{name: "discard", h: cmdDiscard},
	{name: "watch", h: cmdWatch},
	{name: "unwatch", h: cmdUnwatch},
}
