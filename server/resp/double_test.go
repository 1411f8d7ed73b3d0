package resp

import "testing"

// Doubles print in the shortest form that reads back as the same value, laid out as %.17g lays
// numbers out: integral scores (timestamps, geohashes) without an exponent.
func TestAppendDoubleLayout(t *testing.T) {
	for f, want := range map[float64]string{
		0.1: "0.1", 1.5: "1.5", -2.5: "-2.5", 0: "0", 1234567.5: "1234567.5",
		1700000000: "1700000000", 3479096050673789: "3479096050673789",
		1e20: "1e+20", 1e17: "1e+17", 1e-05: "1e-05", 0.0001: "0.0001",
	} {
		if got := string(AppendDouble(nil, f)); got != want {
			t.Errorf("%v: %q, want %q", f, got, want)
		}
	}
}
