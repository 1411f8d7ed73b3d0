package engine

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc64"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iocache/iocache/server/keyspace"
	"github.com/iocache/iocache/server/rdb"
	"github.com/iocache/iocache/server/testpeer"
)

// Untrusted bytes come through doors that are not a client's commands alone: DUMP payloads
// (RESTORE), libraries (FUNCTION RESTORE), scripts and what their libraries parse (cjson,
// cmsgpack, struct, loadstring), and a primary's full sync. TestDoorsSearch generates hostile
// inputs for each door from a seed and runs every one against iocache-server and Debian's
// redis-server side by side, each process under a watchdog: its RSS is sampled every 5 ms (and
// iocache killed past a hard cap, so that a regression fails the test instead of taking the
// machine), and a second client PINGs it every 10 ms, so the longest wait for an answer is known.
// iocache must survive every case, stay within its configured limits' bound, and answer the
// PINGs no later than twice redis-server's wait plus a margin; the figures of both are logged side by
// side, and written to IOCACHE_DOORS_REPORT when it names a file (the README's reliability
// figure). `make test` runs a short search (IOCACHE_DOORS_CASES, default 60 cases, 12 in -short);
// `make fuzz` a long one. A failing case prints its seed and index: IOCACHE_DOORS_SEED replays it.

// doorLimits are the settings both servers run the search with: the limits that bound what one
// input may cost iocache (maxmemory for decoded data, proto-max-bulk-len for one string and,
// twice over, for a script's memory).
var doorLimits = []string{"--maxmemory", "64mb", "--proto-max-bulk-len", "16mb", "--busy-reply-threshold", "200"}

const (
	// doorGrowthBound is the most iocache's RSS may grow in one case: maxmemory, a script's
	// budget of twice proto-max-bulk-len, the doublings of a string (s = s .. s, one instruction
	// each) that happen before the guard's 10 ms check and the collection that confirms it see
	// them (504 MB seen against a 32 MB budget; redis-server, which has no bound, took 743 MB),
	// and the runtime's headroom. doorHardCap kills it well before the machine is at risk.
	doorGrowthBound = 768 * mb
	doorHardCap     = 1536 * mb
	// doorStallMargin is how much longer than twice redis-server's wait iocache may leave a PING
	// waiting in one case (scheduling on two cores shared with the rest of make test, a
	// collection of the case's garbage); the holds this search is for were of 10 s and more.
	doorStallMargin = time.Second
)

// doorCase is one generated input: a command and its arguments, or, for the replication door, a
// payload that a fake primary sends as its full sync.
type doorCase struct {
	door string // "restore", "function restore", "lua", "sync"
	what string // a short description for the report
	args [][]byte
	sync []byte // the RDB a fake primary sends (door "sync")
}

// doorServer is one server process under watch.
type doorServer struct {
	name  string
	addr  string
	cmd   *exec.Cmd
	guard *rssGuard
	probe *pingProbe
	start func() (string, *exec.Cmd)
}

// pingProbe PINGs a server every 10 ms over its own connection and keeps the longest wait for
// an answer since the last reset, counting a PING still unanswered.
type pingProbe struct {
	longest atomic.Int64 // ns
	pending atomic.Int64 // unix ns the unanswered PING was sent, 0 when none
	stop    chan struct{}
	done    chan struct{}
}

func startPingProbe(addr string) *pingProbe {
	p := &pingProbe{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		var c net.Conn
		var br *bufio.Reader
		for {
			select {
			case <-p.stop:
				if c != nil {
					c.Close()
				}
				return
			case <-time.After(10 * time.Millisecond):
			}
			if c == nil {
				var err error
				if c, err = net.DialTimeout("tcp", addr, time.Second); err != nil {
					c = nil
					continue
				}
				br = bufio.NewReader(c)
			}
			sent := time.Now()
			p.pending.Store(sent.UnixNano())
			_ = c.SetDeadline(sent.Add(30 * time.Second))
			_, err := io.WriteString(c, "*1\r\n$4\r\nPING\r\n")
			if err == nil {
				_, err = br.ReadString('\n') // +PONG, or -BUSY while a script runs: both are answers
			}
			p.pending.Store(0)
			if d := time.Since(sent).Nanoseconds(); d > p.longest.Load() {
				p.longest.Store(d)
			}
			if err != nil {
				c.Close()
				c = nil
			}
		}
	}()
	return p
}

