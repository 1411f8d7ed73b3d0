package resp

import (
	"bytes"
	"fmt"
	"testing"
)

// FuzzSplitArgs: any line splits or is refused without panicking, and the arguments it yields,
// written back with sdscatrepr-style quoting, split into the same arguments again (config files
// and inline commands both rely on this port of sdssplitargs).
func FuzzSplitArgs(f *testing.F) {
	for _, s := range []string{`set k v`, `"a b" 'c d'`, `"\x41\n" 'it\'s'`, `"unterminated`, `"x"y`, "\t\r\n", `''`, `"\xzz"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		args, ok := SplitArgs(bytes.Clone(line), nil)
		if !ok {
			return
		}
		var quoted []byte
		for _, a := range args {
			quoted = append(quoted, ' ')
			quoted = appendQuoted(quoted, a)
		}
		again, ok := SplitArgs(quoted, nil)
		if !ok || len(again) != len(args) {
			t.Fatalf("SplitArgs(%q) = %q, but its quoted form %q splits to %q (ok=%v)", line, args, quoted, again, ok)
		}
		for i := range args {
			if !bytes.Equal(args[i], again[i]) {
				t.Fatalf("SplitArgs(%q) arg %d = %q, round trip gives %q", line, i, args[i], again[i])
			}
		}
	})
}

// appendQuoted writes a as a double-quoted argument with \xHH escapes, as Redis's sdscatrepr.
func appendQuoted(b, a []byte) []byte {
	b = append(b, '"')
	for _, c := range a {
		switch {
		case c == '\\' || c == '"':
			b = append(b, '\\', c)
		case c >= 0x20 && c < 0x7f:
			b = append(b, c)
		default:
			b = fmt.Appendf(b, "\\x%02x", c)
		}
	}
	return append(b, '"')
}
