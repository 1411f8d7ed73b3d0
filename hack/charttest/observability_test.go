package charttest

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"sigs.k8s.io/yaml"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/engine"
	"github.com/iocache/iocache/server/testpeer"
)

const (
	rulesFile     = chartDir + "/files/prometheus-rules.yaml"
	dashboardsDir = chartDir + "/dashboards"
)

// Expressions collects every PromQL expression in the shipped dashboards and alerting rules.
func expressions(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	var rules struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Alert string `json:"alert"`
				Expr  string `json:"expr"`
			} `json:"rules"`
		} `json:"groups"`
	}
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &rules); err != nil {
		t.Fatal(err)
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			out["rule "+r.Alert] = r.Expr
		}
	}
	files, _ := filepath.Glob(filepath.Join(dashboardsDir, "*.json"))
	if len(files) < 2 {
		t.Fatalf("expected the instance and operator dashboards in %s", dashboardsDir)
	}
	for _, f := range files {
		var d struct {
			Panels []struct {
				Title   string `json:"title"`
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			} `json:"panels"`
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, p := range d.Panels {
			for i, tg := range p.Targets {
				out[fmt.Sprintf("%s panel %q #%d", filepath.Base(f), p.Title, i)] = tg.Expr
			}
		}
	}
	return out
}

// grafanaVars replaces dashboard variables with values PromQL accepts.
var grafanaVars = strings.NewReplacer("$__rate_interval", "1m", "$namespace", ".*", "$pod", ".*")

// TestPromQLParses runs every expression through promtool, as recording rules.
func TestPromQLParses(t *testing.T) {
	promtool := testpeer.Require(t, "promtool")
	if out, err := exec.Command(promtool, "check", "rules", rulesFile).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	var b strings.Builder
	b.WriteString("groups:\n- name: dashboards\n  rules:\n")
	exprs := expressions(t)
	keys := sortedKeys(exprs)
	for i, k := range keys {
		e, _ := json.Marshal(grafanaVars.Replace(exprs[k]))
		fmt.Fprintf(&b, "  - record: dashboard:expr_%d\n    expr: %s\n", i, e)
	}
	path := filepath.Join(t.TempDir(), "dashboards.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput(); err != nil {
		t.Fatalf("a dashboard expression does not parse: %v\n%s", err, out)
	}
}

func sortedKeys(m map[string]string) []string {
	k := make([]string, 0, len(m))
	for x := range m {
		k = append(k, x)
	}
	sort.Strings(k)
	return k
}

var metricName = regexp.MustCompile(`\b(redis_[a-z0-9_]+|iocache_[a-z0-9_]+|controller_runtime_[a-z0-9_]+|workqueue_[a-z0-9_]+)`)

// operatorMetric reports whether a metric comes from the operator; the controllers' tests check
// those against the operator's registry.
func operatorMetric(name string) bool {
	for _, p := range []string{"controller_runtime_", "workqueue_", "iocache_instance_", "iocache_benchmark_", "iocache_backup_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// TestDashboardsUseExportedServerMetrics checks every server metric the dashboards and rules name
// against a live scrape of iocache-server, so renaming a metric breaks the build.
func TestDashboardsUseExportedServerMetrics(t *testing.T) {
	_, metricsAddr, _ := startServer(t, 2)
	families := scrapeFamilies(t, metricsAddr)
	// A replica exports the link to its primary besides: one that waits for its primary will do.
	_, replicaMetrics, _ := startServer(t, 1, func(c *config.Config) { c.StartAsReplica = true })
	maps.Copy(families, scrapeFamilies(t, replicaMetrics))
	for where, expr := range expressions(t) {
		for _, name := range metricName.FindAllString(expr, -1) {
			if operatorMetric(name) {
				continue
			}
			base := name
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if strings.HasSuffix(name, suffix) {
					if _, ok := families[strings.TrimSuffix(name, suffix)]; ok {
						base = strings.TrimSuffix(name, suffix)
					}
				}
			}
			if _, ok := families[base]; !ok {
				t.Errorf("%s uses %s, which iocache-server does not export", where, name)
			}
		}
	}
}

// startServer runs an in-process iocache-server (maxmemory 64 MB, noeviction) with metrics and
// some traffic; it returns the client and metrics addresses and a function that stops the server.
func startServer(t *testing.T, ioThreads int, mutate ...func(*config.Config)) (string, string, func()) {
	t.Helper()
	cfg := config.New()
	cfg.Port = 0
	cfg.Bind = []string{"127.0.0.1"}
	cfg.IOThreads = ioThreads
	cfg.LogLevel = "warning"
	cfg.MetricsPort = testpeer.FreePort(t)
	cfg.MaxMemory = 64 << 20
	cfg.Save = ""
	for _, m := range mutate {
		m(cfg)
	}
	s, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { s.Serve(); close(done) }()
	<-s.Ready()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			s.Shutdown()
			<-done
		}
	}
	t.Cleanup(stop)
	conn, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// SET, GET hit and miss, an expiring key and a blocking pop that times out.
	io.WriteString(conn, "SET a 1\r\nGET a\r\nGET b\r\nSET e 1 PX 1\r\nBLPOP nothing 0.01\r\nNOSUCH\r\n")
	buf := make([]byte, 4096)
	conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	got := ""
	for !strings.Contains(got, "-ERR unknown") {
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("reading replies: %v (got %q)", err, got)
		}
		got += string(buf[:n])
	}
	return s.Addr(), s.MetricsAddr(), stop
}

