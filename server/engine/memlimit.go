package engine

import (
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// The Go runtime does not know the container's memory limit; left alone, its garbage collector
// lets the heap grow to twice the live data before collecting, and a cache near maxmemory would
// be OOM-killed. At start the server therefore reads its cgroup's memory limit and gives the
// runtime a soft limit below it (unless GOMEMLIMIT says otherwise): the collector works harder as
// the heap nears the limit instead of letting garbage push the process over it. The keyspace is
// mostly pointer-free pages, so a collection costs little even when frequent.
//
// The soft limit covers the Go heap only. What it leaves must hold the rest of the process
// (goroutine stacks, the runtime's own metadata) and everything else the container runs: the
// kubelet's exec probes start a second iocache-server of about 10 MB. 5% of a 256 MiB pod is 13
// MB, and such a pod, filled and read back, was OOM-killed; so at least 32 MiB stay outside the
// heap (a quarter of the limit, for pods under 128 MiB).

// softMemoryLimit is the runtime's soft limit for a container memory limit lim.
func softMemoryLimit(lim int64) int64 {
	return lim - max(lim/20, min(32<<20, lim/4))
}

// cgroupMemoryLimit returns the memory limit of the process's cgroup (v2 memory.max or v1
// memory.limit_in_bytes), or 0 when there is none.
func cgroupMemoryLimit() int64 {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0
	}
	return cgroupMemoryLimitIn(b, "/sys/fs/cgroup")
}

// cgroupMemoryLimitIn reads the limit of the cgroup that procCgroup (a /proc/PID/cgroup file)
// names, in the cgroup filesystem mounted at root.
func cgroupMemoryLimitIn(procCgroup []byte, root string) int64 {
	var err error
	for _, line := range strings.Split(strings.TrimSpace(string(procCgroup)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		// Inside a container the cgroup's own directory is usually mounted at the hierarchy's root
		// while /proc/self/cgroup still names its path on the host (cgroup v1, and v2 without a
		// cgroup namespace): try the named path, then the root. Without the second, a pod on a
		// cgroup v1 node got no soft limit at all and was OOM-killed near maxmemory.
		var files []string
		switch {
		case parts[0] == "0" && parts[1] == "":
			files = []string{root + parts[2] + "/memory.max", root + "/memory.max"}
		case strings.Contains(","+parts[1]+",", ",memory,"):
			files = []string{root + "/memory" + parts[2] + "/memory.limit_in_bytes", root + "/memory/memory.limit_in_bytes"}
		default:
			continue
		}
		var v []byte
		for _, f := range files {
			if v, err = os.ReadFile(f); err == nil {
				break
			}
		}
		if err != nil {
			continue
		}
		s := strings.TrimSpace(string(v))
		if s == "max" {
			return 0
		}
		n, err := strconv.ParseInt(s, 10, 64)
		// cgroup v1 reports "no limit" as a huge page-aligned number.
		if err != nil || n <= 0 || n >= 1<<62 {
			return 0
		}
		return n
	}
	return 0
}

// applyMemoryLimit sets the runtime's soft memory limit from the cgroup and returns it (0 when
// none was set).
func applyMemoryLimit() int64 {
	if os.Getenv("GOMEMLIMIT") != "" {
		return debug.SetMemoryLimit(-1)
	}
	return softLimitFor(cgroupMemoryLimit())
}

// softLimitFor gives the runtime the soft limit for a container limit lim and returns it; with no
// limit (0) it leaves the runtime's alone.
func softLimitFor(lim int64) int64 {
	if lim == 0 {
		return 0
	}
	soft := softMemoryLimit(lim)
	debug.SetMemoryLimit(soft)
	return soft
}

// followMemoryLimit runs once a second from cron. A pod's memory can be resized in place (the
// kubelet rewrites the cgroup's limit while the server runs, and the operator does so to keep a
// cache's data through a memory change), so the soft limit and the client guard that reads it
// follow the cgroup instead of keeping the figure read at start: a smaller pod must not let the
// heap grow to the old limit, a larger one must not collect and cut clients as if it were small.
// GOMEMLIMIT, when set, is the operator's or the user's word and stays.
func (s *Server) followMemoryLimit(read func() int64) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	lim := read()
	if lim == s.cgroupLimit {
		return
	}
	before := s.goMemLimit
	s.cgroupLimit = lim
	if lim == 0 {
		debug.SetMemoryLimit(math.MaxInt64)
		s.goMemLimit = 0
	} else {
		s.goMemLimit = softLimitFor(lim)
	}
	s.logf(logNotice, "Memory limit of the container changed to %d bytes: Go soft memory limit %d -> %d", lim, before, s.goMemLimit)
}
