package engine

import (
	"testing"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/resp"
)

// BenchmarkHotPath measures parse → execute → reply for single commands on the main thread,
// without sockets: the work every request costs besides its two system calls. It must report
// 0 allocs/op.
func BenchmarkHotPath(b *testing.B) {
	cfg := config.New()
	cfg.Save = ""
	cfg.Port = 0
	cfg.Bind = []string{"127.0.0.1"}
	cfg.LogLevel = "warning"
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.closeListeners)
	for _, tc := range []struct{ name, req string }{
		{"GET", "*2\r\n$3\r\nGET\r\n$16\r\nkey:000000000042\r\n"},
		{"SET", "*3\r\n$3\r\nSET\r\n$16\r\nkey:000000000042\r\n$3\r\nxxx\r\n"},
		{"INCR", "*2\r\n$4\r\nINCR\r\n$7\r\ncounter\r\n"},
		{"PING_INLINE", "PING\r\n"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c := newClient(1, -1, 0)
			c.thread = s.threads[0]
			c.authed = true
			c.w.Buf = make([]byte, 0, 1024)
			lim := resp.DefaultLimits
			req := []byte(tc.req)
			// Create the key first so GET hits and SET overwrites in place.
			c.argv, _, _, _ = resp.ParseCommand([]byte("*3\r\n$3\r\nSET\r\n$16\r\nkey:000000000042\r\n$3\r\nxxx\r\n"), c.argv[:0], &lim)
			c.cmdEnds = append(c.cmdEnds[:0], len(c.argv))
			s.process(c)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c.qbuf = append(c.qbuf[:0], req...)
				c.argv, _, _, _ = resp.ParseCommand(c.qbuf, c.argv[:0], &lim)
				c.cmdEnds = append(c.cmdEnds[:0], len(c.argv))
				s.process(c)
				c.w.Buf = c.w.Buf[:0]
			}
		})
	}
}