func scrapeFamilies(t *testing.T, addr string) map[string]bool {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for name := range fams {
		out[name] = true
	}
	return out
}

// TestAlertsFireInPrometheus runs Debian's Prometheus against a live server with the shipped rules
// (their "for" durations shortened) and checks that memory-near-max fires while the server is
// full and instance-down fires once it stops.
func TestAlertsFireInPrometheus(t *testing.T) {
	promBin := testpeer.Require(t, "prometheus")
	addr, metricsAddr, stop := startServer(t, 1)
	fillToMaxmemory(t, addr)
	dir := t.TempDir()
	rules, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	fast := regexp.MustCompile(`(?m)^(\s+)for: \S+$`).ReplaceAllString(string(rules), "${1}for: 0s")
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), []byte(fast), 0o644); err != nil {
		t.Fatal(err)
	}
	promPort := testpeer.FreePort(t)
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [rules.yaml]
scrape_configs:
  - job_name: iocache-server
    static_configs:
      - targets: [%q]
        labels: {namespace: test, pod: cache-0}
`, metricsAddr)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(promBin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", promPort), "--log.level=warn")
	cmd.Dir = dir
	logFile, _ := os.Create(filepath.Join(dir, "prometheus.log"))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	api := fmt.Sprintf("http://127.0.0.1:%d", promPort)
	waitAlert(t, api, "IOCacheMemoryNearMax", dir)
	stop()
	waitAlert(t, api, "IOCacheInstanceDown", dir)
}

// fillToMaxmemory writes 1 KB values until the server refuses writes with OOM (noeviction): used
// memory is then at maxmemory, above the alert's 90%.
func fillToMaxmemory(t *testing.T, addr string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	val := strings.Repeat("v", 1000)
	r := make([]byte, 1<<16)
	for i := 0; i < 200; i++ {
		var b strings.Builder
		for j := 0; j < 500; j++ {
			fmt.Fprintf(&b, "SET fill:%d:%d %s\r\n", i, j, val)
		}
		io.WriteString(conn, b.String())
		got := 0
		replies := ""
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		for got < 500 {
			n, err := conn.Read(r)
			if err != nil {
				t.Fatal(err)
			}
			chunk := string(r[:n])
			replies = chunk
			got += strings.Count(chunk, "\r\n")
		}
		if strings.Contains(replies, "-OOM") {
			return
		}
	}
	t.Fatal("the server never reached maxmemory")
}

// waitAlert polls Prometheus's alerts API until the named alert is firing.
func waitAlert(t *testing.T, api, name, dir string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(api + "/api/v1/alerts")
		if err == nil {
			var body struct {
				Data struct {
					Alerts []struct {
						Labels map[string]string `json:"labels"`
						State  string            `json:"state"`
					} `json:"alerts"`
				} `json:"data"`
			}
			json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			for _, a := range body.Data.Alerts {
				if a.Labels["alertname"] == name && a.State == "firing" {
					return
				}
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
	t.Fatalf("alert %s did not fire within 60s; Prometheus log:\n%s", name, log)
}
