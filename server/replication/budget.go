package replication

import (
	"fmt"
	"io"

	"github.com/iocache/iocache/server/keyspace"
)

// A replica's full sync loads the primary's data into fresh databases while the old ones still
// serve. A primary that sends more than the replica may hold (a dataset past maxmemory, sizes
// that lie, a stream or a string that never ends) is refused once the load passes a budget,
// instead of growing until the kernel kills the replica. The engine decides the budget
// (maxmemory, else its memory limit) and what a refusal does: the replica keeps its data.

// SyncTooLargeError stops a full sync past its budget: Used bytes were loaded or read.
type SyncTooLargeError struct{ Used, Budget int64 }

func (e SyncTooLargeError) Error() string {
	return fmt.Sprintf("the master's data needs more than this server may hold (%d bytes loaded or read, budget %d: maxmemory or the memory limit); refusing the sync and keeping the current data", e.Used, e.Budget)
}

// budgetReader counts the payload's bytes.
type budgetReader struct {
	r      io.Reader
	read   int64
	budget int64
}

// NewBudgetReader reads the payload from r and fails with SyncTooLargeError once it has read
// more than budget bytes (0: no bound): one value (a string that never ends) costs memory as it
// arrives, before the load has a key to account.
func NewBudgetReader(r io.Reader, budget int64) io.Reader {
	return &budgetReader{r: r, budget: budget}
}

func (b *budgetReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.read += int64(n)
	if b.budget > 0 && b.read > b.budget {
		return n, SyncTooLargeError{b.read, b.budget}
	}
	return n, err
}

// CheckLoaded fails with SyncTooLargeError once the databases being loaded hold more than
// budget bytes (0: no bound).
func CheckLoaded(dbs []*keyspace.DB, budget int64) error {
	if budget <= 0 {
		return nil
	}
	var used int64
	for _, db := range dbs {
		used += db.UsedMemory()
	}
	if used > budget {
		return SyncTooLargeError{used, budget}
	}
	return nil
}
