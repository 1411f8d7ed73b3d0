package cpuset

import (
	"slices"
	"testing"
)

// FuzzParse: any text either is refused or reads as a sorted, duplicate-free list of CPUs in
// 0..MaxCPU that Format writes back to a list reading the same; and no input makes Parse do
// more than MaxCPU+1 CPUs' work per item (a stride or range cannot run away).
func FuzzParse(f *testing.F) {
	for _, s := range []string{"0", "0-3", "0-7:2", "1,3,5-6", " 2 , 4 ", "0-1023:1000", "3-1", "0-1024", "-1", "1:2", "0-5:0", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := Parse(s)
		if err != nil {
			return
		}
		if len(cpus) == 0 || len(cpus) > MaxCPU+1 {
			t.Fatalf("Parse(%q) = %d CPUs", s, len(cpus))
		}
		if !slices.IsSorted(cpus) || len(slices.Compact(slices.Clone(cpus))) != len(cpus) {
			t.Fatalf("Parse(%q) = %v: not sorted and unique", s, cpus)
		}
		if cpus[0] < 0 || cpus[len(cpus)-1] > MaxCPU {
			t.Fatalf("Parse(%q) = %v: out of 0..%d", s, cpus, MaxCPU)
		}
		again, err := Parse(Format(cpus))
		if err != nil || !slices.Equal(again, cpus) {
			t.Fatalf("Parse(Format(Parse(%q))) = %v, %v; want %v", s, again, err, cpus)
		}
	})
}
