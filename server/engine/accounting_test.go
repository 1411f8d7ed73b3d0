package engine

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/keyspace"
)

// TestMemoryAccountingFollowsWrites: after a random mix of writes to every collection type
// (created, grown, shrunk, emptied, renamed, moved, copied, stored, restored, overwritten by a
// string, expired), what each DB accounts to collections equals the sum of their sizes: the
// keyspace's mutation API leaves no write path unaccounted.
func TestMemoryAccountingFollowsWrites(t *testing.T) {
	cfg := config.New()
	cfg.Port, cfg.Bind, cfg.LogLevel, cfg.MetricsPort, cfg.Save = 0, []string{"127.0.0.1"}, "warning", 0, ""
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve() }()
	<-s.Ready()
	c := dialPeer(t, s.Addr())
	rng := rand.New(rand.NewPCG(3, 9))
	key := func(p string) string { return fmt.Sprintf("%s:%d", p, rng.IntN(20)) }
	val := func() string { return strconv.Itoa(rng.IntN(1000)) }
	payload := ""
	for i := 0; i < 6000; i++ {
		var cmd []string
		switch rng.IntN(24) {
		case 0:
			cmd = []string{"RPUSH", key("l"), val(), val()}
		case 1:
			cmd = []string{"LPOP", key("l"), "3"}
		case 2:
			cmd = []string{"LTRIM", key("l"), "1", "-2"}
		case 3:
			cmd = []string{"HSET", key("h"), val(), val()}
		case 4:
			cmd = []string{"HDEL", key("h"), val()}
		case 5:
			cmd = []string{"SADD", key("s"), val(), val()}
		case 6:
			cmd = []string{"SPOP", key("s")}
		case 7:
			cmd = []string{"SMOVE", key("s"), key("s"), val()}
		case 8:
			cmd = []string{"ZADD", key("z"), val(), val()}
		case 9:
			cmd = []string{"ZPOPMIN", key("z")}
		case 10:
			cmd = []string{"XADD", key("x"), "*", "f", val()}
		case 11:
			cmd = []string{"XTRIM", key("x"), "MAXLEN", "5"}
		case 12:
			cmd = []string{"RENAME", key("h"), key("h")}
		case 13:
			cmd = []string{"MOVE", key("s"), "1"}
		case 14:
			cmd = []string{"COPY", key("z"), key("z"), "DB", "2", "REPLACE"}
		case 15:
			cmd = []string{"SUNIONSTORE", key("s"), key("s"), key("s")}
		case 16:
			cmd = []string{"ZUNIONSTORE", key("z"), "2", key("z"), key("z")}
		case 17:
			cmd = []string{"SORT", key("l"), "STORE", key("l")}
		case 18:
			cmd = []string{"SET", key([]string{"l", "h", "s", "z"}[rng.IntN(4)]), val()}
		case 19:
			cmd = []string{"DEL", key([]string{"l", "h", "s", "z", "x"}[rng.IntN(5)])}
		case 20:
			cmd = []string{"LMOVE", key("l"), key("l"), "LEFT", "RIGHT"}
		case 21:
			if payload != "" {
				cmd = []string{"RESTORE", key("h"), "0", payload, "REPLACE"}
			} else {
				cmd = []string{"PING"}
			}
		case 22:
			cmd = []string{"PEXPIRE", key("z"), "1"}
		default:
			cmd = []string{"XGROUP", "CREATE", key("x"), "g", "0", "MKSTREAM"}
		}
		c.do(cmd...)
		if i%500 == 0 {
			c.do("HSET", "dumped", "a", val())
			if r := c.do("DUMP", "dumped"); len(r) > 4 {
				_, body, _ := strings.Cut(r, "\r\n")
				payload = strings.TrimSuffix(body, "\r\n")
			}
		}
	}
	c.do("XREADGROUP", "GROUP", "g", "alice", "STREAMS", key("x"), ">")
	// Once Serve has returned, the main thread is gone and the keyspace can be read here.
	s.Shutdown()
	<-done
	for i, db := range s.dbs {
		var sum int64
		db.Each(func(r keyspace.Ref) bool {
			// An inline collection's bytes are its record's, accounted with the arena.
			if _, inline := db.InlineBytes(r); !inline && db.Type(r) != keyspace.TypeString {
				sum += objectBytes(db.Obj(r))
			}
			return true
		})
		if got := db.ObjectBytes(); got != sum {
			t.Errorf("db %d accounts %d bytes to collections holding %d", i, got, sum)
		}
	}
}
