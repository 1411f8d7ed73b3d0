package cpuset

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Allowed returns the CPUs the calling thread may run on (in a container: the cpuset the kubelet
// gave the pod), sorted.
func Allowed() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("sched_getaffinity: %w", err)
	}
	return fromSet(&set), nil
}

// ThreadAffinity returns the CPUs the OS thread tid may run on (0 = the calling thread).
func ThreadAffinity(tid int) ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(tid, &set); err != nil {
		return nil, fmt.Errorf("sched_getaffinity(%d): %w", tid, err)
	}
	return fromSet(&set), nil
}

// PinThread restricts the calling OS thread to cpus. The caller must hold its goroutine on the
// thread with runtime.LockOSThread, or the pin applies to whichever goroutine runs there next.
func PinThread(cpus []int) error {
	return PinTID(0, cpus)
}

// PinTID restricts the OS thread tid (0 = the calling thread) to cpus.
func PinTID(tid int, cpus []int) error {
	if len(cpus) == 0 {
		return nil
	}
	var set unix.CPUSet
	set.Zero()
	for _, c := range cpus {
		set.Set(c)
	}
	if err := unix.SchedSetaffinity(tid, &set); err != nil {
		return fmt.Errorf("sched_setaffinity(%s): %w", Format(cpus), err)
	}
	return nil
}

// Gettid returns the calling OS thread's id.
func Gettid() int { return unix.Gettid() }

func fromSet(set *unix.CPUSet) []int {
	var out []int
	for c := 0; c <= MaxCPU; c++ {
		if set.IsSet(c) {
			out = append(out, c)
		}
	}
	return out
}

// QuotaCores is the CPU limit the cgroup imposes (cpu.max or cfs_quota/period), rounded up, or 0
// when there is none.
func QuotaCores() int {
	if b, err := os.ReadFile("/sys/fs/cgroup/cpu.max"); err == nil {
		f := strings.Fields(string(b))
		if len(f) == 2 && f[0] != "max" {
			return ceilRatio(f[0], f[1])
		}
		return 0
	}
	q, err1 := os.ReadFile("/sys/fs/cgroup/cpu/cpu.cfs_quota_us")
	p, err2 := os.ReadFile("/sys/fs/cgroup/cpu/cpu.cfs_period_us")
	if err1 != nil || err2 != nil {
		return 0
	}
	return ceilRatio(strings.TrimSpace(string(q)), strings.TrimSpace(string(p)))
}

func ceilRatio(quota, period string) int {
	q, err1 := strconv.ParseFloat(quota, 64)
	p, err2 := strconv.ParseFloat(period, 64)
	if err1 != nil || err2 != nil || q <= 0 || p <= 0 {
		return 0
	}
	return int(math.Ceil(q / p))
}

// EffectiveCores is the number of cores the process can really use: its allowed CPUs, further
// limited by a cgroup CPU quota.
func EffectiveCores(allowed []int) int {
	n := len(allowed)
	if q := QuotaCores(); q > 0 && q < n {
		n = q
	}
	if n < 1 {
		n = 1
	}
	return n
}