// take returns the longest wait since the last take and resets it.
func (p *pingProbe) take() time.Duration {
	d := p.longest.Swap(0)
	if sent := p.pending.Load(); sent != 0 {
		d = max(d, time.Since(time.Unix(0, sent)).Nanoseconds())
	}
	return time.Duration(d)
}

func (p *pingProbe) finish() { close(p.stop); <-p.done }

// doorResult is what one case cost one server.
type doorResult struct {
	reply  string // the reply's first line, or what went wrong
	growth int64  // peak RSS over the case minus RSS before it
	stall  time.Duration
	died   bool
}

// rawDo sends args as a RESP array on a fresh connection and returns the reply's first line;
// the rest of the reply is read and dropped.
func rawDo(addr string, timeout time.Duration, args ...[]byte) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	w := bufio.NewWriter(c)
	fmt.Fprintf(w, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(w, "$%d\r\n", len(a))
		w.Write(a)
		w.WriteString("\r\n")
	}
	if err := w.Flush(); err != nil {
		return "", err
	}
	br := bufio.NewReader(c)
	var out strings.Builder
	err = readRawReply(br, &out)
	first, _, _ := strings.Cut(out.String(), "\r\n")
	return first, err
}

// run runs one case against s.
func (s *doorServer) run(t *testing.T, c doorCase, primary *syncPrimary) doorResult {
	pid := s.cmd.Process.Pid
	base := readRSS(pid)
	s.guard.maxRSS.Store(base)
	s.probe.take()
	var res doorResult
	var err error
	switch c.door {
	case "sync":
		primary.serve(c.sync)
		host, port, _ := net.SplitHostPort(primary.addr)
		if res.reply, err = rawDo(s.addr, 5*time.Second, []byte("REPLICAOF"), []byte(host), []byte(port)); err == nil {
			// The replica connects, takes the payload, loads or refuses it.
			deadline := time.Now().Add(3 * time.Second)
			for primary.served.Load() == 0 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			time.Sleep(500 * time.Millisecond)
			res.reply, err = rawDo(s.addr, 10*time.Second, []byte("REPLICAOF"), []byte("NO"), []byte("ONE"))
		}
		primary.served.Store(0)
	default:
		res.reply, err = rawDo(s.addr, 20*time.Second, c.args...)
	}
	if err != nil {
		res.reply = "error: " + err.Error()
	}
	// A script still running past the threshold is killed, as an operator would.
	for i := 0; i < 100; i++ {
		r, err := rawDo(s.addr, 5*time.Second, []byte("PING"))
		if err != nil || strings.HasPrefix(r, "+PONG") {
			break
		}
		_, _ = rawDo(s.addr, time.Second, []byte("SCRIPT"), []byte("KILL"))
		_, _ = rawDo(s.addr, time.Second, []byte("FUNCTION"), []byte("KILL"))
		time.Sleep(50 * time.Millisecond)
	}
	res.stall = s.probe.take()
	res.growth = s.guard.maxRSS.Load() - base
	if r, err := rawDo(s.addr, 5*time.Second, []byte("PING")); err != nil || r != "+PONG" {
		res.died = true
		if s.guard.killed.Load() {
			res.reply += fmt.Sprintf(" (killed by the RSS watchdog at %d MB)", s.guard.maxRSS.Load()/mb)
		}
	}
	// Keys a case restored go, so that the next case starts from the same dataset.
	_, _ = rawDo(s.addr, 10*time.Second, []byte("FLUSHALL"))
	_, _ = rawDo(s.addr, 10*time.Second, []byte("FUNCTION"), []byte("FLUSH"))
	return res
}

// restart replaces a server that died (redis-server does, on some inputs) for the next cases.
func (s *doorServer) restart() {
	s.probe.finish()
	s.guard.finish()
	s.addr, s.cmd = s.start()
	s.guard = guardRSS(s.cmd, hardCapFor(s.name))
	s.probe = startPingProbe(s.addr)
}

func hardCapFor(name string) int64 {
	if name == "iocache" {
		return doorHardCap
	}
	return 3 << 30 // redis-server is only watched, its figures are the comparison; past 3 GiB it is stopped (and counted as died), as the watchdog did
}

