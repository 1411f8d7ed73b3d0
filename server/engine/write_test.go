package engine

import (
	"testing"

	"github.com/iocache/iocache/server/keyspace"
)

// A command that creates a collection and then fails leaves no key behind, whatever it forgot:
// the lookup that created the collection remembers the key, and the end of the command deletes
// it while it is empty (write.go). Today's commands check their arguments before they create,
// so the commands here are made for the test: one per collection type, each creating its key
// and replying with an error.
func TestFailedCreationLeavesNoKey(t *testing.T) {
	s, c := bareServer(t)
	creators := map[string]func(s *Server, c *client, key []byte){
		"list": func(s *Server, c *client, key []byte) { s.getList(c, key, forCreate) },
		"hash": func(s *Server, c *client, key []byte) { s.getHash(c, key, forCreate) },
		"set":  func(s *Server, c *client, key []byte) { s.getSet(c, key, forCreate) },
		"zset": func(s *Server, c *client, key []byte) { s.getZSet(c, key, forCreate) },
		"large zset": func(s *Server, c *client, key []byte) {
			getObject(s, c, key, keyspace.TypeZSet, forCreate, func() *keyspace.ZSet { return keyspace.NewZSetFor(0, 1000) })
		},
	}
	for name, create := range creators {
		cmd := &command{name: "create-then-fail", arity: 2, flags: cmdWrite, handler: func(s *Server, c *client, argv [][]byte) {
			create(s, c, argv[1])
			if _, ok := s.dbs[c.db].Find(argv[1]); !ok {
				t.Errorf("%s: the lookup did not create the key", name)
			}
			s.addError(c, "ERR refused after creating")
		}}
		s.execute(c, cmd, [][]byte{[]byte("create-then-fail"), []byte(name)})
		if _, ok := s.dbs[0].Find([]byte(name)); ok {
			t.Errorf("%s: an empty collection outlived the command that created it", name)
		}
		if len(s.writing) != 0 {
			t.Errorf("%s: %d created keys still remembered after the command", name, len(s.writing))
		}
	}
}
