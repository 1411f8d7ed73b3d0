// Package cpuset reads and writes CPU lists in taskset syntax, finds the CPUs this process may run
// on (affinity mask and cgroup CPU quota), splits them between server and background work, and pins
// the calling OS thread to a set with sched_setaffinity.
package cpuset

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// MaxCPU bounds CPU ids in lists; Linux's default CPU mask size is 1024.
const MaxCPU = 1023

// Parse reads a taskset-style list: comma-separated items, each a CPU ("3"), a range ("0-7") or a
// range with a stride ("0-7:2" = 0,2,4,6). The result is sorted and without duplicates.
func Parse(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("empty cpu list")
	}
	seen := map[int]bool{}
	for _, item := range strings.Split(s, ",") {
		rangePart, stridePart, hasStride := strings.Cut(item, ":")
		lo, hi, isRange := strings.Cut(rangePart, "-")
		a, err := cpuID(lo)
		if err != nil {
			return nil, fmt.Errorf("invalid cpu list %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = cpuID(hi); err != nil {
				return nil, fmt.Errorf("invalid cpu list %q: %w", s, err)
			}
		}
		if b < a {
			return nil, fmt.Errorf("invalid cpu list %q: range %d-%d runs backwards", s, a, b)
		}
		stride := 1
		if hasStride {
			if !isRange {
				return nil, fmt.Errorf("invalid cpu list %q: a stride needs a range", s)
			}
			if stride, err = strconv.Atoi(stridePart); err != nil || stride < 1 {
				return nil, fmt.Errorf("invalid cpu list %q: bad stride %q", s, stridePart)
			}
		}
		for c := a; c <= b; c += stride {
			seen[c] = true
		}
	}
	out := make([]int, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	sort.Ints(out)
	return out, nil
}

func cpuID(s string) (int, error) {
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q is not a CPU number", s)
	}
	if v > MaxCPU {
		return 0, fmt.Errorf("CPU %d is above the maximum %d", v, MaxCPU)
	}
	return v, nil
}

// Format writes cpus (sorted or not) as a compact list: "0-3,8,10-11".
func Format(cpus []int) string {
	if len(cpus) == 0 {
		return ""
	}
	c := append([]int(nil), cpus...)
	sort.Ints(c)
	var b strings.Builder
	for i := 0; i < len(c); {
		j := i
		for j+1 < len(c) && c[j+1] == c[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(c[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(c[j]))
		}
		i = j + 1
	}
	return b.String()
}

// Overlap returns the CPUs present in both lists.
func Overlap(a, b []int) []int {
	in := map[int]bool{}
	for _, c := range a {
		in[c] = true
	}
	var out []int
	for _, c := range b {
		if in[c] {
			out = append(out, c)
		}
	}
	return out
}