// syncPrimary is a fake primary: it answers a replica's handshake and sends the current
// payload as a full sync, then keeps the connection open without a replication stream.
type syncPrimary struct {
	addr    string
	payload atomic.Pointer[[]byte]
	served  atomic.Int64
}

func startSyncPrimary(t *testing.T) *syncPrimary {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	p := &syncPrimary{addr: l.Addr().String()}
	empty := []byte{}
	p.payload.Store(&empty)
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go p.handle(conn)
		}
	}()
	return p
}

func (p *syncPrimary) serve(payload []byte) { p.payload.Store(&payload) }

func (p *syncPrimary) handle(conn net.Conn) {
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(conn)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		if strings.HasPrefix(line, "*") {
			n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
			var args []string
			for i := 0; i < n && i < 16; i++ {
				_, _ = r.ReadString('\n')
				a, _ := r.ReadString('\n')
				args = append(args, strings.TrimSpace(a))
			}
			line = strings.Join(args, " ")
		}
		switch strings.ToUpper(strings.Fields(line + " x")[0]) {
		case "PING":
			io.WriteString(conn, "+PONG\r\n")
		case "PSYNC", "SYNC":
			payload := *p.payload.Load()
			fmt.Fprintf(conn, "+FULLRESYNC %s 0\r\n$%d\r\n", strings.Repeat("b", 40), len(payload))
			conn.Write(payload)
			p.served.Add(1)
			time.Sleep(2 * time.Second) // the replica decides; then the connection goes
			return
		default:
			io.WriteString(conn, "+OK\r\n")
		}
	}
}

// doorCRC is Redis's CRC-64 (Jones), to re-sign mutated payloads so that they reach the
// decoders instead of stopping at the checksum.
var doorCRCTable = crc64.MakeTable(0x95ac9329ac4bc9b5)

func doorCRC(p []byte) uint64 { return ^crc64.Update(^uint64(0), doorCRCTable, p) }

// resign replaces a DUMP payload's checksum (its last 8 bytes) with the right one.
func resign(p []byte) []byte {
	if len(p) < 10 {
		return p
	}
	binary.LittleEndian.PutUint64(p[len(p)-8:], doorCRC(p[:len(p)-8]))
	return p
}

// mutate changes a few bytes of body in ways that hit decoders: random bytes, lengths made
// large (0x81 and eight bytes, 0x80 and four, 0xC3 for an LZF string), a cut, a repeat.
func mutate(rng *rand.Rand, body []byte) []byte {
	b := slices.Clone(body)
	for n := 1 + rng.IntN(3); n > 0 && len(b) > 0; n-- {
		at := rng.IntN(len(b))
		switch rng.IntN(6) {
		case 0:
			b[at] = byte(rng.Uint32())
		case 1:
			big := make([]byte, 9)
			big[0] = 0x81
			binary.BigEndian.PutUint64(big[1:], uint64(1)<<(20+rng.IntN(40)))
			b = slices.Insert(b, at, big...)
		case 2:
			big := make([]byte, 5)
			big[0] = 0x80
			binary.BigEndian.PutUint32(big[1:], rng.Uint32())
			b = slices.Insert(b, at, big...)
		case 3:
			b = slices.Insert(b, at, 0xC3, 0x40, 0x10, 0x80, 0x7f, 0xff, 0xff, 0xff)
		case 4:
			b = b[:at]
		case 5:
			end := min(len(b), at+1+rng.IntN(64))
			b = slices.Insert(b, at, b[at:end]...)
		}
	}
	return b
}

// dumpOf builds a DUMP payload from a body (type byte and value), with Redis 7.0's version.
func dumpOf(body []byte) []byte {
	p := append(slices.Clone(body), 10, 0)
	return binary.LittleEndian.AppendUint64(p, doorCRC(p))
}

// collectionBomb is a DUMP body of type t that declares count elements and holds few.
func collectionBomb(t byte, count uint64, elems int) []byte {
	b := []byte{t, 0x81}
	b = binary.BigEndian.AppendUint64(b, count)
	for i := 0; i < elems; i++ {
		b = append(b, 3, 'a', 'b', byte('0'+i%10))
	}
	return b
}

