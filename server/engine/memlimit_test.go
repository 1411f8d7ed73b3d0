package engine

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

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

// The limit is found where a container sees its cgroup: at the hierarchy's root, while
// /proc/self/cgroup names the cgroup's path on the host (the local node's pods, cgroup v1), as
// well as at the named path (a process on the host, cgroup v1 or v2).
func TestCgroupMemoryLimitFoundInsideContainers(t *testing.T) {
	write := func(path, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const v1 = "12:cpuset:/kubepods/pod1/c1\n9:memory:/kubepods/pod1/c1\n0::/kubepods/pod1/c1\n"
	container := t.TempDir()
	write(container+"/memory/memory.limit_in_bytes", "268435456")
	if got := cgroupMemoryLimitIn([]byte(v1), container); got != 268435456 {
		t.Errorf("v1 container: %d, want 268435456", got)
	}
	host := t.TempDir()
	write(host+"/memory/kubepods/pod1/c1/memory.limit_in_bytes", "134217728")
	write(host+"/memory/memory.limit_in_bytes", "9223372036854771712")
	if got := cgroupMemoryLimitIn([]byte(v1), host); got != 134217728 {
		t.Errorf("v1 host: %d, want 134217728", got)
	}
	const v2 = "0::/kubepods.slice/pod2\n"
	v2root := t.TempDir()
	write(v2root+"/memory.max", "67108864")
	if got := cgroupMemoryLimitIn([]byte(v2), v2root); got != 67108864 {
		t.Errorf("v2 container: %d, want 67108864", got)
	}
	write(v2root+"/kubepods.slice/pod2/memory.max", "max")
	if got := cgroupMemoryLimitIn([]byte(v2), v2root); got != 0 {
		t.Errorf("v2 without a limit: %d, want 0", got)
	}
	if got := cgroupMemoryLimitIn([]byte(v2), t.TempDir()); got != 0 {
		t.Errorf("no cgroup files: %d, want 0", got)
	}
}

// A pod resized in place gets a new cgroup limit while the server runs: the soft limit, and the
// client guard that reads it, follow it once a second; a limit that goes away lifts the soft limit.
func TestSoftLimitFollowsAResizedContainer(t *testing.T) {
	if os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOMEMLIMIT is set: the server keeps it, by design")
	}
	const mi = 1 << 20
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	s := &Server{}
	for _, step := range []struct{ limit, soft int64 }{
		{256 * mi, 224 * mi}, // first reading
		{512 * mi, 480 * mi}, // grown
		{128 * mi, 96 * mi},  // shrunk
		{0, 0},               // no limit any more
	} {
		s.followMemoryLimit(func() int64 { return step.limit })
		if s.goMemLimit != step.soft {
			t.Fatalf("cgroup limit %d MiB: goMemLimit %d MiB, want %d MiB", step.limit/mi, s.goMemLimit/mi, step.soft/mi)
		}
		want := step.soft
		if want == 0 {
			want = math.MaxInt64
		}
		if got := debug.SetMemoryLimit(-1); got != want {
			t.Fatalf("cgroup limit %d MiB: runtime soft limit %d, want %d", step.limit/mi, got, want)
		}
	}
}
