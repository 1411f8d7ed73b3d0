package replication

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"strings"
	"testing"

	"github.com/iocache/iocache/server/keyspace"
	"github.com/iocache/iocache/server/rdb"
)

// fuzzBudget is the memory a fuzzed replica may load: small, so that lying sizes meet it early.
const fuzzBudget = 4 << 20

// FuzzSyncStream feeds what a primary sends after +FULLRESYNC (the "$<len>" or "$EOF:<mark>"
// header, then an RDB) through the replica's path: OpenPayload, the budget reader, the RDB
// loader and the budget's check of what was loaded. Whatever the bytes, it must end with a
// load or an error, never a panic, and never read more than the budget (the payload of a
// primary whose sizes lie, or which never ends, is refused, not held).
func FuzzSyncStream(f *testing.F) {
	var file bytes.Buffer
	e := rdb.NewEncoder(&file, rdb.DefaultOptions())
	e.Header()
	e.Aux("redis-ver", "7.0.15")
	e.SelectDB(0, 4, 1)
	e.Key([]byte("s"), rdb.Value{Type: keyspace.TypeString, Str: []byte(strings.Repeat("v", 300))}, rdb.KeyMeta{ExpireAt: 1, Freq: -1})
	l := keyspace.NewList()
	for i := range 200 {
		l.PushBack([]byte(fmt.Sprint("element:", i)))
	}
	e.Key([]byte("l"), rdb.Value{Type: keyspace.TypeList, Obj: l}, rdb.KeyMeta{Freq: -1})
	e.Key([]byte("n"), rdb.Value{Type: keyspace.TypeString, Str: []byte("12345")}, rdb.KeyMeta{Freq: -1})
	if err := e.Close(); err != nil {
		f.Fatal(err)
	}
	mark := strings.Repeat("m", 40)
	f.Add(append([]byte(fmt.Sprintf("$%d\r\n", file.Len())), file.Bytes()...))
	f.Add(append(append([]byte("\n\n$EOF:"+mark+"\r\n"), file.Bytes()...), mark...))
	f.Add(append([]byte("$100000000000\r\n"), file.Bytes()[:file.Len()/2]...))
	f.Add([]byte("-ERR nope\r\n"))
	f.Fuzz(func(t *testing.T, stream []byte) {
		src, err := OpenPayload(bytes.NewReader(stream))
		if err != nil {
			return
		}
		counted := &budgetReader{r: src, budget: fuzzBudget}
		db := keyspace.NewDB(maphash.MakeSeed())
		dbs := []*keyspace.DB{db}
		_, err = rdb.Load(bufio.NewReaderSize(counted, 64<<10), rdb.Handler{Entry: func(e *rdb.Entry) error {
			if e.DB != 0 {
				return errors.New("one database")
			}
			if _, exists := db.Find(e.Key); exists {
				return errors.New("duplicate key")
			}
			if e.Value.Type == keyspace.TypeString {
				db.SetString(e.Key, e.Value.Str, e.ExpireAt, false, 0)
			} else {
				db.SetObject(e.Key, e.Value.Type, e.Value.Obj, 0)
			}
			return CheckLoaded(dbs, fuzzBudget)
		}})
		if counted.read > fuzzBudget+64<<10 {
			t.Fatalf("read %d bytes of a payload with a budget of %d (err %v)", counted.read, fuzzBudget, err)
		}
		if used := db.UsedMemory(); used > 2*fuzzBudget {
			t.Fatalf("loaded %d bytes with a budget of %d (err %v)", used, fuzzBudget, err)
		}
	})
}
