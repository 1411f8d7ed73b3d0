package controllers

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/engine"
	"github.com/iocache/iocache/server/testpeer"
)

// A roll names the start-only directives that changed, came or went; live ones are not a reason.
func TestRollReasonsNameStartOnlyDirectives(t *testing.T) {
	prev := "port 6379\ndatabases 32\nrename-command FLUSHALL \"\"\nhz 20\n"
	cur := "port 6379\ndatabases 64\ntcp-backlog 1024\n"
	got := rollReasons("img", "img", nil, nil, prev, cur)
	for _, want := range []string{"databases 32 -> 64 (read at start only)", `tcp-backlog "" -> 1024 (read at start only)`,
		`rename-command FLUSHALL "" removed (read at start only)`} {
		if !strings.Contains(got, want) {
			t.Errorf("rollReasons = %q, want it to say %q", got, want)
		}
	}
	if strings.Contains(got, "hz") {
		t.Errorf("rollReasons = %q names hz, which changes live", got)
	}
}

// startPlainServer runs an in-process iocache-server on a loopback port, with Redis's defaults.
func startPlainServer(t *testing.T) string {
	t.Helper()
	cfg := config.New()
	cfg.Port = testpeer.FreePort(t)
	cfg.Bind = []string{"127.0.0.1"}
	cfg.LogLevel = "warning"
	cfg.Save = ""
	cfg.MetricsPort = 0
	s, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Serve()
	}()
	select {
	case <-s.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("iocache-server did not become ready")
	}
	t.Cleanup(func() {
		s.Shutdown()
		<-done
	})
	return s.Addr()
}

// applyLive against a real server: directives set, changed, and dropped (set back to the default
// the directive table gives), each read back; client-output-buffer-limit, whose config-file value
// may name one class only, ends as the file would give it, the other classes at their defaults.
func TestApplyLiveSetsAndDrops(t *testing.T) {
	addr := startPlainServer(t)
	ctx := context.Background()
	r := &CacheInstanceReconciler{}
	rdb := serverClient(addr, serverCreds{})
	defer func() { _ = rdb.Close() }()
	get := func(name string) string {
		t.Helper()
		v, err := rdb.ConfigGet(ctx, name).Result()
		if err != nil {
			t.Fatal(err)
		}
		return v[name]
	}
	steps := []struct {
		live    [][2]string
		dropped []string
		want    map[string]string
		changes []string
	}{
		{[][2]string{{"hz", "20"}, {"latency-monitor-threshold", "100"}, {"client-output-buffer-limit", "pubsub 64mb 16mb 60"}}, nil,
			map[string]string{"hz": "20", "latency-monitor-threshold": "100", "client-output-buffer-limit": "normal 0 0 0 slave 268435456 67108864 60 pubsub 67108864 16777216 60"},
			[]string{"hz 10 -> 20", "latency-monitor-threshold 0 -> 100"}},
		{[][2]string{{"hz", "20"}, {"client-output-buffer-limit", "normal 1mb 1mb 0"}}, []string{"latency-monitor-threshold"},
			map[string]string{"hz": "20", "latency-monitor-threshold": "0", "client-output-buffer-limit": "normal 1048576 1048576 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"},
			[]string{"latency-monitor-threshold 100 -> 0 (the default: no longer in the config)"}},
		{[][2]string{{"maxmemory-policy", "allkeys-lru"}}, []string{"hz", "client-output-buffer-limit"},
			map[string]string{"hz": "10", "maxmemory-policy": "allkeys-lru", "client-output-buffer-limit": "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"},
			[]string{"hz 20 -> 10 (the default: no longer in the config)"}},
	}
	for i, s := range steps {
		changes, err := r.applyLive(ctx, addr, serverCreds{}, s.live, s.dropped)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		for name, want := range s.want {
			if got := get(name); got != want {
				t.Errorf("step %d: CONFIG GET %s = %q, want %q", i, name, got, want)
			}
		}
		for _, want := range s.changes {
			if !slices.Contains(changes, want) {
				t.Errorf("step %d: changes %q do not say %q", i, changes, want)
			}
		}
		// Done: the same again changes nothing.
		if again, err := r.applyLive(ctx, addr, serverCreds{}, s.live, s.dropped); err != nil || len(again) > 0 {
			t.Errorf("step %d again: %q, %v; want no change", i, again, err)
		}
	}
}
