package engine

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/testpeer"
)

// Differential tests: the same commands go to Debian's redis-server and to iocache, and the raw
// replies must be byte for byte the same. This checks reply types, error texts and edge cases
// against Redis itself rather than against what we remember of it.

// startRedisPeer runs redis-server on a free loopback port for the test.
func startRedisPeer(t *testing.T, extra ...string) string {
	t.Helper()
	bin := testpeer.Require(t, "redis-server")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir()}, extra...)
	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for i := 0; i < 100; i++ {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("redis-server did not start on %s", addr)
	return ""
}

// peerConn sends commands as RESP arrays and reads whole raw replies.
type peerConn struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func dialPeer(t *testing.T, addr string) *peerConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &peerConn{t: t, c: c, br: bufio.NewReader(c)}
}

func (p *peerConn) do(args ...string) string {
	p.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(p.c, b.String()); err != nil {
		p.t.Fatalf("write: %v", err)
	}
	_ = p.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var out strings.Builder
	if err := readRawReply(p.br, &out); err != nil {
		p.t.Fatalf("%v: reading reply: %v (so far %q)", args, err, out.String())
	}
	return out.String()
}

// readRawReply copies one complete RESP2/RESP3 reply.
func readRawReply(br *bufio.Reader, out *strings.Builder) error {
	line, err := br.ReadString('\n')
	if err != nil {
		return err
	}
	out.WriteString(line)
	if len(line) < 3 {
		return fmt.Errorf("short line %q", line)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
	switch line[0] {
	case '$', '=', '!':
		if n < 0 {
			return nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(br, buf); err != nil {
			return err
		}
		out.Write(buf)
	case '*', '~', '>', '%', '|':
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		for i := 0; i < n; i++ {
			if err := readRawReply(br, out); err != nil {
				return err
			}
		}
	}
	return nil
}

// differential runs each command on both servers, in order, with RESP2 and with RESP3, and
// reports every reply that differs.
func differential(t *testing.T, iocacheAddr string, cmds [][]string) {
	t.Helper()
	differentialWith(t, iocacheAddr, startRedisPeer(t), cmds)
}

// differentialWith is differential against a redis-server the caller started (with flags of its
// own, such as --enable-debug-command yes).
func differentialWith(t *testing.T, iocacheAddr, redisAddr string, cmds [][]string) {
	t.Helper()
	for _, proto := range []string{"2", "3"} {
		r, i := dialPeer(t, redisAddr), dialPeer(t, iocacheAddr)
		r.do("FLUSHALL")
		i.do("FLUSHALL")
		r.do("HELLO", proto)
		i.do("HELLO", proto)
		for _, cmd := range cmds {
			want, got := r.do(cmd...), i.do(cmd...)
			if want != got {
				t.Errorf("RESP%s %q:\n redis:   %q\n iocache: %q", proto, cmd, want, got)
			}
		}
	}
}

// Container commands answer unknown subcommands and wrong arities with Redis 7.0's texts.
func TestSubcommandErrorsMatchRedis(t *testing.T) {
	_, addr := startServer(t, nil)
	differential(t, addr, split(
		"OBJECT FOO k", "OBJECT ENCODING", "OBJECT ENCODING a b", "CONFIG FOO", "CONFIG GET", "CONFIG SET maxmemory",
		"SLOWLOG FOO", "SLOWLOG LEN x", "MEMORY FOO", "MEMORY USAGE", "LATENCY FOO", "PUBSUB FOO", "XINFO FOO k", "XINFO STREAM",
		"CLIENT FOO", "CLIENT SETNAME", "CLIENT GETNAME x", "COMMAND FOO", "CLIENT KILL", "CLIENT KILL a b",
		"FUNCTION RESTORE a b c", "FUNCTION FLUSH a b", "FUNCTION FLUSH", "FUNCTION RESTORE", "OBJECT ENCODING a b", "CONFIG GET",
	))
}

// CLIENT REPLY OFF, SKIP and ON silence exactly the replies Redis silences: the byte stream a
// pipeline gets back is the same from both servers.
func TestClientReplyMatchesRedis(t *testing.T) {
	for _, threads := range []int{1, 2} {
		_, addr := startServer(t, func(c *config.Config) { c.IOThreads = threads })
		redisAddr := startRedisPeer(t)
		pipeline := [][]string{
			{"SET", "a", "1"}, {"CLIENT", "REPLY", "OFF"}, {"SET", "b", "2"}, {"GET", "a"}, {"CLIENT", "REPLY", "SKIP"},
			{"INCR", "a"}, {"CLIENT", "REPLY", "ON"}, {"GET", "a"}, {"CLIENT", "REPLY", "SKIP"}, {"GET", "b"}, {"GET", "b"},
			{"CLIENT", "REPLY", "SKIP"}, {"CLIENT", "REPLY", "SKIP"}, {"PING"}, {"CLIENT", "REPLY", "BAD"}, {"ECHO", "end"},
		}
		var want, got string
		for i, a := range []string{redisAddr, addr} {
			p := dialPeer(t, a)
			var b strings.Builder
			for _, cmd := range pipeline {
				fmt.Fprintf(&b, "*%d\r\n", len(cmd))
				for _, arg := range cmd {
					fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(arg), arg)
				}
			}
			if _, err := io.WriteString(p.c, b.String()); err != nil {
				t.Fatal(err)
			}
			_ = p.c.SetReadDeadline(time.Now().Add(5 * time.Second))
			var out strings.Builder
			for !strings.HasSuffix(out.String(), "$3\r\nend\r\n") {
				if err := readRawReply(p.br, &out); err != nil {
					t.Fatalf("reading: %v (so far %q)", err, out.String())
				}
			}
			if i == 0 {
				want = out.String()
			} else {
				got = out.String()
			}
		}
		if want != got {
			t.Fatalf("io-threads %d:\n redis:   %q\n iocache: %q", threads, want, got)
		}
	}
}

// INCRBYFLOAT and HINCRBYFLOAT add in long double and print like Redis: 0.1 + 0.2 is 0.3.
func TestFloatIncrementsMatchRedis(t *testing.T) {
	_, addr := startServer(t, nil)
	differential(t, addr, split(
		"INCRBYFLOAT f 0.1", "INCRBYFLOAT f 0.2", "INCRBYFLOAT f -0.3", "INCRBYFLOAT f 1e20", "INCRBYFLOAT f 3.0e-5",
		"SET g 9223372036854775807", "INCRBYFLOAT g 1", "INCRBYFLOAT g -2.5", "SET h -0", "INCRBYFLOAT h 0",
		"INCRBYFLOAT f inf", "INCRBYFLOAT f x", "SET s abc", "INCRBYFLOAT s 1", "INCRBYFLOAT n 5.0e3", "INCRBYFLOAT n 1.23456789012345678",
		"HINCRBYFLOAT k a 0.1", "HINCRBYFLOAT k a 0.2", "HINCRBYFLOAT k a 10.5", "HINCRBYFLOAT k a -inf", "HSET k b x", "HINCRBYFLOAT k b 1",
	))
}

// Scores are read as Redis's string2d reads them: a double's largest value written out in full
// (309 digits) is a score, a literal past a double's range either way is not.
func TestScoreLiteralsMatchRedis(t *testing.T) {
	_, addr := startServer(t, nil)
	full := "1" + strings.Repeat("0", 308)
	differential(t, addr, [][]string{
		{"ZADD", "z", full, "big"}, {"ZSCORE", "z", "big"}, {"ZADD", "z", "1e400", "over"}, {"ZADD", "z", "-1e400", "under"},
		{"ZADD", "z", "1e-400", "tiny"}, {"ZADD", "z", "1e-310", "denormal"}, {"ZADD", "z", "0e10", "zero"}, {"ZADD", "z", "-0.0e-999", "nzero"},
		{"ZINCRBY", "z", "1e400", "big"}, {"ZRANGEBYSCORE", "z", "-" + full, full}, {"ZCARD", "z"},
		{"ZADD", "z", strings.Repeat("1", 5200), "long"},
	})
}

// HyperLogLogs are Redis's bytes: the same registers, encodings, cached counts and estimates.
func TestHyperLogLogMatchesRedis(t *testing.T) {
	_, addr := startServer(t, nil)
	many := func(prefix string, n int) []string {
		out := []string{"PFADD", prefix}
		for i := 0; i < n; i++ {
			out = append(out, fmt.Sprintf("%s-%d", prefix, i))
		}
		return out
	}
	cmds := split(
		"PFADD h a b c", "GET h", "PFCOUNT h", "GET h", "PFADD h a", "PFADD h d", "PFCOUNT h", "PFADD e", "GET e", "PFCOUNT e",
		"PFADD h2 x y z a", "PFMERGE h3 h h2", "GET h3", "PFCOUNT h3", "PFCOUNT h h2", "PFCOUNT h nokey", "PFCOUNT nokey",
		"SET s x", "PFADD s a", "PFCOUNT s", "PFMERGE s h", "PFMERGE h s", "LPUSH l a", "PFADD l a", "PFCOUNT h l",
		"SET bad HYLLbad", "PFCOUNT bad", "PFADD bad a",
	)
	cmds = append(cmds, many("mid", 200), []string{"GET", "mid"}, []string{"PFCOUNT", "mid"},
		many("big", 4000), []string{"GET", "big"}, []string{"PFCOUNT", "big"}, []string{"PFMERGE", "mix", "h", "big"},
		[]string{"GET", "mix"}, []string{"PFCOUNT", "mix", "mid", "h"}, []string{"STRLEN", "big"}, []string{"STRLEN", "mid"})
	differential(t, addr, cmds)
}

// Expired and evicted keys are announced as Redis announces them, and notify-keyspace-events
// reads back in Redis's canonical form.
func TestExpiryAndEvictionNotificationsMatchRedis(t *testing.T) {
	_, addr := startServer(t, nil)
	redisAddr := startRedisPeer(t)
	transcript := func(a string) string {
		c, sub := dialPeer(t, a), dialPeer(t, a)
		var out strings.Builder
		for _, v := range []string{"KEA", "Egx", "g$lshzxetdmnKE", "Kq", "", "Ex"} {
			out.WriteString(c.do("CONFIG", "SET", "notify-keyspace-events", v))
			out.WriteString(c.do("CONFIG", "GET", "notify-keyspace-events"))
		}
		out.WriteString(c.do("CONFIG", "SET", "notify-keyspace-events", "KEA"))
		sub.do("PSUBSCRIBE", "__key*__:*")
		c.do("SET", "short", "v", "PX", "30")
		c.do("SET", "lazy", "v", "PX", "1")
		time.Sleep(150 * time.Millisecond) // the active cycle expires "short"
		c.do("GET", "lazy")                // an access expires "lazy", if the cycle did not
		c.do("CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
		c.do("SET", "big", strings.Repeat("x", 1000))
		c.do("CONFIG", "SET", "maxmemory", "1")
		c.do("SET", "trigger", "1") // evicts "big" (and fails: nothing else can go)
		c.do("CONFIG", "SET", "maxmemory", "0")
		sub.send("PING")
		events := sub.readUntil("*2\r\n$4\r\npong\r\n$0\r\n\r\n")
		// Which of the two expired first is timing; that each was announced once is not.
		for _, k := range []string{"short", "lazy", "big"} {
			out.WriteString(fmt.Sprintf("%s:%d ", k, strings.Count(events, "\r\n"+k+"\r\n")))
		}
		for _, e := range []string{"expired", "evicted", "set"} {
			out.WriteString(fmt.Sprintf("%s:%d ", e, strings.Count(events, "\r\n"+e+"\r\n")))
		}
		return out.String()
	}
	want, got := transcript(redisAddr), transcript(addr)
	if want != got {
		t.Fatalf("transcripts differ:\n redis:   %q\n iocache: %q", want, got)
	}
	if !strings.Contains(want, "expired:2 evicted:1") {
		t.Fatalf("the scenario did not expire and evict as planned: %q", want)
	}
}

// Geospatial commands answer as Redis does, to the last digit: positions, distances, geohashes,
// and searches (members, order, WITH* fields) by radius and by box, from a point or a member.
func TestGeoMatchesRedis(t *testing.T) {
	_, addr := startServer(t, nil)
	cmds := split(
		"GEOADD Sicily 13.361389 38.115556 Palermo 15.087269 37.502669 Catania",
		"GEOADD Sicily NX 12.758489 38.788135 edge1 17.241510 38.788135 edge2 13.5 37.9 mid",
		"GEOADD Sicily XX CH 13.361389 38.115557 Palermo", "GEOADD Sicily NX XX 1 1 a", "GEOADD Sicily 1 1",
		"GEOADD Sicily 200 10 bad", "GEOADD Sicily 10 86 bad", "GEOADD Sicily x 10 bad",
		"GEOPOS Sicily Palermo Catania nosuch", "GEOPOS nokey a", "GEODIST Sicily Palermo Catania",
		// Members ZADD gave scores no GEOADD writes: decoded as Redis's C cast decodes them.
		"ZADD odd -inf a 1e300 b -1e300 c 1e19 d inf e -2 f 1.5 g 1.8446744073709552e19 h",
		"GEOPOS odd a b c d e f g h", "GEOHASH odd a b e h", "GEODIST odd a e",
		"GEODIST Sicily Palermo Catania km", "GEODIST Sicily Palermo Catania mi", "GEODIST Sicily Palermo Catania ft",
		"GEODIST Sicily Palermo nosuch", "GEODIST Sicily Palermo Catania parsec", "GEODIST nokey a b",
		"GEOHASH Sicily Palermo Catania nosuch", "GEOHASH nokey a",
		"GEORADIUS Sicily 15 37 200 km WITHDIST WITHCOORD ASC", "GEORADIUS Sicily 15 37 200 km DESC COUNT 2",
		"GEORADIUS Sicily 15 37 100 km", "GEORADIUS Sicily 15 37 -1 km", "GEORADIUS Sicily 15 37 200 km WITHHASH ASC",
		"GEORADIUSBYMEMBER Sicily Palermo 300 km ASC WITHDIST", "GEORADIUSBYMEMBER Sicily nosuch 300 km",
		"GEORADIUS_RO Sicily 15 37 500 km ASC", "GEORADIUS_RO Sicily 15 37 500 km STORE x",
		"GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km ASC WITHCOORD WITHDIST WITHHASH",
		"GEOSEARCH Sicily FROMMEMBER Palermo BYBOX 400 400 km ASC WITHDIST",
		"GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 400 400 km DESC COUNT 3",
		"GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1000 km COUNT 1 ANY",
		"GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1000 km ANY", "GEOSEARCH Sicily BYRADIUS 10 km",
		"GEOSEARCH Sicily FROMLONLAT 15 37", "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 10 km BYBOX 1 1 km",
		"GEOSEARCH Sicily FROMMEMBER nosuch BYRADIUS 10 km", "GEOSEARCH nokey FROMMEMBER nosuch BYRADIUS 10 km",
		"GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX -1 1 km", "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km COUNT 0",
		"GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 200 km ASC", "ZRANGE dst 0 -1 WITHSCORES",
		// (scores that are distances print in shortest form here and with 17 digits in Redis 7.0)
		"GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 200 km STOREDIST", "ZRANGE dst 0 -1",
		"GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 200 km WITHDIST", "GEOSEARCHSTORE dst nokey FROMLONLAT 15 37 BYRADIUS 200 km",
		"EXISTS dst", "GEORADIUS Sicily 15 37 200 km STORE dst2", "GEORADIUS Sicily 15 37 200 km STOREDIST dst2 WITHDIST",
		"SET str x", "GEOADD str 1 1 a", "GEOPOS str a", "GEOSEARCH str FROMLONLAT 1 1 BYRADIUS 1 km",
		"GEOADD world -122.27652 37.805186 oakland -118.2437 34.0522 la 139.6917 35.6895 tokyo -0.1278 51.5074 london 151.2093 -33.8688 sydney",
		"GEOSEARCH world FROMLONLAT 0 0 BYRADIUS 20000 km ASC WITHDIST", "GEOSEARCH world FROMMEMBER sydney BYBOX 40000 20000 km DESC",
		"GEORADIUS world -120 36 600 km WITHCOORD", "GEOHASH world oakland la tokyo london sydney",
	)
	differential(t, addr, cmds)
}

// ZUNION/ZINTER with infinite scores and zero weights: Redis turns a NaN product into 0 for the
// union and for the first input of an intersection, not for the others, and its MIN/MAX keep the
// current score against a NaN. Found by the widened random comparison.
func TestZSetAlgebraWithInfinitiesMatchesRedis(t *testing.T) {
	_, addr := startServer(t, nil)
	var cmds [][]string
	cmds = append(cmds, split("ZADD a inf x -inf y 1 z", "ZADD b -inf x inf y")...)
	for _, agg := range []string{"SUM", "MIN", "MAX"} {
		cmds = append(cmds, split(
			"ZINTERSTORE d 2 a a WEIGHTS 2 0 AGGREGATE "+agg, "ZRANGE d 0 -1 WITHSCORES",
			"ZINTER 2 a b WEIGHTS 0 1 AGGREGATE "+agg+" WITHSCORES",
			"ZUNION 2 a b WEIGHTS 0 1 AGGREGATE "+agg+" WITHSCORES",
			"ZUNION 2 a b WEIGHTS 1 -1 AGGREGATE "+agg+" WITHSCORES")...)
	}
	differential(t, addr, cmds)
}
