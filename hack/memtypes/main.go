// Command memtypes measures the memory each data type takes in iocache-server and in Debian's
// redis-server, side by side in one run: many keys that each hold a small collection (the
// compact encodings), and one collection of many elements (the large ones). Every row starts a
// fresh server of each kind, loads the same pipelined commands into both, and reports the growth
// of resident memory (VmRSS) and of INFO's used_memory per key or per element, with the
// encoding OBJECT ENCODING answers. `make bench-memory` runs it and writes docs/memory-types.md.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

type kind string

const (
	redis   kind = "redis-server"
	iocache kind = "iocache-server"
)

type server struct {
	cmd  *exec.Cmd
	conn net.Conn
	r    *bufio.Reader
	w    *bufio.Writer
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fatalf("%v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func start(k kind, bin string) *server {
	port := freePort()
	args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"}
	if k == redis {
		args = append(args, "--protected-mode", "no")
	} else {
		args = append(args, "--metrics-port", "0")
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		fatalf("starting %s: %v", bin, err)
	}
	for i := 0; i < 200; i++ {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			return &server{cmd: cmd, conn: c, r: bufio.NewReaderSize(c, 1<<16), w: bufio.NewWriterSize(c, 1<<16)}
		}
		time.Sleep(25 * time.Millisecond)
	}
	fatalf("%s did not start", bin)
	return nil
}

func (s *server) stop() {
	_ = s.conn.Close()
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}

