//go:build !linux

package engine

import "time"

// mainThreadCPU needs RUSAGE_THREAD, which only Linux has; the server does not run elsewhere
// (see package netio).
func mainThreadCPU() (user, sys time.Duration) { return 0, 0 }
