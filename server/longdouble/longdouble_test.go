package longdouble

import (
	"math"
	"testing"
)

// The sums and texts Redis 7.0 answers for INCRBYFLOAT and GEOPOS.
func TestAddAndFormatAsRedis(t *testing.T) {
	for _, c := range []struct{ cur, incr, want string }{
		{"0.1", "0.2", "0.3"}, {"10.5", "0.1", "10.6"}, {"5.0e3", "2.0e2", "5200"}, {"1", "-1", "0"},
		{"-0.1", "0.1", "0"}, {"3", "1.5", "4.5"}, {"0", "1e-17", "0.00000000000000001"},
	} {
		if got, ok := Add([]byte(c.cur), []byte(c.incr)); !ok || string(got) != c.want {
			t.Errorf("%s + %s = %q %v, want %q", c.cur, c.incr, got, ok, c.want)
		}
	}
	for _, bad := range [][2]string{{"inf", "1"}, {"1", "-inf"}, {"x", "1"}, {"1", " 1"}, {"nan", "1"}} {
		if got, ok := Add([]byte(bad[0]), []byte(bad[1])); ok {
			t.Errorf("%s + %s = %q, want a refusal", bad[0], bad[1], got)
		}
	}
	for _, c := range []struct {
		f    float64
		want string
	}{{13.361389338970184, "13.36138933897018433"}, {math.Copysign(0, -1), "0"}, {2, "2"}, {0.5, "0.5"}} {
		if got := Format(c.f); got != c.want {
			t.Errorf("Format(%v) = %q, want %q", c.f, got, c.want)
		}
	}
}
