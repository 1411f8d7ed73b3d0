package bench

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// bigResult is a result as large as plausible: six tests and a 64-thread server.
func bigResult() *Result {
	r := &Result{Version: SchemaVersion, Tool: "iocache-bench", OK: true, Target: "iocache-0.iocache.default.svc:6379"}
	r.Config.Tests = testNames
	for _, n := range testNames {
		r.Tests = append(r.Tests, Test{Name: n, Requests: 123456789, OpsPerSec: 123456.78, ErrorSample: strings.Repeat("e", 200),
			Commands: []Command{{Name: "set", Requests: 1}, {Name: "get", Requests: 2}}})
	}
	info := func() *Info {
		in := &Info{Raw: strings.Repeat("x", 5000), CPU: &ServerCPU{Sys: 1}}
		for i := 0; i < 64; i++ {
			in.Threads = append(in.Threads, IOThread{ID: i, Clients: 100, Reads: 1 << 40, Writes: 1 << 40, CPUs: fmt.Sprint(i)})
		}
		return in
	}
	r.Server = &Server{Before: info(), After: info(), Delta: info()}
	return r
}

func TestCompactJSONFitsTerminationMessage(t *testing.T) {
	r := bigResult()
	b := CompactJSON(r)
	if len(b) > MaxCompactBytes {
		t.Fatalf("compact JSON is %d bytes", len(b))
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !back.Truncated || back.Version != SchemaVersion || len(back.Tests) != len(testNames) {
		t.Errorf("truncated %v version %d tests %d", back.Truncated, back.Version, len(back.Tests))
	}
	if r.Server.Before.Raw == "" || len(r.Server.After.Threads) != 64 {
		t.Error("CompactJSON changed its argument")
	}
	if !strings.Contains(string(FullJSON(r)), `"raw"`) {
		t.Error("full JSON lacks raw INFO")
	}
}

func TestCompactJSONKeepsThreadsWhenSmall(t *testing.T) {
	r := bigResult()
	r.Tests = r.Tests[:1]
	for _, in := range []*Info{r.Server.Before, r.Server.After, r.Server.Delta} {
		in.Threads = in.Threads[:4]
	}
	var back Result
	b := CompactJSON(r)
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Truncated || len(back.Server.After.Threads) != 4 || back.Server.After.Raw != "" {
		t.Errorf("%d bytes, truncated %v: %s", len(b), back.Truncated, b)
	}
}

// TestJSONFieldNames pins the schema's field names: the operator parses them.
func TestJSONFieldNames(t *testing.T) {
	b := CompactJSON(bigResult())
	for _, f := range []string{`"version"`, `"ok"`, `"ops_per_sec"`, `"latency_ms"`, `"p50"`, `"p90"`, `"p99"`,
		`"p99_9"`, `"max"`, `"errors"`, `"duration_sec"`, `"client_cpu"`, `"tests"`, `"server"`} {
		if !strings.Contains(string(b), f) {
			t.Errorf("compact JSON lacks %s", f)
		}
	}
}