// luaCase returns a generated script: nesting through each parser and library, self-references,
// tables and strings that grow, and replies of every depth.
func luaCase(rng *rand.Rand) (string, string) {
	depth := []int{50, 1000, 20000, 200000, 2000000}[rng.IntN(5)]
	size := []int{1 << 10, 1 << 20, 1 << 24, 1 << 28}[rng.IntN(4)]
	d, n := strconv.Itoa(depth), strconv.Itoa(size)
	switch rng.IntN(16) {
	case 0:
		return "cjson.decode nested arrays " + d, "return cjson.decode(string.rep('[', " + d + ") .. string.rep(']', " + d + "))"
	case 1:
		return "cjson.decode nested objects " + d, "return cjson.decode(string.rep('{\"a\":', " + d + ") .. '1' .. string.rep('}', " + d + "))"
	case 2:
		return "cmsgpack.unpack nested arrays " + d, "return cmsgpack.unpack(string.rep(string.char(0x91), " + d + ") .. string.char(0xc0))"
	case 3:
		return "loadstring nested parentheses " + d, "local f = loadstring('return ' .. string.rep('(', " + d + ") .. '1' .. string.rep(')', " + d + ")) return f and 1 or 0"
	case 4:
		return "loadstring nested tables " + d, "local f = loadstring('return ' .. string.rep('{', " + d + ") .. string.rep('}', " + d + ")) return f and 1 or 0"
	case 5:
		return "loadstring nested functions " + d, "local f = loadstring(string.rep('local function f() ', " + d + ") .. string.rep(' end', " + d + ")) return f and 1 or 0"
	case 6:
		lib := []string{"cjson.encode(t)", "cmsgpack.pack(t)", "t"}[rng.IntN(3)]
		return "self-reference through " + lib, "local t = {} t[1] = t t.x = t return " + lib
	case 7:
		lib := []string{"cjson.encode(t)", "cmsgpack.pack(t)", "t", "redis.call('ping', t)"}[rng.IntN(4)]
		return "table nested " + d + " through " + lib, "local t = {} for i = 1, " + d + " do t = {t} end return " + lib
	case 8:
		return "string.rep " + n, "return #string.rep('x', " + n + ")"
	case 9:
		return "doubling a string to " + n, "local s = 'xxxxxxxx' while #s < " + n + " do s = s .. s end return #s"
	case 10:
		return "table of " + n + " integers", "local t = {} for i = 1, " + n + " do t[i] = i end return #t"
	case 11:
		return "unpack of " + d, "local t = {} for i = 1, " + d + " do t[i] = i end return select('#', unpack(t))"
	case 12:
		return "string.gsub growing " + d, "local s = string.rep('a', " + d + ") local r = string.gsub(s, 'a', string.rep('b', 1000)) return #r"
	case 13:
		return "struct.pack of " + d + " fields", "local t = {} for i = 1, " + d + " do t[i] = i end return #struct.pack(string.rep('i4', " + d + "), unpack(t))"
	case 14:
		return "table.concat to " + n, "local t = {} for i = 1, " + n + "/1024 do t[i] = string.rep('x', 1024) end return #table.concat(t)"
	default:
		return "reply of " + d + " elements", "local t = {} for i = 1, " + d + " do t[i] = i end return t"
	}
}

// doorCorpus is what the generator starts from: real payloads that redis-server made.
type doorCorpus struct {
	dumps    [][]byte // DUMP of keys of every type and encoding
	function []byte   // FUNCTION DUMP of a library
	rdbFile  []byte   // an RDB file holding those keys
}

