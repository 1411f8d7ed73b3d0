package bench

import (
	"net"
	"strings"
	"testing"
)

func TestParseReply(t *testing.T) {
	cases := []struct {
		in   string
		n    int
		kind int
		bad  bool
	}{
		{"+OK\r\n", 5, replyValue, false},
		{":42\r\n", 5, replyValue, false},
		{"-ERR bad\r\n", 10, replyError, false},
		{"$3\r\nabc\r\n", 9, replyValue, false},
		{"$0\r\n\r\n", 6, replyValue, false},
		{"$-1\r\n", 5, replyNil, false},
		{"*-1\r\n", 5, replyNil, false},
		{"*2\r\n$1\r\na\r\n:1\r\n", 15, replyValue, false},
		{"*1\r\n*1\r\n+x\r\n", 12, replyValue, false},
		{"+OK\r\n+NEXT\r\n", 5, replyValue, false}, // only the first reply
		// incomplete: need more bytes
		{"", 0, 0, false},
		{"+OK\r", 0, 0, false},
		{"$3\r\nab", 0, 0, false},
		{"$3\r\nabc\r", 0, 0, false},
		{"*2\r\n$1\r\na\r\n", 0, 0, false},
		// broken
		{"?\r\n", 0, 0, true},
		{"$x\r\n", 0, 0, true},
		{"+OK\n", 0, 0, true},
		{strings.Repeat("*1\r\n", maxNesting+1) + "+x\r\n", 0, 0, true},
	}
	for _, c := range cases {
		n, kind, err := parseReply([]byte(c.in))
		if (err != nil) != c.bad || n != c.n || (n > 0 && kind != c.kind) {
			t.Errorf("parseReply(%q) = %d, %d, %v; want %d, %d, bad=%v", c.in, n, kind, err, c.n, c.kind, c.bad)
		}
	}
}

func TestEncodeCommand(t *testing.T) {
	if got := string(encodeCommand("SET", "k", "")); got != "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n" {
		t.Errorf("got %q", got)
	}
}

// TestReplyReaderSplitsAndGrows feeds replies in tiny pieces and a value larger than the buffer.
func TestReplyReaderSplitsAndGrows(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	big := strings.Repeat("v", 100)
	stream := "+OK\r\n$100\r\n" + big + "\r\n-ERR x\r\n$-1\r\n"
	go func() {
		for i := 0; i < len(stream); i += 3 {
			_, _ = b.Write([]byte(stream[i:min(i+3, len(stream))]))
		}
	}()
	rd := newReplyReader(16)
	want := []int{replyValue, replyValue, replyError, replyNil}
	for i, w := range want {
		kind, p, err := rd.next(a)
		if err != nil || kind != w {
			t.Fatalf("reply %d: kind %d err %v, want %d", i, kind, err, w)
		}
		if i == 1 && string(p) != "$100\r\n"+big+"\r\n" {
			t.Errorf("big reply %q", p)
		}
		if i == 2 && errorText(p) != "ERR x" {
			t.Errorf("error text %q", errorText(p))
		}
	}
}
