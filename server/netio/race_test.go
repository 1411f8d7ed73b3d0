//go:build race

package netio

// The race detector's instrumentation allocates where the plain build does not, so allocation
// counts mean nothing under it.
func init() { raceEnabled = true }