func collectCorpus(t *testing.T, redisAddr, dir string) doorCorpus {
	p := dialPeer(t, redisAddr)
	var corpus doorCorpus
	setup := [][]string{
		{"SET", "s:int", "12345"}, {"SET", "s:raw", strings.Repeat("abcdefgh", 40)},
		{"RPUSH", "l:small", "a", "b", "1", "200000"}, {"SET", "s:short", "hello"},
		{"SADD", "set:int", "1", "2", "3", "70000", "-5"}, {"SADD", "set:str", "a", "b", "c"},
		{"ZADD", "z:small", "1", "a", "2.5", "b"}, {"HSET", "h:small", "f", "v", "g", "w"},
		{"XADD", "x", "1-1", "f", "v"}, {"XADD", "x", "2-1", "f", "w", "g", "z"},
		{"XGROUP", "CREATE", "x", "grp", "0"}, {"XREADGROUP", "GROUP", "grp", "c1", "COUNT", "1", "STREAMS", "x", ">"},
	}
	for i := 0; i < 200; i++ {
		setup = append(setup, []string{"RPUSH", "l:big", strings.Repeat("e", i%70)},
			[]string{"SADD", "set:big", "m" + strconv.Itoa(i)}, []string{"ZADD", "z:big", strconv.Itoa(i), strings.Repeat("m", 1+i%80)},
			[]string{"HSET", "h:big", "f" + strconv.Itoa(i), strings.Repeat("v", i%90)})
	}
	for _, c := range setup {
		if r := p.do(c...); strings.HasPrefix(r, "-") {
			t.Fatalf("%v on redis-server: %s", c, r)
		}
	}
	for _, k := range []string{"s:int", "s:raw", "s:short", "l:small", "l:big", "set:int", "set:str", "set:big", "z:small", "z:big", "h:small", "h:big", "x"} {
		_, payload, _ := strings.Cut(p.do("DUMP", k), "\r\n")
		corpus.dumps = append(corpus.dumps, []byte(strings.TrimSuffix(payload, "\r\n")))
	}
	p.do("FUNCTION", "LOAD", "#!lua name=doorlib\nredis.register_function('f1', function(keys, args) return 1 end)\nredis.register_function{function_name='f2', callback=function() return 2 end, flags={'no-writes'}}")
	_, fn, _ := strings.Cut(p.do("FUNCTION", "DUMP"), "\r\n")
	corpus.function = []byte(strings.TrimSuffix(fn, "\r\n"))
	if r := p.do("SAVE"); r != "+OK\r\n" {
		t.Fatalf("SAVE on redis-server: %s", r)
	}
	var err error
	if corpus.rdbFile, err = os.ReadFile(dir + "/dump.rdb"); err != nil {
		t.Fatal(err)
	}
	p.do("FLUSHALL")
	p.do("FUNCTION", "FLUSH")
	return corpus
}

// generateCase makes case i of a search from its own random stream, so that any case can be
// replayed alone from the seed and its index.
func generateCase(seed uint64, i int, corpus doorCorpus) doorCase {
	rng := rand.New(rand.NewPCG(seed, uint64(i)))
	key := []byte("door:" + strconv.Itoa(i))
	restore := func(what string, payload []byte) doorCase {
		return doorCase{door: "restore", what: what, args: [][]byte{[]byte("RESTORE"), key, []byte("0"), payload, []byte("REPLACE")}}
	}
	switch r := rng.IntN(20); {
	case r < 5:
		src := corpus.dumps[rng.IntN(len(corpus.dumps))]
		body := mutate(rng, src[:len(src)-8])
		return restore(fmt.Sprintf("mutated DUMP of type %d, %d bytes", src[0], len(body)), resign(append(body, make([]byte, 8)...)))
	case r < 7:
		ulen := 1 << (20 + rng.IntN(11)) // 1 MB to 1 GB of zeros from ulen/132 bytes
		v := rdb.Value{Type: keyspace.TypeString, Str: make([]byte, ulen)}
		return restore(fmt.Sprintf("LZF string of %d MB", ulen>>20), rdb.Dump(v, rdb.Options{Compression: true}))
	case r < 9:
		types := []byte{1, 2, 3, 4, 5}
		ty := types[rng.IntN(len(types))]
		count := uint64(1) << (20 + rng.IntN(40))
		return restore(fmt.Sprintf("type %d declaring %d elements", ty, count), dumpOf(collectionBomb(ty, count, rng.IntN(5))))
	case r < 11:
		src := corpus.function
		body := mutate(rng, src[:len(src)-8])
		return doorCase{door: "function restore", what: fmt.Sprintf("mutated FUNCTION DUMP, %d bytes", len(body)),
			args: [][]byte{[]byte("FUNCTION"), []byte("RESTORE"), resign(append(body, make([]byte, 8)...)), []byte("REPLACE")}}
	case r < 13:
		f := slices.Clone(corpus.rdbFile)
		body := mutate(rng, f[:len(f)-8])
		// Half keep a valid checksum, so that mutations reach the loader; half are left as cut.
		if rng.IntN(2) == 0 {
			body = resign(append(body, make([]byte, 8)...))
		}
		return doorCase{door: "sync", what: fmt.Sprintf("mutated RDB of %d bytes from the primary", len(body)), sync: body}
	default:
		what, script := luaCase(rng)
		return doorCase{door: "lua", what: what, args: [][]byte{[]byte("EVAL"), []byte(script), []byte("0")}}
	}
}

