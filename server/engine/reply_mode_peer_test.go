package engine

import (
	"testing"
	"time"
)

// Under CLIENT REPLY OFF or SKIP, Redis 7.0 still sends (un)subscribe confirmations and
// published messages (they are pushes) but drops every other reply, errors included. Same
// session on Debian's redis-server and on iocache, RESP2 and RESP3, raw bytes compared.
func TestReplyOffKeepsPushesLikeRedis(t *testing.T) {
	_, iocacheAddr := startServer(t, nil)
	redisAddr := startRedisPeer(t)
	for _, proto := range []string{"2", "3"} {
		session := func(addr string) string {
			sub, pub := dialPeer(t, addr), dialPeer(t, addr)
			sub.do("HELLO", proto)
			sendRaw(t, sub, "CLIENT", "REPLY", "OFF")
			sendRaw(t, sub, "GET", "k")
			sendRaw(t, sub, "SUBSCRIBE", "ch")
			sendRaw(t, sub, "PSUBSCRIBE", "c*")
			time.Sleep(50 * time.Millisecond)
			pub.do("PUBLISH", "ch", "hello")
			sendRaw(t, sub, "UNSUBSCRIBE", "ch")
			sendRaw(t, sub, "PUNSUBSCRIBE")
			sendRaw(t, sub, "CLIENT", "REPLY", "ON")
			sendRaw(t, sub, "PING", "after")
			var out string
			for i := 0; i < 7; i++ {
				r := replyWithin(sub, 500*time.Millisecond)
				out += r
				if r == "still blocked" {
					break
				}
			}
			return out
		}
		want, got := session(redisAddr), session(iocacheAddr)
		t.Logf("RESP%s: %q", proto, want)
		if want != got {
			t.Errorf("RESP%s:\n redis:   %q\n iocache: %q", proto, want, got)
		}
	}
}
