package replication

import (
	"errors"
	"hash/maphash"
	"io"
	"strings"
	"testing"

	"github.com/iocache/iocache/server/keyspace"
)

// TestBudgetReader: past the budget a read fails with SyncTooLargeError; with no budget it
// reads everything.
func TestBudgetReader(t *testing.T) {
	data := strings.Repeat("x", 10000)
	_, err := io.ReadAll(NewBudgetReader(strings.NewReader(data), 4096))
	var big SyncTooLargeError
	if !errors.As(err, &big) || big.Budget != 4096 || big.Used <= 4096 {
		t.Fatalf("past the budget: %v", err)
	}
	if !strings.Contains(err.Error(), "refusing the sync and keeping the current data") {
		t.Fatalf("text: %v", err)
	}
	if got, err := io.ReadAll(NewBudgetReader(strings.NewReader(data), 0)); err != nil || len(got) != len(data) {
		t.Fatalf("no budget: %d bytes, %v", len(got), err)
	}
}

// TestCheckLoaded: databases holding more than the budget fail; no budget never does.
func TestCheckLoaded(t *testing.T) {
	db := keyspace.NewDB(maphash.MakeSeed())
	used := db.UsedMemory() // an empty database's tables count too
	if err := CheckLoaded([]*keyspace.DB{db, db}, 2*used); err != nil {
		t.Fatalf("at the budget: %v", err)
	}
	var big SyncTooLargeError
	if err := CheckLoaded([]*keyspace.DB{db, db}, 2*used-1); !errors.As(err, &big) || big.Used != 2*used {
		t.Fatalf("over the budget: %v", err)
	}
	if err := CheckLoaded([]*keyspace.DB{db}, 0); err != nil {
		t.Fatalf("no budget: %v", err)
	}
}
