//go:build !linux

package cpuset

import "errors"

// Elsewhere than on Linux there is no sched_setaffinity or cgroup to read: the server does not
// run there (see package netio), and these say so.

var errUnsupported = errors.New("CPU affinity needs Linux (sched_setaffinity)")

func Allowed() ([]int, error)               { return nil, errUnsupported }
func ThreadAffinity(tid int) ([]int, error) { return nil, errUnsupported }
func PinThread(cpus []int) error            { return PinTID(0, cpus) }
func PinTID(tid int, cpus []int) error {
	if len(cpus) == 0 {
		return nil
	}
	return errUnsupported
}
func Gettid() int                      { return 0 }
func QuotaCores() int                  { return 0 }
func EffectiveCores(allowed []int) int { return max(len(allowed), 1) }
