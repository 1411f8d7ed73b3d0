package engine

import (
	"math"
	"math/big"
	"strings"
)

// INCRBYFLOAT and HINCRBYFLOAT add in C's long double (x86's 80-bit extended precision, a 64-bit
// mantissa) and print the sum with "%.17Lf", trailing zeros trimmed. That is why Redis answers
// 0.3 to 0.1 + 0.2, where float64 arithmetic prints 0.30000000000000004. A big.Float with 64 bits
// of mantissa, rounding to nearest even, adds exactly as the x87 unit does; Text('f', 17) prints
// exactly as glibc's printf does.

const longDoublePrec = 64

// addLongDouble adds two decimal strings the way Redis does. ok is false when the sum would be
// infinite or NaN (either operand infinite).
func addLongDouble(cur, incr []byte) (sum []byte, ok bool) {
	a, okA := parseFloat(cur)
	b, okB := parseFloat(incr)
	if !okA || !okB || math.IsInf(a, 0) || math.IsInf(b, 0) {
		return nil, false
	}
	x, y := newLongDouble(), newLongDouble()
	if _, _, err := x.Parse(strings.TrimSpace(string(cur)), 10); err != nil {
		x.SetFloat64(a)
	}
	if _, _, err := y.Parse(strings.TrimSpace(string(incr)), 10); err != nil {
		y.SetFloat64(b)
	}
	x.Add(x, y)
	if x.IsInf() {
		return nil, false
	}
	out := x.Text('f', 17)
	if strings.IndexByte(out, '.') >= 0 {
		out = strings.TrimRight(out, "0")
		out = strings.TrimSuffix(out, ".")
	}
	if out == "-0" {
		out = "0"
	}
	return []byte(out), true
}

func newLongDouble() *big.Float {
	return new(big.Float).SetPrec(longDoublePrec).SetMode(big.ToNearestEven)
}
