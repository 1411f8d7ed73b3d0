package engine

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/iocache/iocache/server/config"
)

func TestInlineAndPipelines(t *testing.T) {
	for _, threads := range []int{1, 2} {
		_, addr := startServer(t, func(c *config.Config) { c.IOThreads = threads })
		r := dialRaw(t, addr)
		r.send("PING\r\nSET k \"hello world\"\r\nGET k\r\n")
		for _, want := range []string{"+PONG", "+OK", "$11", "hello world"} {
			if got := r.line(); got != want {
				t.Fatalf("io-threads %d inline: got %q, want %q", threads, got, want)
			}
		}
		// A deep pipeline arriving in one write, and replies in order.
		var b strings.Builder
		for i := 0; i < 5000; i++ {
			fmt.Fprintf(&b, "*2\r\n$4\r\nINCR\r\n$1\r\nn\r\n")
		}
		r.send(b.String())
		for i := 1; i <= 5000; i++ {
			if got := r.line(); got != fmt.Sprintf(":%d", i) {
				t.Fatalf("io-threads %d pipeline reply %d = %q", threads, i, got)
			}
		}
		// A command split across writes at every byte.
		cmd := "*3\r\n$3\r\nSET\r\n$5\r\nsplit\r\n$3\r\nyes\r\n"
		for i := 0; i < len(cmd); i++ {
			r.send(cmd[i : i+1])
		}
		if got := r.line(); got != "+OK" {
			t.Fatalf("byte-by-byte command: %q", got)
		}
	}
}

func TestProtocolErrorsCloseOnlyThatClient(t *testing.T) {
	_, addr := startServer(t, func(c *config.Config) { c.IOThreads = 2 })
	good := redisClient(t, addr, 2)
	good.Set(ctx(), "safe", "value", 0)
	cases := []struct{ send, want string }{
		{"*1\r\n+OK\r\n", "-ERR Protocol error: expected '$', got '+'"},
		{"*x\r\n", "-ERR Protocol error: invalid multibulk length"},
		{"*1\r\n$-3\r\n", "-ERR Protocol error: invalid bulk length"},
		{"SET \"unbalanced\r\n", "-ERR Protocol error: unbalanced quotes in request"},
		{"*1\r\n$600000000\r\n", "-ERR Protocol error: invalid bulk length"},
		{strings.Repeat("x", 70*1024), "-ERR Protocol error: too big inline request"},
	}
	for _, tc := range cases {
		r := dialRaw(t, addr)
		// Commands before the garbage still run and are answered first.
		r.send("PING\r\n" + tc.send)
		if got := r.line(); got != "+PONG" {
			t.Fatalf("before garbage: %q", got)
		}
		if got := r.line(); got != tc.want {
			t.Fatalf("garbage %.20q: got %q, want %q", tc.send, got, tc.want)
		}
		r.expectClosed()
	}
	if v := good.Get(ctx(), "safe").Val(); v != "value" {
		t.Fatalf("other client's data after garbage: %q", v)
	}
}

func TestLimits(t *testing.T) {
	t.Run("maxclients", func(t *testing.T) {
		_, addr := startServer(t, func(c *config.Config) { c.MaxClients = 2 })
		a, b := dialRaw(t, addr), dialRaw(t, addr)
		a.send("PING\r\n")
		b.send("PING\r\n")
		a.line()
		b.line()
		c := dialRaw(t, addr)
		if got := c.line(); got != "-ERR max number of clients reached" {
			t.Fatalf("third client: %q", got)
		}
		c.expectClosed()
	})
	t.Run("query buffer", func(t *testing.T) {
		_, addr := startServer(t, func(c *config.Config) { c.ClientQueryBufferLimit = 1 << 20 })
		r := dialRaw(t, addr)
		// A bulk announced at 4 MB is legal, but its bytes overflow the 1 MB query buffer limit.
		r.send("*2\r\n$4\r\nECHO\r\n$4194304\r\n" + strings.Repeat("a", 2<<20))
		r.expectClosed()
	})
	t.Run("output buffer", func(t *testing.T) {
		_, addr := startServer(t, func(c *config.Config) {
			c.ClientOutputBufferLimit[config.ClassNormal] = config.OutputBufferLimit{Hard: 1 << 20}
		})
		c := redisClient(t, addr, 2)
		c.Set(ctx(), "big", strings.Repeat("v", 2<<20), 0)
		r := dialRaw(t, addr)
		r.send("GET big\r\n")
		r.expectClosed()
		if n := c.StrLen(ctx(), "big").Val(); n != 2<<20 {
			t.Fatalf("value after the limit closed a reader: %d bytes", n)
		}
	})
	t.Run("large values", func(t *testing.T) {
		_, addr := startServer(t, nil)
		c := redisClient(t, addr, 2)
		val := bytes.Repeat([]byte("0123456789"), 3<<20)
		if err := c.Set(ctx(), "v", val, 0).Err(); err != nil {
			t.Fatal(err)
		}
		got, err := c.Get(ctx(), "v").Bytes()
		if err != nil || !bytes.Equal(got, val) {
			t.Fatalf("30 MB value round trip: err=%v len=%d", err, len(got))
		}
	})
}