func TestDoorsSearch(t *testing.T) {
	cases := 60
	if testing.Short() {
		cases = 12
	}
	if v, err := strconv.Atoi(os.Getenv("IOCACHE_DOORS_CASES")); err == nil {
		cases = v
	}
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("IOCACHE_DOORS_SEED"), 10, 64); err == nil {
		seed = v
	}
	// IOCACHE_DOORS_CASE=i runs case i alone, i-j cases i to j.
	from, to := 0, cases-1
	if v := os.Getenv("IOCACHE_DOORS_CASE"); v != "" {
		a, b, isRange := strings.Cut(v, "-")
		from, _ = strconv.Atoi(a)
		to = from
		if isRange {
			to, _ = strconv.Atoi(b)
		}
		cases = max(cases, to+1)
	}
	t.Logf("seed %d (IOCACHE_DOORS_SEED=%d replays this search; IOCACHE_DOORS_CASE=i one case of it, i-j a range)", seed, seed)

	redisBin := testpeer.Require(t, "redis-server")
	var redisDir string
	startRedis := func() (string, *exec.Cmd) {
		// A directory of its own each time: a replica's sync may leave a corrupt dump.rdb that
		// a restarted redis-server would refuse to start with.
		redisDir = t.TempDir()
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", redisDir, "--enable-debug-command", "no"}, doorLimits...)
		cmd := exec.Command(redisBin, args...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		for i := 0; i < 200; i++ {
			if r, err := rawDo(addr, time.Second, []byte("PING")); err == nil && r == "+PONG" {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		return addr, cmd
	}
	startIocache := func() (string, *exec.Cmd) {
		return startProcess(t, append([]string{"--dir", t.TempDir()}, doorLimits...)...)
	}
	servers := []*doorServer{{name: "iocache", start: startIocache}, {name: "redis-server", start: startRedis}}
	for _, s := range servers {
		s.addr, s.cmd = s.start()
		s.guard = guardRSS(s.cmd, hardCapFor(s.name))
		s.probe = startPingProbe(s.addr)
	}
	defer func() {
		for _, s := range servers {
			s.probe.finish()
			s.guard.finish()
		}
	}()
	corpus := collectCorpus(t, servers[1].addr, redisDir)
	primary := startSyncPrimary(t)

	type figures struct {
		cases, redisDied                int
		maxGrowth, redisMaxGrowth       int64
		maxStall, redisMaxStall         time.Duration
		worstGrowthWhat, worstStallWhat string
	}
	byDoor := map[string]*figures{}
	failed := 0
	for i := 0; i < cases; i++ {
		if i < from || i > to {
			continue
		}
		c := generateCase(seed, i, corpus)
		var res [2]doorResult
		for k, s := range servers {
			res[k] = s.run(t, c, primary)
		}
		ioc, rd := res[0], res[1]
		f := byDoor[c.door]
		if f == nil {
			f = &figures{}
			byDoor[c.door] = f
		}
		f.cases++
		if ioc.growth > f.maxGrowth {
			f.maxGrowth, f.worstGrowthWhat = ioc.growth, c.what
		}
		if ioc.stall > f.maxStall {
			f.maxStall, f.worstStallWhat = ioc.stall, c.what
		}
		f.redisMaxGrowth = max(f.redisMaxGrowth, rd.growth)
		f.redisMaxStall = max(f.redisMaxStall, rd.stall)
		line := fmt.Sprintf("case %d %s: %s — iocache %q +%d MB, PING waited %v; redis-server %q +%d MB, %v",
			i, c.door, c.what, trimReply(ioc.reply), ioc.growth/mb, ioc.stall.Round(time.Millisecond),
			trimReply(rd.reply), rd.growth/mb, rd.stall.Round(time.Millisecond))
		if rd.died {
			f.redisDied++
			line += " (redis-server died: restarted)"
			servers[1].restart()
		}
		var why []string
		if ioc.died {
			why = append(why, "iocache died")
		}
		if ioc.growth > doorGrowthBound {
			why = append(why, fmt.Sprintf("iocache grew %d MB (bound %d MB)", ioc.growth/mb, doorGrowthBound/mb))
		}
		if ioc.stall > 2*rd.stall+doorStallMargin && !rd.died {
			why = append(why, fmt.Sprintf("iocache left a PING waiting %v, redis-server %v", ioc.stall, rd.stall))
		}
		if len(why) > 0 {
			failed++
			t.Errorf("%s: %s (replay: IOCACHE_DOORS_SEED=%d IOCACHE_DOORS_CASE=%d)", line, strings.Join(why, "; "), seed, i)
			if ioc.died {
				servers[0].restart()
			}
			continue
		}
		t.Log(line)
	}
	doors := make([]string, 0, len(byDoor))
	for d := range byDoor {
		doors = append(doors, d)
	}
	sort.Strings(doors)
	var report strings.Builder
	fmt.Fprintf(&report, "| door | cases | iocache: largest RSS growth | iocache: longest PING wait | redis-server: largest RSS growth | redis-server: longest PING wait | redis-server died |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, d := range doors {
		f := byDoor[d]
		fmt.Fprintf(&report, "| %s | %d | %d MB%s | %v%s | %d MB | %v | %d |\n", d, f.cases, f.maxGrowth/mb, worst(f.worstGrowthWhat),
			f.maxStall.Round(time.Millisecond), worst(f.worstStallWhat), f.redisMaxGrowth/mb, f.redisMaxStall.Round(time.Millisecond), f.redisDied)
	}
	t.Logf("seed %d, %d cases, %d failed:\n%s", seed, cases, failed, report.String())
	if path := os.Getenv("IOCACHE_DOORS_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(report.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// worst names the case a figure came from, if any.
func worst(what string) string {
	if what == "" {
		return ""
	}
	return " (" + what + ")"
}

func trimReply(r string) string {
	if len(r) > 60 {
		return r[:60] + "…"
	}
	return r
}

// A string RESTOREd from a small LZF payload is decoded once, into the allocation its record
// keeps: 128 MB from a 1 MB payload grows the server by about 128 MB. It used to be decoded into
// scratch space, copied into a value and copied again into the keyspace (a gigabyte took 3.1 GB
// and 25 s; redis-server 1.06 GB and 5 s). With maxmemory below the string's length, it is
// refused before anything is allocated.
func TestRestoreLargeStringHeldOnce(t *testing.T) {
	const n = 128 * mb
	payload := rdb.Dump(rdb.Value{Type: keyspace.TypeString, Str: make([]byte, n)}, rdb.Options{Compression: true})
	addr, cmd := startProcess(t)
	guard := guardRSS(cmd, 1536*mb)
	base := readRSS(cmd.Process.Pid)
	if r, err := rawDo(addr, time.Minute, []byte("RESTORE"), []byte("big"), []byte("0"), payload); err != nil || r != "+OK" {
		t.Fatalf("RESTORE of %d MB from a %d KB payload: %q %v", n/mb, len(payload)>>10, r, err)
	}
	peak := guard.finish() - base
	t.Logf("RESTORE of %d MB from %d KB: RSS grew by at most %d MB", n/mb, len(payload)>>10, peak/mb)
	if peak > n*5/4 {
		t.Errorf("RSS grew by %d MB for a %d MB string", peak/mb, n/mb)
	}
	if r, _ := rawDo(addr, 5*time.Second, []byte("STRLEN"), []byte("big")); r != ":"+strconv.Itoa(n) {
		t.Errorf("STRLEN: %q", r)
	}
	if r, _ := rawDo(addr, 5*time.Second, []byte("CONFIG"), []byte("SET"), []byte("maxmemory"), []byte("64mb")); r != "+OK" {
		t.Fatalf("CONFIG SET maxmemory: %q", r)
	}
	_, _ = rawDo(addr, 5*time.Second, []byte("DEL"), []byte("big"))
	guard = guardRSS(cmd, 1536*mb)
	base = readRSS(cmd.Process.Pid)
	r, _ := rawDo(addr, time.Minute, []byte("RESTORE"), []byte("big"), []byte("0"), payload)
	if peak := guard.finish() - base; r != "-OOM command not allowed when used memory > 'maxmemory'." || peak > 32*mb {
		t.Errorf("RESTORE of %d MB under maxmemory 64mb: %q, RSS grew by %d MB", n/mb, r, peak/mb)
	}
}