func (s *server) rss() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		fatalf("%v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			kb, _ := strconv.ParseInt(strings.Fields(l)[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// send writes one command in RESP.
func (s *server) send(args ...string) {
	fmt.Fprintf(s.w, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(s.w, "$%d\r\n%s\r\n", len(a), a)
	}
}

// reply reads one reply and returns its first line (bulk strings: their content).
func (s *server) reply() string {
	line, err := s.r.ReadString('\n')
	if err != nil {
		fatalf("reading a reply: %v", err)
	}
	line = strings.TrimRight(line, "\r\n")
	switch line[0] {
	case '-':
		fatalf("error reply: %s", line)
	case '$':
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return ""
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(s.r, b); err != nil {
			fatalf("%v", err)
		}
		return string(b[:n])
	}
	return line
}

// call sends one command and returns its reply.
func (s *server) call(args ...string) string {
	s.send(args...)
	if err := s.w.Flush(); err != nil {
		fatalf("%v", err)
	}
	return s.reply()
}

func (s *server) usedMemory() int64 {
	for _, l := range strings.Split(s.call("INFO", "memory"), "\r\n") {
		if v, ok := strings.CutPrefix(l, "used_memory:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// load sends n commands made by gen, pipelined, reading replies as it goes.
func (s *server) load(n int, gen func(i int) []string) {
	done := make(chan struct{})
	go func() {
		for i := 0; i < n; i++ {
			s.reply()
		}
		close(done)
	}()
	for i := 0; i < n; i++ {
		s.send(gen(i)...)
	}
	if err := s.w.Flush(); err != nil {
		fatalf("%v", err)
	}
	<-done
}

// row is one measurement: commands commands made by gen, then bytes per unit over units.
type row struct {
	name     string
	commands int
	units    int
	gen      func(i int) []string
	key      string // a key to ask OBJECT ENCODING about
}

type result struct {
	rss, used, purged float64
	encoding          string
	idle, warmed      int64 // resident bytes at start and after the warm-up
}

func measure(k kind, bin string, r row) result {
	s := start(k, bin)
	defer s.stop()
	s.call("PING")
	time.Sleep(200 * time.Millisecond)
	idle := s.rss()
	// Warm up with a twentieth of the row's commands on keys of their own, kept, so that what the
	// first writes of a kind cost once per process (code paged in, buffers, the first pages of the
	// allocator's size classes) is not spread over the elements measured: the figure is the cost
	// of one more key or element, for both servers alike. The idle and warmed-up sizes are
	// reported apart.
	s.load(max(1, r.commands/20), func(i int) []string {
		args := r.gen(i)
		args[1] = "warm:" + args[1]
		return args
	})
	time.Sleep(200 * time.Millisecond)
	rss0, used0 := s.rss(), s.usedMemory()
	s.load(r.commands, r.gen)
	time.Sleep(500 * time.Millisecond)
	rss1, used1 := s.rss(), s.usedMemory()
	enc := s.call("OBJECT", "ENCODING", r.key)
	// MEMORY PURGE: jemalloc gives dirty pages back; iocache runs a full collection that returns
	// freed memory (in the background: give it time).
	s.call("MEMORY", "PURGE")
	time.Sleep(time.Second)
	rss2 := s.rss()
	return result{
		rss:      float64(rss1-rss0) / float64(r.units),
		used:     float64(used1-used0) / float64(r.units),
		purged:   float64(rss2-rss0) / float64(r.units),
		encoding: enc,
		idle:     idle,
		warmed:   rss0,
	}
}

func smallRows(keys, elems int) []row {
	pairs := func(i int, cmd string, elem func(j int) []string) []string {
		args := []string{cmd, fmt.Sprintf("key:%012d", i)}
		for j := 0; j < elems; j++ {
			args = append(args, elem(j)...)
		}
		return args
	}
	key0 := fmt.Sprintf("key:%012d", 0)
	return []row{
		{"hash", keys, keys, func(i int) []string {
			return pairs(i, "HSET", func(j int) []string { return []string{fmt.Sprint("field:", j), fmt.Sprint("value:", i%1000+j)} })
		}, key0},
		{"set of strings", keys, keys, func(i int) []string {
			return pairs(i, "SADD", func(j int) []string { return []string{fmt.Sprint("member:", i%1000+j)} })
		}, key0},
		{"set of integers", keys, keys, func(i int) []string {
			return pairs(i, "SADD", func(j int) []string { return []string{strconv.Itoa(i%1000*10 + j)} })
		}, key0},
		{"sorted set", keys, keys, func(i int) []string {
			return pairs(i, "ZADD", func(j int) []string { return []string{strconv.Itoa(j), fmt.Sprint("member:", i%1000+j)} })
		}, key0},
		{"list", keys, keys, func(i int) []string {
			return pairs(i, "RPUSH", func(j int) []string { return []string{fmt.Sprint("element:", i%1000+j)} })
		}, key0},
	}
}

func largeRows(elems int) []row {
	const batch = 100
	cmds := elems / batch
	many := func(cmd string, elem func(i int) []string) func(int) []string {
		return func(c int) []string {
			args := []string{cmd, "big"}
			for i := c * batch; i < (c+1)*batch; i++ {
				args = append(args, elem(i)...)
			}
			return args
		}
	}
	return []row{
		{"hash", cmds, elems, many("HSET", func(i int) []string { return []string{fmt.Sprint("field:", i), fmt.Sprint("value:", i)} }), "big"},
		{"set", cmds, elems, many("SADD", func(i int) []string { return []string{fmt.Sprint("member:", i)} }), "big"},
		{"sorted set", cmds, elems, many("ZADD", func(i int) []string { return []string{strconv.Itoa(i), fmt.Sprint("member:", i)} }), "big"},
		{"list", cmds, elems, many("RPUSH", func(i int) []string { return []string{fmt.Sprint("element:", i)} }), "big"},
	}
}

func table(b *strings.Builder, unit string, rows []row, redisBin, ioBin string) (worst float64, base [2]result) {
	fmt.Fprintf(b, "| type | redis-server B/%s | iocache B/%s | ratio (RSS) | after MEMORY PURGE redis / iocache | used_memory redis / iocache | encoding redis / iocache |\n|---|---:|---:|---:|---:|---:|---|\n", unit, unit)
	for _, r := range rows {
		rr := measure(redis, redisBin, r)
		ir := measure(iocache, ioBin, r)
		if base[0].idle == 0 {
			base = [2]result{rr, ir}
		}
		ratio := ir.rss / rr.rss
		worst = max(worst, ratio)
		fmt.Fprintf(b, "| %s | %.1f | %.1f | %.2f× | %.1f / %.1f | %.1f / %.1f | %s / %s |\n", r.name, rr.rss, ir.rss, ratio, rr.purged, ir.purged, rr.used, ir.used, rr.encoding, ir.encoding)
		fmt.Fprintf(os.Stderr, "memtypes: %-16s %s redis %.0f B, iocache %.0f B (%.2f×); after MEMORY PURGE %.0f / %.0f B\n", r.name, unit, rr.rss, ir.rss, ratio, rr.purged, ir.purged)
	}
	return worst, base
}

// layout says where iocache's bytes go, from the code's layout (server/keyspace), so a reader can
// tell what the measured figures are made of.
const layout = `
## Where iocache's bytes go

Every key, whatever its type: a record in the DB's arena (16 bytes of header, then the key), in
pointer-free pages the collector does not scan, rounded up to the arena's size class (8-byte steps
to 128, 16 to 256, then four classes per power of two); a slot in the DB's index (a Go swiss map
of 32-bit hash to position, 9 bytes a slot at 7/8 load at most); 8 bytes in the DB's dense list
(SCAN, sampling). A string keeps its value in the record after the key. So does a **compact
collection** of up to 2 KiB: its packed bytes follow the key in the record, and it has no Go
object, no allocation and no table slot of its own (commands see it through pooled views;
server/keyspace/inline.go). The compact forms:

- **hash, listpack** (up to hash-max-listpack-entries fields, each of up to
  hash-max-listpack-value bytes): a 4-byte count, then each field and value as a uvarint length
  (1 byte up to 127) and the bytes, in insertion order.
- **set of integers (intset)**: a byte for the width, then the members sorted, 2, 4 or 8 bytes
  each, as Redis's intset.
- **sorted set, listpack**: a 4-byte count, then each member (length and bytes) and its score
  (1 byte for small integers, a uvarint for integers up to 2^52, 9 bytes for any other double),
  ordered by (score, member).
- **list of one node**: an 8-byte header, then the elements with a boundary before the first,
  between each two and after the last, each boundary holding the XOR of the lengths on either
  side of it (0 beyond the ends), so the node is walked from either end knowing the length of
  the element just passed. A boundary is 1 byte when both neighbours are under 128 bytes, else 6
  (a fixed width, so that a pop's rewrite of the boundary next to the popped element never grows
  into it): n+1 bytes of overhead for n short elements, about 1 byte each where Redis's listpack
  spends 2 (an encoding byte and a backlen). Format and reasons: server/keyspace/list_node.go.

A collection past those (converted, or grown past 2 KiB) is a Go object in the DB's object table
(16 bytes there, its header object of 32 to 48 bytes) with its elements:

- **quicklist** (list of several nodes): a slice of nodes, each of up to list-max-listpack-size
  (8 KiB by default, header included, exactly a Go size class), laid out as above; once a list
  has eight nodes, its new full nodes are carved side by side from blocks of up to 64 KiB (a
  quarter of its nodes), because Go keeps a span record for each 8 KiB allocation, 3% of the
  node; an element larger than a node gets a node of its own. For elements
  element:N (13.9 bytes on average over a million) that is 15.0 bytes per element as
  List.Bytes counts it, where a length before and after each element (as Redis's listpack
  keeps them) took 16.0.
- **hashtable (hash, set)**: entries packed in 32 KiB pages, found through a Go map from a 32-bit
  hash to a 4-byte position.
- **skiplist (sorted set)**: that table from member to score (1 byte for small integers), and a
  B+tree ordered by (score, member) whose leaves are 1 KiB slices of packed entries and whose
  inner nodes keep each child's count, for ranks in O(log n).

Resident memory also holds what the Go collector has not yet reclaimed: the tables above grow by
doubling, and until the next collection the old arrays are garbage (with GOGC=100 the heap may
reach twice what is live between collections; in a pod, the soft limit tied to the container's
limit makes the collector work harder instead of letting it). The used_memory column is iocache's
own accounting of these structures; the RSS column is what counts.
`

func mb(n int64) float64 { return float64(n) / 1e6 }

func fatalf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "memtypes: "+format+"\n", a...)
	os.Exit(1)
}

func main() {
	redisBin := flag.String("redis-server", "redis-server", "redis-server to compare with")
	ioBin := flag.String("iocache-server", "bin/iocache-server", "iocache-server binary")
	keys := flag.Int("keys", 200000, "keys for the small-collection rows")
	elems := flag.Int("elements", 10, "elements in each small collection")
	large := flag.Int("large", 1000000, "elements of the large-collection rows (a multiple of 100)")
	out := flag.String("out", "", "also write the report to this file")
	flag.Parse()
	version := strings.TrimSpace(func() string {
		b, _ := exec.Command(*redisBin, "--version").Output()
		return string(b)
	}())
	var b strings.Builder
	fmt.Fprintf(&b, "# Memory per key and per element, every type\n\nGenerated by `make bench-memory` (`go run ./hack/memtypes`) on %s, %d CPUs, %s; %s.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), runtime.NumCPU(), runtime.Version(), version)
	b.WriteString("Each row starts a fresh server of each kind with default settings, warms it up with a twentieth of the same commands on keys of its own, then sends both the row's pipelined commands and divides the growth of resident memory (VmRSS, what a pod is billed for) by the keys or elements written: the cost of one more key or element. What a server costs once, before and at its first writes, is given apart below the tables. used_memory is INFO's own figure. Keys are `key:NNNNNNNNNNNN`. Small collections: one command per key with all its elements (fields `field:J` with values `value:N`, members `member:N`, integers below 10,000, scores 0–9, list elements `element:N`). Large: one key, 100 elements per command.\n\n")
	fmt.Fprintf(&b, "## %d keys, each a collection of %d small elements\n\n", *keys, *elems)
	w1, base := table(&b, "key", smallRows(*keys, *elems), *redisBin, *ioBin)
	fmt.Fprintf(&b, "\n## One collection of %d elements\n\n", *large)
	w2, _ := table(&b, "element", largeRows(*large), *redisBin, *ioBin)
	fmt.Fprintf(&b, "\nHighest ratio: small collections %.2f×, large %.2f×.\n", w1, w2)
	fmt.Fprintf(&b, "\nWhat a server costs before its data (first row): resident at start, redis-server %.1f MB, iocache %.1f MB; after the warm-up's first writes, %.1f MB and %.1f MB.\n",
		mb(base[0].idle), mb(base[1].idle), mb(base[0].warmed), mb(base[1].warmed))
	b.WriteString(layout)
	fmt.Print(b.String())
	if *out != "" {
		if err := os.WriteFile(*out, []byte(b.String()), 0o644); err != nil {
			fatalf("%v", err)
		}
	}
}
