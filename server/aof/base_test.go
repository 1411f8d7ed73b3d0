package aof

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/iocache/iocache/server/keyspace"
)

// TestBaseWriter: a base of commands is what Redis's rewrite writes for each type (collections
// in commands of at most RewriteItemsPerCmd elements, a SELECT where the database changes, the
// expiry as PEXPIREAT, functions first), and Replay reads it back command for command.
func TestBaseWriter(t *testing.T) {
	list := keyspace.NewList()
	for i := 0; i < 2*RewriteItemsPerCmd+2; i++ {
		list.PushBack([]byte(fmt.Sprint(i)))
	}
	set := keyspace.NewSet()
	set.Add([]byte("7"))
	zset := keyspace.NewZSet()
	zset.Add([]byte("m"), math.Inf(-1))
	zset.Add([]byte("n"), 0.1)
	hash := keyspace.NewHash()
	hash.Set([]byte("f"), []byte("v"))

	var out bytes.Buffer
	b := NewBaseWriter(&out)
	b.Functions([][]byte{[]byte("#!lua name=lib\n")})
	b.Key(0, []byte("s"), keyspace.TypeString, []byte("v"), nil, 4102444800000)
	b.Key(0, []byte("l"), keyspace.TypeList, nil, list, 0)
	b.Key(2, []byte("set"), keyspace.TypeSet, nil, set, 0)
	b.Key(2, []byte("z"), keyspace.TypeZSet, nil, zset, 0)
	b.Key(2, []byte("h"), keyspace.TypeHash, nil, hash, 0)
	b.Key(3, []byte("x"), keyspace.TypeStream, nil, keyspace.NewStream(), 0)
	if err := b.Close(); err != nil || b.Err() != nil {
		t.Fatal(err, b.Err())
	}
	cmds, _, err := replayed(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var pushes []int
	var rest []string
	for _, c := range cmds {
		if strings.HasPrefix(c, "RPUSH l ") {
			pushes = append(pushes, len(strings.Fields(c))-2)
			continue
		}
		rest = append(rest, c)
	}
	if !slices.Equal(pushes, []int{RewriteItemsPerCmd, RewriteItemsPerCmd, 2}) {
		t.Errorf("the list went in commands of %v elements", pushes)
	}
	want := []string{"FUNCTION LOAD #!lua name=lib\n", "SELECT 0", "SET s v", "PEXPIREAT s 4102444800000",
		"SELECT 2", "SADD set 7", "ZADD z -inf m 0.10000000000000001 n", "HMSET h f v",
		"SELECT 3", "XADD x MAXLEN 0 0-1 x y", "XSETID x 0-0 ENTRIESADDED 0 MAXDELETEDID 0-0"}
	if !slices.Equal(rest, want) {
		t.Errorf("base:\n%q\nwant\n%q", rest, want)
	}
}

// failingWriter fails every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, fmt.Errorf("disk full") }

// TestBaseWriterStopsAtTheFirstError: once a write fails, nothing more is written and the error
// stays, for the caller walking the keyspace to stop at.
func TestBaseWriterStopsAtTheFirstError(t *testing.T) {
	b := NewBaseWriter(failingWriter{})
	big := bytes.Repeat([]byte("v"), 2<<20) // past the buffer: written through at once
	b.Key(0, []byte("k"), keyspace.TypeString, big, nil, 0)
	if b.Err() == nil || b.Close() == nil {
		t.Fatalf("no error after a failed write: %v", b.Err())
	}
}
