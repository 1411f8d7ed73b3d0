package engine

import (
	"context"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/iocache/iocache/server/config"
)

// readUntil reads whole replies until one equals last, and returns them all.
func (p *peerConn) readUntil(last string) string {
	p.t.Helper()
	_ = p.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var all strings.Builder
	for {
		var one strings.Builder
		if err := readRawReply(p.br, &one); err != nil {
			p.t.Fatalf("reading: %v (so far %q)", err, all.String())
		}
		all.WriteString(one.String())
		if one.String() == last {
			return all.String()
		}
	}
}

// send writes a command without reading its reply.
func (p *peerConn) send(args ...string) {
	p.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(p.c, b.String()); err != nil {
		p.t.Fatal(err)
	}
}

// trackingTranscript drives a tracking client and a writer through default, NOLOOP, BCAST and
// OPTIN modes, transactions and FLUSHALL, and returns every byte the tracking client received.
func trackingTranscript(t *testing.T, addr string) string {
	reader, writer := dialPeer(t, addr), dialPeer(t, addr)
	reader.do("HELLO", "3") // server name and version differ: not part of the transcript
	var out strings.Builder
	step := func(args ...string) { out.WriteString(reader.do(args...)) }
	sync := func() { reader.send("PING"); out.WriteString(reader.readUntil("+PONG\r\n")) }
	for _, bad := range [][]string{
		{"CLIENT", "TRACKING", "ON", "PREFIX", "x"}, {"CLIENT", "TRACKING", "ON", "OPTIN", "OPTOUT"},
		{"CLIENT", "TRACKING", "ON", "BCAST", "OPTIN"}, {"CLIENT", "TRACKING", "MAYBE"}, {"CLIENT", "TRACKING", "ON", "FOO"},
		{"CLIENT", "TRACKING", "ON", "REDIRECT", "x"}, {"CLIENT", "CACHING", "YES"}, {"CLIENT", "GETREDIR"}, {"CLIENT", "TRACKINGINFO"},
	} {
		step(bad...)
	}
	// Default mode: a key read is invalidated once, by anyone's write, our own included.
	step("CLIENT", "TRACKING", "ON")
	step("CLIENT", "TRACKINGINFO")
	step("CLIENT", "GETREDIR")
	step("MGET", "a", "b")
	writer.do("SET", "a", "1")
	writer.do("SET", "a", "2") // no second message: a was not read again
	sync()
	step("GET", "b")
	step("SET", "b", "1")
	sync()
	step("CLIENT", "CACHING", "YES")
	// NOLOOP: our own writes are not reported.
	step("CLIENT", "TRACKING", "ON", "NOLOOP")
	step("GET", "c")
	step("SET", "c", "1")
	writer.do("DEL", "c")
	sync()
	// BCAST with prefixes: every change under them, read or not.
	step("CLIENT", "TRACKING", "OFF")
	step("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "user:", "PREFIX", "user")
	step("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "user:", "PREFIX", "job:")
	step("CLIENT", "TRACKINGINFO")
	writer.do("SET", "user:1", "x")
	writer.do("SET", "other", "y")
	writer.do("LPUSH", "job:q", "1")
	sync()
	// OPTIN: only reads after CLIENT CACHING YES (for one command, or one transaction).
	step("CLIENT", "TRACKING", "OFF")
	step("CLIENT", "TRACKING", "ON", "OPTIN")
	step("CLIENT", "CACHING", "NO")
	step("GET", "d")
	step("CLIENT", "CACHING", "YES")
	step("GET", "e")
	step("GET", "f")
	step("CLIENT", "CACHING", "YES")
	step("MULTI")
	step("GET", "g")
	step("EXEC")
	writer.do("MSET", "d", "1", "e", "1", "f", "1", "g", "1")
	sync()
	// Expiry and FLUSHALL.
	step("CLIENT", "CACHING", "YES")
	step("GET", "h")
	writer.do("SET", "h", "1", "PX", "100")
	step("CLIENT", "CACHING", "YES")
	step("GET", "h")
	time.Sleep(150 * time.Millisecond)
	writer.do("GET", "h")
	sync()
	writer.do("FLUSHALL")
	sync()
	step("RESET")
	step("CLIENT", "TRACKINGINFO")
	return out.String()
}

// The tracking client sees byte for byte what redis-server sends it.
func TestClientTrackingMatchesRedis(t *testing.T) {
	_, addr := startServer(t, func(c *config.Config) { c.IOThreads = 2 })
	want, got := trackingTranscript(t, startRedisPeer(t)), trackingTranscript(t, addr)
	if want != got {
		t.Fatalf("transcripts differ:\n redis:   %q\n iocache: %q", want, got)
	}
}

// rueidis, with its defaults, turns client-side caching on at connect: cached reads are served
// locally until another client's write invalidates them.
func TestRueidisClientSideCaching(t *testing.T) {
	for _, threads := range []int{1, 2} {
		_, addr := startServer(t, func(c *config.Config) { c.IOThreads = threads })
		cached, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableRetry: true})
		if err != nil {
			t.Fatalf("io-threads %d: rueidis connect: %v", threads, err)
		}
		defer cached.Close()
		writer, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
		if err != nil {
			t.Fatal(err)
		}
		defer writer.Close()
		ctx := context.Background()
		if err := writer.Do(ctx, writer.B().Set().Key("k").Value("v1").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		get := func() (string, bool) {
			t.Helper()
			r := cached.DoCache(ctx, cached.B().Get().Key("k").Cache(), time.Minute)
			v, err := r.ToString()
			if err != nil {
				t.Fatalf("DoCache GET: %v", err)
			}
			return v, r.IsCacheHit()
		}
		if v, hit := get(); v != "v1" || hit {
			t.Fatalf("io-threads %d: first read %q hit=%v, want v1 from the server", threads, v, hit)
		}
		if v, hit := get(); v != "v1" || !hit {
			t.Fatalf("io-threads %d: second read %q hit=%v, want v1 from the local cache", threads, v, hit)
		}
		if err := writer.Do(ctx, writer.B().Set().Key("k").Value("v2").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(3 * time.Second)
		for {
			v, hit := get()
			if v == "v2" && !hit {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("io-threads %d: after another client's SET, reads still return %q (hit=%v)", threads, v, hit)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// REDIRECT sends a RESP2 client's invalidations to another connection subscribed to
// __redis__:invalidate, as pub/sub messages; that connection sees what redis-server sends it.
func TestClientTrackingRedirectMatchesRedis(t *testing.T) {
	transcript := func(addr string) string {
		sub, tracked, writer := dialPeer(t, addr), dialPeer(t, addr), dialPeer(t, addr)
		id := strings.TrimSpace(strings.TrimPrefix(sub.do("CLIENT", "ID"), ":"))
		out := sub.do("SUBSCRIBE", "__redis__:invalidate")
		out += tracked.do("CLIENT", "TRACKING", "ON", "REDIRECT", id)
		out += tracked.do("CLIENT", "GETREDIR")[:1] // an ID: only its type compares
		tracked.do("GET", "k")
		writer.do("SET", "k", "1")
		writer.do("FLUSHALL")
		sub.send("PING")
		return out + sub.readUntil("*2\r\n$4\r\npong\r\n$0\r\n\r\n")
	}
	_, addr := startServer(t, nil)
	if want, got := transcript(startRedisPeer(t)), transcript(addr); want != got {
		t.Fatalf("transcripts differ:\n redis:   %q\n iocache: %q", want, got)
	}
}

// A RESP3 client whose redirect target has gone is sent tracking-redir-broken in place of each
// invalidation, as Redis sends it (Redis 7.0's unit/tracking waits for it, and without it went on
// with the dead client's ID and aborted the rest of the file). A RESP2 client is sent nothing.
func TestTrackingRedirBrokenMatchesRedis(t *testing.T) {
	transcript := func(addr string) string {
		var out strings.Builder
		for _, proto := range []string{"3", "2"} {
			target, tracked, writer := dialPeer(t, addr), dialPeer(t, addr), dialPeer(t, addr)
			tracked.do("HELLO", proto)
			id := strings.TrimSpace(strings.TrimPrefix(target.do("CLIENT", "ID"), ":"))
			out.WriteString(tracked.do("CLIENT", "TRACKING", "ON", "REDIRECT", id))
			writer.do("SET", "k", "1")
			out.WriteString(tracked.do("GET", "k"))
			out.WriteString(target.do("QUIT"))
			for i := 0; i < 100 && !strings.Contains(tracked.do("CLIENT", "TRACKINGINFO"), "broken_redirect"); i++ {
				time.Sleep(10 * time.Millisecond) // the QUIT is seen when the connection closes
			}
			writer.do("SET", "k", "2")
			tracked.send("PING")
			out.WriteString(strings.ReplaceAll(tracked.readUntil("+PONG\r\n"), ":"+id+"\r\n", ":ID\r\n"))
			out.WriteString(tracked.do("CLIENT", "TRACKING", "ON", "REDIRECT", id))
		}
		return out.String()
	}
	_, addr := startServer(t, nil)
	if want, got := transcript(startRedisPeer(t)), transcript(addr); want != got {
		t.Fatalf("transcripts differ:\n redis:   %q\n iocache: %q", want, got)
	}
}

// tracking-table-max-keys bounds the keys remembered for tracking clients, as in Redis: past it,
// a remembered key is invalidated (its clients are told to drop it) and forgotten.
func TestTrackingTableMaxKeys(t *testing.T) {
	_, addr := startServer(t, nil)
	evicted := regexp.MustCompile(`>2\r\n\$10\r\ninvalidate\r\n\*1\r\n\$1\r\n[ab]\r\n`)
	for name, a := range map[string]string{"redis": startRedisPeer(t), "iocache": addr} {
		p := dialPeer(t, a)
		p.do("HELLO", "3")
		p.do("CONFIG", "SET", "tracking-table-max-keys", "1")
		p.do("CLIENT", "TRACKING", "ON")
		p.do("GET", "a")
		p.send("GET", "b")
		p.send("PING")
		if got := p.readUntil("+PONG\r\n"); len(evicted.FindAllString(got, -1)) != 1 {
			t.Errorf("%s: %q, want one invalidation of a or b", name, got)
		}
	}
}

// BCAST clients get the keys a command changed in one message per prefix, as Redis batches them
// before it sleeps; a NOLOOP client does not get the keys it changed itself.
func TestTrackingBCASTBatchesAsRedis(t *testing.T) {
	_, io := startServer(t, nil)
	transcript := func(addr string) string {
		reader, writer := dialPeer(t, addr), dialPeer(t, addr)
		reader.do("HELLO", "3")
		reader.do("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "a:", "PREFIX", "b:", "NOLOOP")
		writer.do("MSET", "a:1", "1", "a:2", "2", "b:1", "3", "c:1", "4")
		writer.do("MULTI")
		writer.do("INCR", "a:1")
		writer.do("INCR", "a:1")
		writer.do("INCR", "b:2")
		writer.do("EXEC")
		reader.do("SET", "a:own", "x")
		writer.do("SET", "b:3", "x")
		return reader.readUntil(">2\r\n$10\r\ninvalidate\r\n*1\r\n$3\r\nb:3\r\n") + reader.do("PING")
	}
	want, got := transcript(startRedisPeer(t)), transcript(io)
	if want != got {
		t.Fatalf("BCAST invalidations:\n redis:   %q\n iocache: %q", want, got)
	}
}

// A write inside a script counts as its caller's for NOLOOP, and an invalidation for the caller
// follows the script's reply, as in Redis (unit/tracking).
func TestTrackingScriptWritesAreTheCallersAsRedis(t *testing.T) {
	_, io := startServer(t, nil)
	transcript := func(addr string) string {
		var out []string
		for _, mode := range [][]string{{"NOLOOP"}, {}} {
			p := dialPeer(t, addr)
			p.do("HELLO", "3")
			p.do(append([]string{"CLIENT", "TRACKING", "on"}, mode...)...)
			p.do("SET", "key1", "1")
			p.do("GET", "key1")
			out = append(out, p.do("EVAL", "return redis.call('set', 'key1', '2')", "1", "key1"))
			out = append(out, p.do("GET", "key1"), p.do("PING"))
		}
		return strings.Join(out, "|")
	}
	if want, got := transcript(startRedisPeer(t)), transcript(io); want != got {
		t.Fatalf("replies:\n redis:   %q\n iocache: %q", want, got)
	}
}

// A script that runs a read-only command counts as its caller reading the keys it declared, as
// in Redis (unit/tracking); one that only writes tracks nothing.
func TestTrackingScriptsTrackDeclaredKeysAsRedis(t *testing.T) {
	_, io := startServer(t, nil)
	transcript := func(addr string) string {
		r, w := dialPeer(t, addr), dialPeer(t, addr)
		r.do("HELLO", "3")
		r.do("CLIENT", "TRACKING", "on")
		w.do("MSET", "key2{t}", "1", "key1{t}", "1")
		r.do("EVAL", "redis.call('set', 'key3{t}', 'bar')", "2", "key1{t}", "key2{t}")
		w.do("MSET", "key2{t}", "2", "key1{t}", "2")
		r.do("EVAL", "redis.call('get', 'key3{t}')", "2", "key1{t}", "key2{t}")
		w.do("MSET", "key2{t}", "2", "key1{t}", "2")
		out := r.readUntil(">2\r\n$10\r\ninvalidate\r\n*1\r\n$7\r\nkey1{t}\r\n")
		r.do("EVAL_RO", "redis.call('ping')", "2", "key1{t}", "key2{t}")
		w.do("MSET", "key2{t}", "2", "key1{t}", "2")
		r.do("EVAL_RO", "redis.call('get', 'key1{t}')", "2", "key1{t}", "key2{t}")
		w.do("MSET", "key2{t}", "3", "key1{t}", "3")
		return out + r.readUntil(">2\r\n$10\r\ninvalidate\r\n*1\r\n$7\r\nkey1{t}\r\n") + r.do("PING")
	}
	if want, got := transcript(startRedisPeer(t)), transcript(io); want != got {
		t.Fatalf("pushes:\n redis:   %q\n iocache: %q", want, got)
	}
}

// A command that finds used memory over maxmemory evicts first, whatever the command, as Redis
// does; a RESP3 client tracking an evicted key hears of it before the reply of the read that
// caused the eviction (unit/tracking "Tracking invalidation message of eviction keys should be
// before response": iocache evicted only before commands that may be refused for OOM).
func TestEvictionBeforeAReadInvalidatesFirstAsRedis(t *testing.T) {
	transcript := func(addr string) string {
		p := dialPeer(t, addr)
		p.do("HELLO", "3")
		p.do("CLIENT", "TRACKING", "ON")
		used, _ := strconv.ParseInt(regexpFind(`used_memory:(\d+)`, p.do("INFO", "memory")), 10, 64)
		var out strings.Builder
		out.WriteString(p.do("CONFIG", "SET", "maxmemory", strconv.FormatInt(used+100*1024, 10)))
		out.WriteString(p.do("CONFIG", "SET", "maxmemory-policy", "volatile-random"))
		out.WriteString(p.do("SETEX", "volatile-key", "10000", "x"))
		out.WriteString(p.do("GET", "volatile-key"))
		out.WriteString(p.do("SETBIT", "big-key", "1600000", "0")) // 200 KB: past maxmemory
		p.send("GETBIT", "big-key", "0")
		out.WriteString(p.readUntil(":0\r\n"))
		out.WriteString(p.do("EXISTS", "volatile-key"))
		out.WriteString(p.do("CONFIG", "SET", "maxmemory", "0"))
		return out.String()
	}
	_, addr := startServer(t, nil)
	if want, got := transcript(startRedisPeer(t)), transcript(addr); want != got {
		t.Fatalf("transcripts differ:\n redis:   %q\n iocache: %q", want, got)
	}
}

// A tracking client unblocked by another's push gets its BLMOVE reply, then the invalidation of
// the key its own BLMOVE wrote, as from Redis (unit/tracking "Unblocked BLMOVE gets notification
// after response").
func TestUnblockedBLMOVEInvalidatesAfterItsReplyAsRedis(t *testing.T) {
	transcript := func(addr string) string {
		r, rd := dialPeer(t, addr), dialPeer(t, addr)
		r.do("RPUSH", "list2", "a")
		rd.do("HELLO", "3")
		var out strings.Builder
		out.WriteString(rd.do("CLIENT", "TRACKING", "ON"))
		out.WriteString(rd.do("LRANGE", "list2", "0", "-1"))
		rd.send("BLMOVE", "list1", "list2", "LEFT", "LEFT", "0")
		for i := 0; i < 100 && regexpFind(`blocked_clients:(\d+)`, r.do("INFO", "clients")) != "1"; i++ {
			time.Sleep(10 * time.Millisecond)
		}
		out.WriteString(r.do("RPUSH", "list1", "foo"))
		rd.send("PING")
		out.WriteString(rd.readUntil("+PONG\r\n"))
		return out.String()
	}
	_, addr := startServer(t, nil)
	if want, got := transcript(startRedisPeer(t)), transcript(addr); want != got {
		t.Fatalf("transcripts differ:\n redis:   %q\n iocache: %q", want, got)
	}
}

// Lowering tracking-table-max-keys invalidates keys over the limit at once, with no further
// command, even for a NOLOOP client whose own CONFIG SET lowered it, as Redis does from
// beforeSleep (unit/tracking "Tracking gets notification on tracking table key eviction" waited
// forever: iocache trimmed the table only when it remembered a new key).
func TestTrackingTableShrinksWhileIdleAsRedis(t *testing.T) {
	_, io := startServer(t, nil)
	for name, addr := range map[string]string{"redis-server": startRedisPeer(t), "iocache": io} {
		sub, r := dialPeer(t, addr), dialPeer(t, addr)
		id := strings.TrimSpace(strings.TrimPrefix(sub.do("CLIENT", "ID"), ":"))
		sub.do("SUBSCRIBE", "__redis__:invalidate")
		r.do("CLIENT", "TRACKING", "ON", "REDIRECT", id, "NOLOOP")
		r.do("MSET", "key1", "1", "key2", "2")
		r.do("MGET", "key1", "key2")
		r.do("CONFIG", "SET", "tracking-table-max-keys", "1")
		_ = sub.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		var msg strings.Builder
		if err := readRawReply(sub.br, &msg); err != nil {
			t.Fatalf("%s: no invalidation within 5 s: %v", name, err)
		}
		if m := msg.String(); !strings.HasSuffix(m, "*1\r\n$4\r\nkey1\r\n") && !strings.HasSuffix(m, "*1\r\n$4\r\nkey2\r\n") {
			t.Errorf("%s: %q, want the invalidation of key1 or key2", name, m)
		}
	}
}

// INFO stats counts the tracking table as Redis does: keys, client entries over all keys, BCAST
// prefixes; FLUSHALL ASYNC empties it at once (unit/tracking "Test ASYNC flushall" read
// tracking_total_keys, which iocache did not have).
func TestTrackingInfoCountsAsRedis(t *testing.T) {
	transcript := func(addr string) string {
		a, b, bc, w := dialPeer(t, addr), dialPeer(t, addr), dialPeer(t, addr), dialPeer(t, addr)
		for _, p := range []*peerConn{a, b, bc} {
			p.do("HELLO", "3")
		}
		a.do("CLIENT", "TRACKING", "ON")
		b.do("CLIENT", "TRACKING", "ON")
		bc.do("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "x", "PREFIX", "y")
		a.do("GET", "key1")
		a.do("GET", "key2")
		b.do("GET", "key1")
		var out strings.Builder
		counts := func() {
			info := w.do("INFO", "stats")
			for _, f := range []string{"tracking_total_keys", "tracking_total_items", "tracking_total_prefixes"} {
				fmt.Fprintf(&out, "%s=%s ", f, regexpFind(f+`:(\d+)`, info))
			}
		}
		counts()
		w.do("FLUSHALL", "ASYNC")
		counts()
		return out.String()
	}
	_, addr := startServer(t, nil)
	want, got := transcript(startRedisPeer(t)), transcript(addr)
	if want != got {
		t.Fatalf("INFO stats differ:\n redis:   %s\n iocache: %s", want, got)
	}
	if !strings.HasPrefix(got, "tracking_total_keys=2 tracking_total_items=3 tracking_total_prefixes=2 tracking_total_keys=0 ") {
		t.Errorf("counts: %s", got)
	}
}

// DEBUG PAUSE-CRON holds cron's work; a tracking table over a lowered limit is still trimmed
// before the next command, whose client hears of it first (unit/tracking "Regression test for
// #11715" aborted on iocache, which had no DEBUG PAUSE-CRON).
func TestPauseCronTrackingTrimAsRedis(t *testing.T) {
	transcript := func(addr string) string {
		r, rd := dialPeer(t, addr), dialPeer(t, addr)
		var out strings.Builder
		out.WriteString(r.do("CONFIG", "SET", "tracking-table-max-keys", "2"))
		out.WriteString(r.do("DEBUG", "PAUSE-CRON", "1"))
		rd.do("HELLO", "3")
		out.WriteString(rd.do("CLIENT", "TRACKING", "ON"))
		out.WriteString(rd.do("MGET", "1", "2"))
		out.WriteString(rd.do("MULTI"))
		out.WriteString(r.do("CONFIG", "SET", "tracking-table-max-keys", "1"))
		rd.send("PING")
		rd.send("EXEC")
		out.WriteString(regexp.MustCompile(`\$1\r\n[12]\r\n`).ReplaceAllString(rd.readUntil("*1\r\n+PONG\r\n"), "$$1\r\nK\r\n"))
		out.WriteString(r.do("DEBUG", "PAUSE-CRON", "0"))
		out.WriteString(r.do("DEBUG", "PAUSE-CRON"))
		return out.String()
	}
	_, addr := startServer(t, func(c *config.Config) { c.EnableDebugCommand = "yes" })
	if want, got := transcript(startRedisPeer(t, "--enable-debug-command", "yes")), transcript(addr); want != got {
		t.Fatalf("transcripts differ:\n redis:   %q\n iocache: %q", want, got)
	}
}

// Redis queues BCAST invalidations before it writes any reply of the same loop iteration, so once a
// writer has its reply, a BCAST client's next reply comes after the invalidation. Here replies go
// out as the I/O threads get their conns back: the test searches for a reply that overtakes the
// invalidation, 1,000 times per mode, while other clients keep the main thread and the I/O threads busy.
func TestBroadcastInvalidationPrecedesLaterReplies(t *testing.T) {
	for _, threads := range []int{1, 2} {
		_, addr := startServer(t, func(c *config.Config) { c.IOThreads = threads })
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() { // load: pipelined writes outside the prefix
			defer close(done)
			c, err := net.Dial("tcp", addr)
			if err != nil {
				return
			}
			defer c.Close()
			var batch strings.Builder
			for i := range 64 {
				fmt.Fprintf(&batch, "*3\r\n$3\r\nSET\r\n$6\r\nload%02d\r\n$1\r\nx\r\n", i)
			}
			buf := make([]byte, 64<<10)
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := io.WriteString(c, batch.String()); err != nil {
					return
				}
				for got := 0; got < 64*5; { // +OK\r\n each
					n, err := c.Read(buf)
					if err != nil {
						return
					}
					got += n
				}
			}
		}()
		reader, writer := dialPeer(t, addr), dialPeer(t, addr)
		reader.do("HELLO", "3")
		reader.do("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "user:")
		for i := range 1000 {
			key := fmt.Sprintf("user:%d", i)
			writer.do("SET", key, "v")
			reader.send("PING")
			got := reader.readUntil("+PONG\r\n")
			if !strings.Contains(got, key) {
				close(stop)
				<-done
				t.Fatalf("io-threads %d, round %d: PONG before the invalidation of %s (read %q)", threads, i, key, got)
			}
		}
		close(stop)
		<-done
	}
}
