// Package longdouble is Redis's arithmetic on numbers in strings where C's long double decides
// the answer. INCRBYFLOAT and HINCRBYFLOAT add in long double (x86's 80-bit extended precision,
// a 64-bit mantissa) and print the sum with "%.17Lf", trailing zeros trimmed. That is why Redis
// answers 0.3 to 0.1 + 0.2, where float64 arithmetic prints 0.30000000000000004. A big.Float
// with 64 bits of mantissa, rounding to nearest even, adds exactly as the x87 unit does;
// Text('f', 17) prints exactly as glibc's printf does. GEO's coordinates are printed the same
// way, and float arguments are read as Redis's strtold-based parsing reads them. It imports the
// standard library only.
package longdouble

import (
	"math"
	"math/big"
	"strconv"
	"strings"
)

const longDoublePrec = 64

// Add adds two decimal strings the way Redis does. ok is false when the sum would be
// infinite or NaN (either operand infinite).
func Add(cur, incr []byte) (sum []byte, ok bool) {
	a, okA := Parse(cur)
	b, okB := Parse(incr)
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
	return []byte(trimmed(x.Text('f', 17))), true
}

func newLongDouble() *big.Float {
	return new(big.Float).SetPrec(longDoublePrec).SetMode(big.ToNearestEven)
}

// Format prints f as Redis's addReplyHumanLongDouble does (GEO's coordinates).
func Format(f float64) string {
	return trimmed(new(big.Float).SetFloat64(f).Text('f', 17))
}

// trimmed is a "%.17Lf" text with trailing zeros trimmed, as Redis prints it.
func trimmed(out string) string {
	if strings.IndexByte(out, '.') >= 0 {
		out = strings.TrimRight(out, "0")
		out = strings.TrimSuffix(out, ".")
	}
	if out == "-0" {
		out = "0"
	}
	return out
}

// maxChars is Redis's MAX_LONG_DOUBLE_CHARS: the longest float argument it parses (a double's
// largest value written out in full is 309 digits).
const maxChars = 5 * 1024

// Parse reads a float argument as Redis's string2d and string2ld do: no spaces, "inf" allowed,
// NaN refused, and a literal too large or too small for a double (strtod's ERANGE with
// HUGE_VAL or zero) refused.
func Parse(b []byte) (float64, bool) {
	if len(b) == 0 || len(b) >= maxChars || b[0] == ' ' || b[len(b)-1] == ' ' {
		return 0, false
	}
	switch string(b) {
	case "inf", "+inf", "Inf", "+Inf", "INF", "infinity", "+infinity":
		return math.Inf(1), true
	case "-inf", "-Inf", "-INF", "-infinity":
		return math.Inf(-1), true
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsNaN(v) || (v == 0 && nonZeroMantissa(b)) {
		return 0, false // a syntax error, an overflow to ±Inf, or an underflow to zero
	}
	return v, true
}

// nonZeroMantissa reports whether the digits before an exponent hold one other than 0.
func nonZeroMantissa(b []byte) bool {
	for _, c := range b {
		switch {
		case c == 'e' || c == 'E' || c == 'p' || c == 'P':
			return false
		case c >= '1' && c <= '9':
			return true
		}
	}
	return false
}
