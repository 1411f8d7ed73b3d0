package engine

import (
	"math"
	"runtime/debug"
)

// A replica's full sync loads the primary's data into fresh databases while the old ones still
// serve. A primary that sends more than this server may hold (a dataset past maxmemory, sizes
// that lie, a stream or a string that never ends) is refused once the load passes the budget
// (replication.NewBudgetReader and CheckLoaded count it): the sync fails with a log line, the
// replica keeps serving what it had and tries again later, instead of growing until the kernel
// kills it.

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
