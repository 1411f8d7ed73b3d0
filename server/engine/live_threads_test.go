package engine

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/iocache/iocache/server/cpuset"
)

// TestLiveThreadLayoutUnderLoad changes io-threads (1 → 4 → 2 → 1, several times) and the four
// cpulists while real clients keep the server busy: redis-benchmark, go-redis pipelines, MULTI,
// pub/sub, clients blocked in BLPOP, MONITOR and CLIENT PAUSE. Every step must show in INFO
// threads and in the kernel's affinity of each thread, and no client may see an error or lose,
// duplicate or reorder anything. The server runs as its own process, since pinning threads
// inside the test process would pin the test runner too.
func TestLiveThreadLayoutUnderLoad(t *testing.T) {
	allowed, err := cpuset.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	if len(allowed) < 2 {
		t.Skip("needs at least 2 CPUs")
	}
	a, b := strconv.Itoa(allowed[0]), strconv.Itoa(allowed[1])
	addr, _ := startProcess(t, "--io-threads", "1", "--io-threads-activation", "always")
	exerciseLiveLayout(t, addr, allowed, [][]string{
		{"server_cpulist", a + "-" + b, "bio_cpulist", b, "aof_rewrite_cpulist", b, "bgsave_cpulist", b},
		{"server_cpulist", a, "bio_cpulist", b, "aof_rewrite_cpulist", b, "bgsave_cpulist", b},
		{"server_cpulist", b, "bio_cpulist", a, "aof_rewrite_cpulist", a, "bgsave_cpulist", a},
		{"server_cpulist", "", "bio_cpulist", "", "aof_rewrite_cpulist", "", "bgsave_cpulist", ""},
	})
}

// TestLiveIOThreadsInProcess is the same exercise without pinning, inside the test process, so
// that the race detector sees the hand-offs of moving connections; it also switches the
// activation policy, which moves connections between the main thread and I/O threads by load.
func TestLiveIOThreadsInProcess(t *testing.T) {
	allowed, err := cpuset.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	_, addr := startServer(t, nil)
	exerciseLiveLayout(t, addr, allowed, [][]string{{"io-threads-activation", "always"}, {"io-threads-activation", "load"}})
}

