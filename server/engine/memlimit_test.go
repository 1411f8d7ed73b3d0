package engine

import "testing"

// The soft limit leaves room outside the heap for the runtime and the kubelet's exec probes: at
// least 32 MiB (a quarter of small limits), 5% of large ones.
func TestSoftMemoryLimitLeavesRoomOutsideTheHeap(t *testing.T) {
	const mi = 1 << 20
	for _, tc := range []struct{ limit, want int64 }{
		{32 * mi, 24 * mi},
		{128 * mi, 96 * mi},
		{256 * mi, 224 * mi},
		{512 * mi, 480 * mi},
		{1024 * mi, 1024*mi - 1024*mi/20},
		{16384 * mi, 16384*mi - 16384*mi/20},
	} {
		if got := softMemoryLimit(tc.limit); got != tc.want {
			t.Errorf("limit %d MiB: soft limit %d MiB, want %d MiB", tc.limit/mi, got/mi, tc.want/mi)
		}
	}
}
