package cluster

import (
	"fmt"
	"strconv"
	"strings"
)

// Slot ranges as Redis writes them ("0-5460", "7"): in CLUSTER NODES and nodes.conf, separated by
// spaces, and in the operator's status, separated by commas.

// RangesOf are the slots for which in is true, as ascending inclusive ranges.
func RangesOf(in func(slot int) bool) [][2]int {
	var out [][2]int
	for s := range Slots {
		if !in(s) {
			continue
		}
		if k := len(out); k > 0 && out[k-1][1] == s-1 {
			out[k-1][1] = s
		} else {
			out = append(out, [2]int{s, s})
		}
	}
	return out
}

// FormatRanges writes ranges separated by sep.
func FormatRanges(rs [][2]int, sep string) string {
	var b strings.Builder
	for i, r := range rs {
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(strconv.Itoa(r[0]))
		if r[1] != r[0] {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(r[1]))
		}
	}
	return b.String()
}

// ParseRange reads one range, "a-b" or "a", within the slots.
func ParseRange(tok string) ([2]int, error) {
	lo, hi, isRange := strings.Cut(tok, "-")
	a, err1 := strconv.Atoi(lo)
	b := a
	var err2 error
	if isRange {
		b, err2 = strconv.Atoi(hi)
	}
	if err1 != nil || err2 != nil || a < 0 || b >= Slots || a > b {
		return [2]int{}, fmt.Errorf("%q is not a slot range within 0-%d", tok, Slots-1)
	}
	return [2]int{a, b}, nil
}

// ParseRanges reads ranges separated by sep; "" is none.
func ParseRanges(s, sep string) ([][2]int, error) {
	if s == "" {
		return nil, nil
	}
	var out [][2]int
	for _, tok := range strings.Split(s, sep) {
		r, err := ParseRange(tok)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
