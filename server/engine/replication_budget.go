package engine

import (
	"fmt"
	"io"
	"math"
	"runtime/debug"

	"github.com/iocache/iocache/server/keyspace"
)

// A replica's full sync loads the primary's data into fresh databases while the old ones still
// serve. A primary that sends more than this server may hold (a dataset past maxmemory, sizes
// that lie, a stream or a string that never ends) is refused once the load passes the budget:
// the sync fails with a log line, the replica keeps serving what it had and tries again later,
// instead of growing until the kernel kills it.

// syncBudget is the most a full sync may load: maxmemory, else the Go soft memory limit the
// server derived from its cgroup (memlimit.go), else no bound.
func (s *Server) syncBudget() int64 {
	if s.cfg.MaxMemory > 0 {
		return s.cfg.MaxMemory
	}
	if lim := debug.SetMemoryLimit(-1); lim < math.MaxInt64 {
		return lim
	}
	return 0
}

// errSyncTooLarge stops a load past its budget.
type errSyncTooLarge struct{ what, budget int64 }

func (e errSyncTooLarge) Error() string {
	return fmt.Sprintf("the master's data needs more than this server may hold (%d bytes loaded or read, budget %d: maxmemory or the memory limit); refusing the sync and keeping the current data", e.what, e.budget)
}

// budgetReader counts the payload's bytes: one value (a string that never ends) costs memory as
// it arrives, before the load has a key to account.
type budgetReader struct {
	r      io.Reader
	read   int64
	budget int64
}

func (b *budgetReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.read += int64(n)
	if b.budget > 0 && b.read > b.budget {
		return n, errSyncTooLarge{b.read, b.budget}
	}
	return n, err
}

// checkLoaded fails once the databases being loaded hold more than the budget.
func checkLoaded(dbs []*keyspace.DB, budget int64) error {
	if budget <= 0 {
		return nil
	}
	var used int64
	for _, db := range dbs {
		used += db.UsedMemory()
	}
	if used > budget {
		return errSyncTooLarge{used, budget}
	}
	return nil
}
