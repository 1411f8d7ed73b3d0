package engine

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/testpeer"
)

func scrape(t testing.TB, addr string) []byte {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("scrape: %d %v", resp.StatusCode, err)
	}
	return b
}

// metricValue finds one sample by name and labels in the text exposition format.
func metricValue(t testing.TB, body []byte, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parsing exposition: %v", err)
	}
	f, ok := families[name]
	if !ok {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		for k, v := range labels {
			found := false
			for _, lp := range m.GetLabel() {
				if lp.GetName() == k && lp.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

func TestMetricsMatchTraffic(t *testing.T) {
	port := testpeer.FreePort(t)
	s, addr := startServer(t, func(c *config.Config) { c.IOThreads = 2; c.MetricsPort = port })
	c := redisClient(t, addr, 2)
	for i := 0; i < 100; i++ {
		c.Set(ctx(), "k"+strconv.Itoa(i), i, 0)
	}
	for i := 0; i < 50; i++ {
		c.Get(ctx(), "k"+strconv.Itoa(i))
	}
	c.Get(ctx(), "missing")
	c.Do(ctx(), "NOSUCH")
	body := scrape(t, s.MetricsAddr())
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"redis_up", nil, 1},
		{"redis_commands_total", map[string]string{"cmd": "set"}, 100},
		{"redis_commands_total", map[string]string{"cmd": "get"}, 51},
		{"iocache_command_duration_seconds", map[string]string{"cmd": "set"}, 100},
		{"redis_keyspace_hits_total", nil, 50},
		{"redis_keyspace_misses_total", nil, 1},
		{"redis_db_keys", map[string]string{"db": "db0"}, 100},
		{"redis_errors_total", map[string]string{"err": "ERR"}, 1},
		{"iocache_io_thread_reads_total", map[string]string{"thread": "0"}, 0},
		{"iocache_info", map[string]string{"io_threads": "2"}, 1},
		{"redis_rdb_last_bgsave_status", nil, 1},
		{"redis_rdb_bgsave_in_progress", nil, 0},
		{"redis_rdb_current_bgsave_duration_seconds", nil, -1},
		{"redis_aof_enabled", nil, 0},
		{"redis_aof_last_write_status", nil, 1},
	}
	for _, ch := range checks {
		got, ok := metricValue(t, body, ch.name, ch.labels)
		if !ok || got != ch.want {
			t.Errorf("%s%v = %v (found %v), want %v", ch.name, ch.labels, got, ok, ch.want)
		}
	}
	// Every request went through I/O thread 1.
	if got, _ := metricValue(t, body, "iocache_io_thread_reads_total", map[string]string{"thread": "1"}); got < 152 {
		t.Errorf("io thread 1 reads = %v, want at least the 152 requests sent", got)
	}
	if got, _ := metricValue(t, body, "redis_net_input_bytes_total", nil); got < 152*20 {
		t.Errorf("redis_net_input_bytes_total = %v", got)
	}
	promtool := testpeer.Require(t, "promtool")
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	} else if len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("promtool check metrics has findings:\n%s", out)
	}
}

// TestMetricsFollowBind: with `bind 127.0.0.1 -::1` (the stock redis.conf line) /metrics is
// served on loopback only, IPv4 and (where the machine has it) IPv6, never on every interface;
// with no loopback-only bind it keeps serving all.
func TestMetricsFollowBind(t *testing.T) {
	port := testpeer.FreePort(t)
	s, _ := startServer(t, func(c *config.Config) { c.Bind = []string{"127.0.0.1", "-::1"}; c.MetricsPort = port })
	if len(s.metrics.lns) == 0 {
		t.Fatal("no metrics listener")
	}
	for _, ln := range s.metrics.lns {
		host, _, _ := net.SplitHostPort(ln.Addr().String())
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			t.Errorf("metrics listening on %s with bind 127.0.0.1 -::1", ln.Addr())
		}
	}
	if body := scrape(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); !bytes.Contains(body, []byte("redis_up")) {
		t.Errorf("no redis_up in /metrics on loopback:\n%.300s", body)
	}
	port2 := testpeer.FreePort(t)
	s2, _ := startServer(t, func(c *config.Config) { c.Bind = []string{"*"}; c.MetricsPort = port2 })
	if host, _, _ := net.SplitHostPort(s2.MetricsAddr()); !net.ParseIP(host).IsUnspecified() {
		t.Errorf("bind * serves metrics on %s, want every interface", s2.MetricsAddr())
	}
}
