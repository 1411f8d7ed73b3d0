package engine

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/iocache/iocache/server/config"
)

// The Redis 7.0 parameters iocache honours (see server/config/noeffect_test.go's list), each
// shown doing what it says.

// latency-tracking-info-percentiles chooses INFO latencystats' percentiles, in its order.
func TestLatencyTrackingInfoPercentiles(t *testing.T) {
	_, addr := startServer(t, nil)
	p := dialPeer(t, addr)
	p.do("CONFIG", "SET", "latency-tracking-info-percentiles", "99.99 50")
	p.do("SET", "k", "v")
	if info := p.do("INFO", "latencystats"); !regexpMatch(`latency_percentiles_usec_set:p99\.99=\d+\.\d{3},p50=\d+\.\d{3}\r\n`, info) {
		t.Errorf("INFO latencystats: %q", info)
	}
	p.do("CONFIG", "SET", "latency-tracking-info-percentiles", "")
	if info := p.do("INFO", "latencystats"); !strings.Contains(info, "latency_percentiles_usec_set:\r\n") {
		t.Errorf("INFO latencystats with no percentiles: %q", info)
	}
}

func regexpMatch(pattern, s string) bool { return regexpFind("("+pattern+")", s) != "" }

// maxmemory-eviction-tenacity sets an eviction pass's time budget as Redis's evictionTimeLimitUs.
func TestEvictionTenacityBudget(t *testing.T) {
	for tenacity, want := range map[string]int64{"0": 0, "1": 50_000, "10": 500_000, "11": 575_000, "100": 1<<63 - 1} {
		c := config.New()
		if err := c.SetLive("maxmemory-eviction-tenacity", tenacity); err != nil {
			t.Fatal(err)
		}
		probe := &Server{cfg: c}
		if got := probe.evictionBudgetNs(); got != want {
			t.Errorf("tenacity %s: budget %dns, want %d", tenacity, got, want)
		}
	}
}

// shutdown-on-sigterm and shutdown-on-sigint decide whether a signal's shutdown saves, whatever
// the save points say.
func TestShutdownOnSignal(t *testing.T) {
	for _, tc := range []struct {
		setting, save string
		sig           syscall.Signal
		saved         bool
	}{
		{"default", "", syscall.SIGTERM, false},
		{"save", "", syscall.SIGTERM, true},
		{"nosave", "3600 1", syscall.SIGTERM, false},
		{"save now", "", syscall.SIGINT, true},
		{"default", "3600 1", syscall.SIGINT, true},
	} {
		dir := t.TempDir()
		s, addr := startServer(t, func(c *config.Config) { c.Dir = dir; c.Save = tc.save })
		p := dialPeer(t, addr)
		name := "shutdown-on-sigterm"
		if tc.sig == syscall.SIGINT {
			name = "shutdown-on-sigint"
		}
		p.do("CONFIG", "SET", name, tc.setting)
		p.do("SET", "k", "v")
		s.shutdownSignal.Store(int32(tc.sig))
		s.io.WakeMain()
		waitFor(t, "the shutdown", func() bool { return s.stopping.Load() })
		_, err := os.Stat(filepath.Join(dir, "dump.rdb"))
		if saved := err == nil; saved != tc.saved {
			t.Errorf("%s %q with save %q: saved %v, want %v", name, tc.setting, tc.save, saved, tc.saved)
		}
	}
}

// replica-announce-ip and -port are what the primary lists for the replica, replica-announced is
// what the replica's INFO says, and bind-source-addr is the address its link leaves from.
func TestReplicaAnnouncesAndBinds(t *testing.T) {
	_, primaryAddr := startServer(t, nil)
	host, port, _ := net.SplitHostPort(primaryAddr)
	_, addr := startServer(t, func(c *config.Config) {
		c.ReplicaOf = host + " " + port
		for name, v := range map[string]string{"replica-announce-ip": "10.1.2.3", "replica-announce-port": "7777",
			"bind-source-addr": "127.0.0.2", "replica-announced": "no"} {
			if err := c.Set(name, []string{v}, false); err != nil {
				t.Fatal(err)
			}
		}
	})
	primary, replica := dialPeer(t, primaryAddr), dialPeer(t, addr)
	waitFor(t, "the replica's link", func() bool {
		return strings.Contains(replica.do("INFO", "replication"), "master_link_status:up")
	})
	if info := primary.do("INFO", "replication"); !strings.Contains(info, "slave0:ip=10.1.2.3,port=7777,") {
		t.Errorf("the primary's INFO replication: %q", info)
	}
	if info := replica.do("INFO", "replication"); !strings.Contains(info, "replica_announced:0\r\n") {
		t.Errorf("the replica's INFO replication: %q", info)
	}
	if list := primary.do("CLIENT", "LIST"); !strings.Contains(list, "addr=127.0.0.2:") {
		t.Errorf("the replica's link does not come from bind-source-addr: %q", list)
	}
}
