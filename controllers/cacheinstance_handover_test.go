package controllers

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

// startPasswordServer runs an in-process iocache-server without snapshots, as a pod without
// persistence runs, protected by password.
func startPasswordServer(t *testing.T, password string) string {
	t.Helper()
	addr := startPlainServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2})
	defer rdb.Close()
	if err := rdb.ConfigSet(context.Background(), "requirepass", password).Err(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// writeLoad is clients that keep writing numbered keys through route (standing in for the
// client Service), each remembering what the server acknowledged, and the longest time no write
// succeeded.
type writeLoad struct {
	route    atomic.Pointer[string]
	password string
	stop     chan struct{}
	wg       sync.WaitGroup
	mu       sync.Mutex
	acked    map[string]string
	last     time.Time
	maxGap   time.Duration
	failures int
}

func startWriteLoad(addr, password string, writers int) *writeLoad {
	w := &writeLoad{password: password, stop: make(chan struct{}), acked: map[string]string{}, last: time.Now()}
	w.route.Store(&addr)
	for i := range writers {
		w.wg.Add(1)
		go w.write(i)
	}
	return w
}

func (w *writeLoad) write(id int) {
	defer w.wg.Done()
	ctx := context.Background()
	var rdb *redis.Client
	at := ""
	defer func() {
		if rdb != nil {
			_ = rdb.Close()
		}
	}()
	for seq := 0; ; seq++ {
		select {
		case <-w.stop:
			return
		default:
		}
		if addr := *w.route.Load(); addr != at {
			if rdb != nil {
				_ = rdb.Close()
			}
			at = addr
			rdb = redis.NewClient(&redis.Options{Addr: addr, Password: w.password, Protocol: 2, MaxRetries: -1,
				PoolSize: 1, DialTimeout: time.Second, ReadTimeout: 15 * time.Second})
		}
		key, value := fmt.Sprintf("load:%d:%d", id, seq), strconv.Itoa(seq)
		err := rdb.Set(ctx, key, value, 0).Err()
		now := time.Now()
		w.mu.Lock()
		if err == nil {
			w.acked[key] = value
			w.maxGap = max(w.maxGap, now.Sub(w.last))
			w.last = now
		} else {
			w.failures++
		}
		w.mu.Unlock()
		if err != nil {
			time.Sleep(5 * time.Millisecond)
		}
	}
}

func (w *writeLoad) finish() {
	close(w.stop)
	w.wg.Wait()
}

// The surge's data path with real servers: a new, empty server becomes a replica of the one
// serving (as the surge pod does), catches up, and takes the writes over by the same hand-over a
// replicated instance's switchover uses, while clients write without pause through a route that
// moves when the hand-over says. Every write the old server acknowledged, and every key it held,
// is on the new one; the old one follows it as a replica.
func TestSurgeHandOverLosesNoAcknowledgedWrite(t *testing.T) {
	const password = "surge-password"
	creds := serverCreds{password: password}
	ctx := context.Background()
	oldAddr, surgeAddr := startPasswordServer(t, password), startPasswordServer(t, password)

	old := redis.NewClient(&redis.Options{Addr: oldAddr, Password: password, Protocol: 2})
	defer old.Close()
	pipe := old.Pipeline()
	const userKeys = 10000
	for i := range userKeys {
		pipe.Set(ctx, "user:"+strconv.Itoa(i), i, 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}

	load := startWriteLoad(oldAddr, password, 4)
	time.Sleep(200 * time.Millisecond)
	if err := replicateFrom(ctx, surgeAddr, oldAddr, creds, false); err != nil {
		t.Fatal(err)
	}
	if err := waitCaughtUp(ctx, surgeAddr, oldAddr, creds, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	recorded, routed := int64(-1), false
	start := time.Now()
	offset, err := handOver(ctx, oldAddr, surgeAddr, creds, handOverSteps{
		record:   func(o int64) error { recorded = o; return nil },
		promoted: func() error { return nil },
		route:    func() { load.route.Store(&surgeAddr); routed = true },
	})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	load.finish()
	if recorded != offset || !routed {
		t.Errorf("record saw offset %d (hand-over %d), route called %v", recorded, offset, routed)
	}

	surge := redis.NewClient(&redis.Options{Addr: surgeAddr, Password: password, Protocol: 2})
	defer surge.Close()
	if role, _, _, _, err := readRole(ctx, surgeAddr, creds); err != nil || role != cachev1alpha1.RolePrimary {
		t.Fatalf("the surge server is %s (%v), want the primary", role, err)
	}
	lost := 0
	for k, v := range load.acked {
		if got, err := surge.Get(ctx, k).Result(); err != nil || got != v {
			lost++
		}
	}
	if n := surge.DBSize(ctx).Val(); n < int64(userKeys+len(load.acked)) {
		t.Errorf("DBSIZE %d on the new primary, want at least %d", n, userKeys+len(load.acked))
	}
	if lost > 0 {
		t.Errorf("%d of %d acknowledged writes lost", lost, len(load.acked))
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		role, _, primary, linkUp, err := readRole(ctx, oldAddr, creds)
		if err == nil && role == cachev1alpha1.RoleReplica && primary == surgeAddr && linkUp {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the old server is %s of %s (link up %v, %v), want a replica of the new one", role, primary, linkUp, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("hand-over at offset %d in %s: %d acknowledged writes, 0 lost; %d attempts failed and were retried; longest time without a successful write %s",
		offset, took.Round(time.Millisecond), len(load.acked), load.failures, load.maxGap.Round(time.Millisecond))
}

// A hand-over whose replica cannot catch up lifts the pause and reports a server step's error, so
// the caller retries instead of failing the pass.
func TestHandOverToAStrangerGivesUp(t *testing.T) {
	const password = "surge-password"
	creds := serverCreds{password: password}
	ctx := context.Background()
	oldAddr, other := startPasswordServer(t, password), startPasswordServer(t, password)
	_, err := handOver(ctx, oldAddr, other, creds, handOverSteps{
		record:   func(int64) error { t.Error("recorded a hand-over to a server that is no replica"); return nil },
		promoted: func() error { return nil },
		route:    func() {},
	})
	var se *serverStepError
	if !errors.As(err, &se) {
		t.Fatalf("error %v, want a server step's", err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: oldAddr, Password: password, Protocol: 2, ReadTimeout: time.Second})
	defer rdb.Close()
	if err := rdb.Set(ctx, "after", "1", 0).Err(); err != nil {
		t.Errorf("writes still paused after the hand-over gave up: %v", err)
	}
}
