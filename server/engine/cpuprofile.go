package engine

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
)

// cpuProfileEnv names a file for a CPU profile of the whole process, from start to stop (SHUTDOWN
// or a signal), in Go's pprof format. It exists for measurements: hack/benchcmp --ceiling splits
// the main thread's part of it into command execution and everything else. It is an environment
// variable, not a directive, so that only whoever starts the process decides where it writes,
// never a client with CONFIG SET.
const cpuProfileEnv = "IOCACHE_CPUPROFILE"

// startCPUProfile starts the profile when cpuProfileEnv is set and returns what stops it and
// writes the file.
func startCPUProfile(stderr io.Writer) (stop func()) {
	path := os.Getenv(cpuProfileEnv)
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cpuProfileEnv, err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cpuProfileEnv, err)
		_ = f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", cpuProfileEnv, err)
		}
	}
}
