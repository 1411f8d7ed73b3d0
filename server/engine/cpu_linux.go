package engine

import (
	"time"

	"golang.org/x/sys/unix"
)

// mainThreadCPU returns the calling thread's CPU time; INFO runs on the main thread.
func mainThreadCPU() (user, sys time.Duration) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}