func exerciseLiveLayout(t *testing.T, addr string, allowed []int, layouts [][]string) {
	// Long timeouts: the machine may be loaded, and the final checks read long lists.
	admin := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, PoolSize: 2, DisableIdentity: true, ReadTimeout: 30 * time.Second})
	t.Cleanup(func() { admin.Close() })

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var failures []string
	var failMu sync.Mutex
	fail := func(format string, args ...any) {
		failMu.Lock()
		defer failMu.Unlock()
		if len(failures) < 20 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	newClient := func() *redis.Client {
		// No retries: a dropped connection must show as an error, not be papered over.
		return redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, PoolSize: 2, DisableIdentity: true, ReadTimeout: 10 * time.Second})
	}

	// Pipelines: each worker's INCR replies must count up by one, in order.
	const pipeWorkers, depth = 4, 16
	var pipeRounds [pipeWorkers]int64
	for w := 0; w < pipeWorkers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := newClient()
			defer c.Close()
			key, list := "pipe:"+strconv.Itoa(w), "pipelist:"+strconv.Itoa(w)
			var n int64
			for !stopped() {
				p := c.Pipeline()
				incrs := make([]*redis.IntCmd, depth)
				for i := range incrs {
					incrs[i] = p.Incr(ctx(), key)
					p.RPush(ctx(), list, n+int64(i)+1)
				}
				if _, err := p.Exec(ctx()); err != nil {
					fail("pipeline worker %d: %v", w, err)
					return
				}
				for i, cmd := range incrs {
					if cmd.Val() != n+int64(i)+1 {
						fail("pipeline worker %d: INCR replied %d, want %d", w, cmd.Val(), n+int64(i)+1)
						return
					}
				}
				n += depth
				pipeRounds[w]++
			}
		}(w)
	}

	// MULTI: both counters move together, inside one transaction each time.
	var multiRounds int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		c := newClient()
		defer c.Close()
		for !stopped() {
			var x, y *redis.IntCmd
			_, err := c.TxPipelined(ctx(), func(p redis.Pipeliner) error {
				x = p.Incr(ctx(), "multi:x")
				y = p.Incr(ctx(), "multi:y")
				return nil
			})
			if err != nil {
				fail("MULTI: %v", err)
				return
			}
			multiRounds++
			if x.Val() != multiRounds || y.Val() != multiRounds {
				fail("MULTI round %d: x=%d y=%d", multiRounds, x.Val(), y.Val())
				return
			}
		}
	}()

	// Pub/sub: the subscriber sees every message once, in publishing order.
	sub := newClient()
	defer sub.Close()
	ps := sub.Subscribe(ctx(), "live")
	if _, err := ps.Receive(ctx()); err != nil {
		t.Fatal(err)
	}
	var published, received atomic.Int64
	pubDone := make(chan struct{})
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer close(pubDone)
		c := newClient()
		defer c.Close()
		for i := int64(1); !stopped(); i++ {
			if err := c.Publish(ctx(), "live", i).Err(); err != nil {
				fail("PUBLISH: %v", err)
				return
			}
			published.Store(i)
		}
	}()
	subDone := make(chan struct{})
	go func() {
		defer wg.Done()
		defer close(subDone)
		idle := 0
		for {
			msg, err := ps.ReceiveTimeout(ctx(), time.Second)
			if err != nil {
				var ne net.Error
				if isClosed(pubDone) && received.Load() == published.Load() {
					return
				}
				if idle++; !errors.As(err, &ne) || !ne.Timeout() || idle == 10 {
					fail("subscriber: %v after %d of %d messages", err, received.Load(), published.Load())
					return
				}
				continue
			}
			idle = 0
			m, ok := msg.(*redis.Message)
			if !ok {
				continue
			}
			want := received.Load() + 1
			if m.Payload != strconv.FormatInt(want, 10) {
				fail("subscriber: got message %s, want %d", m.Payload, want)
				return
			}
			received.Store(want)
			select {
			case <-pubDone:
				if want == published.Load() {
					return
				}
			default:
			}
		}
	}()

	// Blocked clients: three consumers wait in BLPOP; every pushed item arrives exactly once.
	const consumers = 3
	var pushed atomic.Int64
	var popped sync.Map
	var poppedN atomic.Int64
	for i := 0; i < consumers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c := newClient()
			defer c.Close()
			for {
				if stopped() && poppedN.Load() == pushed.Load() {
					return
				}
				v, err := c.BLPop(ctx(), time.Second, "queue").Result()
				if errors.Is(err, redis.Nil) {
					continue
				}
				if err != nil {
					fail("BLPOP consumer %d: %v", i, err)
					return
				}
				if _, dup := popped.LoadOrStore(v[1], i); dup {
					fail("BLPOP: item %s delivered twice", v[1])
				}
				poppedN.Add(1)
			}
		}(i)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		c := newClient()
		defer c.Close()
		for i := int64(1); !stopped(); i++ {
			if err := c.RPush(ctx(), "queue", i).Err(); err != nil {
				fail("RPUSH queue: %v", err)
				return
			}
			pushed.Store(i)
			time.Sleep(time.Millisecond)
		}
	}()

	// MONITOR: a raw connection that must keep receiving lines and never an error.
	mon, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer mon.Close()
	fmt.Fprint(mon, "MONITOR\r\n")
	var monitored atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		br := bufio.NewReader(mon)
		for !stopped() {
			_ = mon.SetReadDeadline(time.Now().Add(10 * time.Second))
			l, err := br.ReadString('\n')
			if err != nil {
				if stopped() {
					return // the test closed the connection: no more commands come
				}
				fail("MONITOR: %v", err)
				return
			}
			if strings.HasPrefix(l, "-") {
				fail("MONITOR: %s", l)
				return
			}
			monitored.Add(1)
		}
	}()

	// redis-benchmark: every INCR it sends must be counted exactly once.
	const benchRequests = 200000
	bench := exec.Command("redis-benchmark", "-h", "127.0.0.1", "-p", addr[strings.LastIndexByte(addr, ':')+1:],
		"-n", strconv.Itoa(benchRequests), "-c", "20", "-P", "4", "-q", "INCR", "bench:counter")
	var benchOut strings.Builder
	bench.Stdout, bench.Stderr = &benchOut, &benchOut
	if err := bench.Start(); err != nil {
		t.Fatal(err)
	}
	benchDone := make(chan error, 1)
	go func() { benchDone <- bench.Wait() }()

	// The switcher: io-threads and layouts of the four lists, each step checked.
	steps := 0
	for round := 0; round < 10; round++ {
		for _, n := range []int{1, 4, 2, 1} {
			layout := layouts[steps%len(layouts)]
			args := append([]any{"CONFIG", "SET", "io-threads", n}, toAny(layout)...)
			if err := admin.Do(ctx(), args...).Err(); err != nil {
				t.Fatalf("step %d: %v: %v", steps, args, err)
			}
			checkLayout(t, admin, n, layout, allowed)
			if steps%5 == 4 {
				// A short write pause while the layout changes must hold, not break, clients.
				if err := admin.Do(ctx(), "CLIENT", "PAUSE", "30", "WRITE").Err(); err != nil {
					t.Fatal(err)
				}
			}
			steps++
			time.Sleep(100 * time.Millisecond)
		}
	}
	// A list the process cannot use is refused and changes nothing.
	err = admin.Do(ctx(), "CONFIG", "SET", "server_cpulist", "1000", "io-threads", "3").Err()
	if err == nil || !strings.Contains(err.Error(), "server_cpulist") {
		t.Errorf("CONFIG SET server_cpulist 1000: %v", err)
	}
	if v := admin.ConfigGet(ctx(), "io-threads").Val()["io-threads"]; v != "1" {
		t.Errorf("io-threads after a refused CONFIG SET: %s, want 1", v)
	}

	select {
	case err := <-benchDone:
		if err != nil {
			t.Errorf("redis-benchmark: %v\n%s", err, benchOut.String())
		}
	case <-time.After(2 * time.Minute):
		_ = bench.Process.Kill()
		t.Errorf("redis-benchmark did not finish")
	}
	close(stop)
	// Once every worker has stopped no command may follow to wake the MONITOR
	// reader, so end its read instead of waiting for its deadline.
	_ = mon.Close()
	wg.Wait()
	<-subDone
	ps.Close()

	for _, f := range failures {
		t.Error(f)
	}
	if strings.Contains(strings.ToLower(benchOut.String()), "error") {
		t.Errorf("redis-benchmark reported errors:\n%s", benchOut.String())
	}
	if v := admin.Get(ctx(), "bench:counter").Val(); v != strconv.Itoa(benchRequests) {
		t.Errorf("bench:counter = %s, want %d", v, benchRequests)
	}
	for w := 0; w < pipeWorkers; w++ {
		want := pipeRounds[w] * depth
		if v := admin.Get(ctx(), "pipe:"+strconv.Itoa(w)).Val(); v != strconv.FormatInt(want, 10) {
			t.Errorf("pipe:%d = %s, want %d", w, v, want)
		}
		items, err := admin.LRange(ctx(), "pipelist:"+strconv.Itoa(w), 0, -1).Result()
		if err != nil {
			t.Errorf("LRANGE pipelist:%d: %v", w, err)
		}
		if int64(len(items)) != want {
			t.Errorf("pipelist:%d has %d items, want %d", w, len(items), want)
		}
		for i, v := range items {
			if v != strconv.Itoa(i+1) {
				t.Errorf("pipelist:%d[%d] = %s: out of order", w, i, v)
				break
			}
		}
	}
	if poppedN.Load() != pushed.Load() || admin.LLen(ctx(), "queue").Val() != 0 {
		t.Errorf("queue: pushed %d, popped %d, left %d", pushed.Load(), poppedN.Load(), admin.LLen(ctx(), "queue").Val())
	}
	if received.Load() != published.Load() || published.Load() == 0 {
		t.Errorf("pub/sub: published %d, received %d", published.Load(), received.Load())
	}
	if monitored.Load() == 0 {
		t.Error("MONITOR saw nothing")
	}
	if multiRounds == 0 {
		t.Error("no MULTI round ran")
	}
	t.Logf("%d layout changes; %d pipelined INCRs, %d transactions, %d messages, %d queue items, %d monitor lines",
		steps, sum(pipeRounds[:])*depth, multiRounds, published.Load(), pushed.Load(), monitored.Load())
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func sum(xs []int64) int64 {
	var n int64
	for _, x := range xs {
		n += x
	}
	return n
}

