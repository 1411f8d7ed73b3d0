package engine

import (
	"strconv"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/keyspace"
)

// Keyspace notifications (notify-keyspace-events): commands announce what they did to a key on
// __keyspace@<db>__:<key> (the event as message) and __keyevent@<db>__:<event> (the key as
// message), class by class, with Redis 7.0's event names and order: a command's own event first,
// then "del" when it emptied a collection. The per-command cost when nothing is configured is one
// flag test.

func (s *Server) applyNotifyConfig() {
	s.notifyFlags = s.cfg.NotifyFlags
	s.hookNewKeys(true)
}

// hookNewKeys sets each database to announce the keys added to it ("new", class n) while that
// class is on and on is true; off, or while a file loads, nothing is called.
func (s *Server) hookNewKeys(on bool) {
	for _, db := range s.dbs {
		if db == nil {
			continue
		}
		db.OnNew = nil
		if on && s.notifyFlags&config.NotifyNew != 0 {
			db.OnNew = func(key []byte) { s.notifyNew(db, key) }
		}
	}
}

// storeObject stores a STORE command's result under key, whose old value the caller deleted: as
// Redis's setKey overwrites a key that existed, that is no new key ("new" is not announced).
func (s *Server) storeObject(db *keyspace.DB, key []byte, t keyspace.Type, obj any, replaced bool) {
	s.quietNew = replaced
	db.SetObject(key, t, obj, s.initialClock())
	s.quietNew = false
}

// notifyNew announces a key added to db, found by identity: SWAPDB moves databases around.
func (s *Server) notifyNew(db *keyspace.DB, key []byte) {
	if s.quietNew {
		return
	}
	for i, d := range s.dbs {
		if d == db {
			s.publishEvent("new", key, i)
			return
		}
	}
}

// notify publishes one event about key in database db, if its class is enabled. It is small
// enough to be inlined, so a write pays one flag test when notifications are off.
func (s *Server) notify(class int, event string, key []byte, db int) {
	if s.notifyFlags&class != 0 {
		s.publishEvent(event, key, db)
	}
}

// publishEvent sends an event to the __keyspace@ and __keyevent@ channels K and E ask for.
func (s *Server) publishEvent(event string, key []byte, db int) {
	if s.notifyFlags&(config.NotifyKeyspace|config.NotifyKeyevent) == 0 {
		return
	}
	dbs := strconv.Itoa(db)
	if s.notifyFlags&config.NotifyKeyspace != 0 {
		ch := make([]byte, 0, 16+len(dbs)+len(key))
		ch = append(ch, "__keyspace@"...)
		ch = append(ch, dbs...)
		ch = append(ch, "__:"...)
		ch = append(ch, key...)
		s.publish(ch, []byte(event))
	}
	if s.notifyFlags&config.NotifyKeyevent != 0 {
		ch := make([]byte, 0, 16+len(dbs)+len(event))
		ch = append(ch, "__keyevent@"...)
		ch = append(ch, dbs...)
		ch = append(ch, "__:"...)
		ch = append(ch, event...)
		s.publish(ch, key)
	}
}
