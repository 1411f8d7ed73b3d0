package engine

import (
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// cpuSampler reads each server thread's CPU time from /proc once a second, for INFO threads,
// INFO cpu and /metrics: it shows how the work spread over the threads without touching the
// hot path.
type cpuSampler struct {
	lastMs  int64
	threads []threadCPU
}

type threadCPU struct {
	userSec, sysSec float64
	busyRatio       float64 // share of one CPU used over the last sample period
	lastTotal       float64
}

const clockTicks = 100 // USER_HZ on Linux

func (cs *cpuSampler) sample(s *Server) {
	if s.nowMs-cs.lastMs < 1000 {
		return
	}
	period := float64(s.nowMs-cs.lastMs) / 1000
	first := cs.lastMs == 0
	cs.lastMs = s.nowMs
	tids := s.io.TIDs()
	if len(cs.threads) != len(tids) {
		cs.threads = make([]threadCPU, len(tids))
	}
	for i, tid := range tids {
		u, sy, ok := threadTimes(tid)
		if !ok {
			continue
		}
		tc := &cs.threads[i]
		tc.userSec, tc.sysSec = u, sy
		total := u + sy
		if !first && period > 0 {
			tc.busyRatio = (total - tc.lastTotal) / period
		}
		tc.lastTotal = total
	}
}

// threadTimes returns a thread's user and system CPU seconds.
func threadTimes(tid int) (user, sys float64, ok bool) {
	if tid == 0 {
		return 0, 0, false
	}
	b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// The command name may contain spaces; fields start after the closing parenthesis.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, 0, false
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return ut / clockTicks, st / clockTicks, true
}

// processCPU returns the process's user and system CPU time.
func processCPU() (user, sys time.Duration) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}