// checkLayout waits until INFO threads shows io-threads n with every client on a serving thread
// and no thread left draining, then checks each thread's CPUs against the kernel and against
// what the lists ask for.
func checkLayout(t *testing.T, c *redis.Client, n int, layout []string, allowed []int) {
	t.Helper()
	want := map[string]string{}
	for i := 0; i < len(layout); i += 2 {
		want[layout[i]] = layout[i+1]
	}
	serverCPUs, _ := cpuset.Parse(want["server_cpulist"])
	if want["server_cpulist"] == "" {
		serverCPUs = allowed
	}
	bioCPUs := want["bio_cpulist"]
	if bioCPUs == "" {
		bioCPUs = cpuset.Format(allowed)
	}
	for _, name := range []string{"server_cpulist", "bio_cpulist", "aof_rewrite_cpulist", "bgsave_cpulist", "io-threads-activation"} {
		if _, ok := want[name]; !ok {
			want[name] = c.ConfigGet(context.Background(), name).Val()[name]
		}
	}
	var last, why string
	deadline := time.Now().Add(5 * time.Second)
	for {
		info := c.Info(context.Background(), "threads", "clients").Val()
		last = info
		th := parseInfoThreads(t, info)
		connected, _ := strconv.ParseInt(regexpFind(`connected_clients:(\d+)`, info), 10, 64)
		active, _ := strconv.Atoi(regexpFind(`io_threads_active:(\d+)`, info))
		ok := len(th) == n && !strings.Contains(info, "state=draining") && active < n
		if want["io-threads-activation"] == "always" && active != n-1 {
			ok = false
		}
		why = "thread count or draining"
		var total int64
		for id := 0; id < len(th) && ok; id++ {
			tl, found := th[id]
			if !found {
				ok = false
				break
			}
			total += tl.clients
			// Only serving threads hold sockets: the main thread while no I/O thread is active,
			// else the active I/O threads.
			if (active > 0 && (id == 0 || id > active)) && tl.clients != 0 || active == 0 && id > 0 && tl.clients != 0 {
				ok = false
				why = fmt.Sprintf("io_thread_%d holds %d clients with %d I/O threads active", id, tl.clients, active)
			}
			wantCPUs := cpuset.Format(serverCPUs)
			if want["server_cpulist"] != "" && len(serverCPUs) >= n {
				wantCPUs = strconv.Itoa(serverCPUs[id])
			}
			got, err := cpuset.ThreadAffinity(tl.tid)
			if err != nil || tl.cpus != wantCPUs || cpuset.Format(got) != wantCPUs {
				ok = false
				why = fmt.Sprintf("io_thread_%d: INFO cpus %s, kernel %s (%v), want %s", id, tl.cpus, cpuset.Format(got), err, wantCPUs)
			}
		}
		if ok {
			why = fmt.Sprintf("clients %d of %d connected, bio %q want %q", total, connected, regexpFind(`bio_thread:cpus=([0-9,-]+),tid`, info), bioCPUs)
		}
		if ok && total == connected && regexpFind(`bio_thread:cpus=([0-9,-]+),tid`, info) == bioCPUs {
			for _, name := range []string{"server_cpulist", "bio_cpulist", "aof_rewrite_cpulist", "bgsave_cpulist"} {
				if got := c.ConfigGet(context.Background(), name).Val()[name]; got != want[name] {
					t.Errorf("CONFIG GET %s = %q, want %q", name, got, want[name])
				}
			}
			if got := c.ConfigGet(context.Background(), "io-threads").Val()["io-threads"]; got != strconv.Itoa(n) {
				t.Errorf("CONFIG GET io-threads = %s, want %d", got, n)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("layout io-threads %d %v not in effect within 5s (%s); last INFO:\n%s", n, layout, why, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
