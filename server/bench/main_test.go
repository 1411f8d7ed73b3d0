package bench

import (
	"bytes"
	"strings"
	"testing"
)

func TestHelpAndUsageErrors(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main([]string{"--help"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "Usage") ||
		!strings.Contains(out.String(), "-pipeline") {
		t.Errorf("--help: exit %d\n%s", code, out.String())
	}
	out.Reset()
	if code := Main([]string{"--clients", "x"}, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), "Usage") {
		t.Errorf("bad flag: exit %d\n%s", code, errb.String())
	}
}
