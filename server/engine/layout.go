package engine

import (
	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/cpuset"
)

// CONFIG SET io-threads and the cpulists change the thread layout live: the I/O-thread group
// (package netio) starts, drains and re-pins its threads, and the bio thread moves.

// planFor resolves io-threads and the cpulists of a candidate configuration against the CPUs
// the process may use (as found at startup: the main thread's own mask is narrower once pinned).
func (s *Server) planFor(cfg *config.Config) (cpuset.Plan, error) {
	return cpuset.BuildPlan(cpuset.Request{
		IOThreads: cfg.IOThreads, Server: cfg.ServerCPUList, Bio: cfg.BioCPUList,
		AOFRewrite: cfg.AOFRewriteCPUList, BGSave: cfg.BGSaveCPUList, Mode: cpuset.Mode(cfg.CPUListMode),
	}, s.plan.Allowed, s.plan.Cores)
}

// layoutChanged says whether a configuration change touches the thread layout.
func layoutChanged(a, b *config.Config) bool {
	return a.IOThreads != b.IOThreads || a.ServerCPUList != b.ServerCPUList || a.BioCPUList != b.BioCPUList ||
		a.AOFRewriteCPUList != b.AOFRewriteCPUList || a.BGSaveCPUList != b.BGSaveCPUList
}

// layoutArgument names the directive a failed layout change is most likely about, for the error.
func layoutArgument(a, b *config.Config) string {
	switch {
	case a.ServerCPUList != b.ServerCPUList:
		return "server_cpulist"
	case a.BioCPUList != b.BioCPUList:
		return "bio_cpulist"
	case a.AOFRewriteCPUList != b.AOFRewriteCPUList:
		return "aof_rewrite_cpulist"
	case a.BGSaveCPUList != b.BGSaveCPUList:
		return "bgsave_cpulist"
	}
	return "io-threads"
}

// applyPlan puts a new thread layout in effect: threads are created and started at once, and
// re-pinned; clients move at the next safe point of the main loop, and threads no longer needed
// stop once they are empty. On error (no thread could be created) nothing changed.
func (s *Server) applyPlan(p cpuset.Plan) error {
	old := s.plan
	s.plan = p
	if err := s.io.Resize(p.IOThreads, s.threadCPUs, p.Allowed); err != nil {
		s.plan = old
		return err
	}
	s.bio.setCPUs(p.Bio, p.Allowed)
	s.logf(logNotice, "Thread layout: io-threads %d, server CPUs %s, bio CPUs %s", p.IOThreads, cpuset.Format(p.Server), cpuset.Format(p.Bio))
	return nil
}
