package resp

import (
	"slices"
	"testing"
)

// TestAppendCommandParsesBack: what AppendCommand encodes, ParseCommand reads back whole,
// binary and empty arguments included, appended after what the buffer held.
func TestAppendCommandParsesBack(t *testing.T) {
	argv := [][]byte{[]byte("SET"), []byte("a\r\nb"), {}}
	b := AppendCommand([]byte("x"), argv)
	if want := "x*3\r\n$3\r\nSET\r\n$4\r\na\r\nb\r\n$0\r\n\r\n"; string(b) != want {
		t.Fatalf("encoded %q, want %q", b, want)
	}
	lim := DefaultLimits
	out, n, _, err := ParseCommand(b[1:], nil, &lim)
	if err != nil || n != len(b)-1 || !slices.Equal(args(out), args(argv)) {
		t.Fatalf("parsed %q (%d of %d bytes, %v)", args(out), n, len(b)-1, err)
	}
}
