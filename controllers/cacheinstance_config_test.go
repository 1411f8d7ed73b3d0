package controllers

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	serverconfig "github.com/iocache/iocache/server/config"
)

func fixed(n int32) func(*cachev1alpha1.CacheInstance) {
	return func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.IOThreads = cachev1alpha1.IOThreadsSpec{Policy: cachev1alpha1.IOThreadsFixed, Count: ptr.To(n)}
	}
}

func affinity(a cachev1alpha1.CPUAffinitySpec) func(*cachev1alpha1.CacheInstance) {
	return func(ci *cachev1alpha1.CacheInstance) { ci.Spec.CPUAffinity = &a }
}

// The ¾ rule as the issue states it: 1 for 1–2 cores, 3 for 4, 6 for 8, never more than the cores,
// capped where more I/O threads stop helping.
func TestAutoIOThreads(t *testing.T) {
	for _, tc := range []struct{ cores, want int32 }{
		{1, 1}, {2, 1}, {3, 2}, {4, 3}, {6, 4}, {8, 6}, {12, 9}, {16, 12}, {21, 15}, {22, 16}, {32, 16}, {64, 16},
	} {
		cfg, err := renderConfig(newInstance(tc.cores))
		if err != nil {
			t.Fatalf("%d cores: %v", tc.cores, err)
		}
		if cfg.IOThreads != tc.want {
			t.Errorf("%d cores: io-threads %d, want %d", tc.cores, cfg.IOThreads, tc.want)
		}
	}
}

// The whole Auto table, 1 to 64 cores, in one golden file: io-threads, the four lists and maxmemory.
func TestAutoLayoutGolden(t *testing.T) {
	var b strings.Builder
	for cores := int32(1); cores <= 64; cores++ {
		cfg, err := renderConfig(newInstance(cores))
		if err != nil {
			t.Fatalf("%d cores: %v", cores, err)
		}
		if cfg.IOThreads < 1 || cfg.IOThreads > cores {
			t.Errorf("%d cores: io-threads %d outside 1..cores", cores, cfg.IOThreads)
		}
		l := cfg.CPULists
		fmt.Fprintf(&b, "cores=%-2d io-threads=%-2d server=%-5s bio=%-5s aof_rewrite=%-5s bgsave=%s\n",
			cores, cfg.IOThreads, l.Server, l.Bio, l.AOFRewrite, l.BGSave)
	}
	golden(t, "config/auto-1-64-cores.golden", []byte(b.String()))
}

// configCases cover every policy and each spec field that reaches the config file.
var configCases = []struct {
	name string
	ci   *cachev1alpha1.CacheInstance
}{
	{"auto-1-core", newInstance(1)},
	{"auto-2-cores", newInstance(2)},
	{"auto-4-cores", newInstance(4)},
	{"auto-8-cores", newInstance(8)},
	{"auto-64-cores", newInstance(64)},
	{"fixed-4-of-8-cores", newInstance(8, fixed(4))},
	{"fixed-all-2-cores", newInstance(2, fixed(2))},
	{"tuned-8-cores", newInstance(8, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.IOThreads.Policy = cachev1alpha1.IOThreadsTuned
	})},
	{"affinity-all-lists", newInstance(8, affinity(cachev1alpha1.CPUAffinitySpec{
		Server: "0-3", Bio: "4", AOFRewrite: "5-6", BGSave: "7",
	}))},
	{"affinity-server-only", newInstance(8, affinity(cachev1alpha1.CPUAffinitySpec{Server: "2-3"}))},
	{"affinity-bio-only", newInstance(8, affinity(cachev1alpha1.CPUAffinitySpec{Bio: "7"}))},
	{"affinity-server-everything", newInstance(4, affinity(cachev1alpha1.CPUAffinitySpec{Server: "0-3"}))},
	{"shared-500m", newInstance(1, sharedKnobs)},
	{"auth-maxmemory-extras", newInstance(4, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Memory = resource.MustParse("4Gi")
		ci.Spec.MaxMemory = ptr.To(resource.MustParse("3Gi"))
		ci.Spec.MaxMemoryPolicy = "allkeys-lfu"
		ci.Spec.Auth = &cachev1alpha1.AuthSpec{Generate: true}
		ci.Spec.Metrics.Port = 9200
		ci.Spec.Config = map[string]cachev1alpha1.ConfigValue{"client-output-buffer-limit": "pubsub 64mb 16mb 60", "hz": "20", "slowlog-max-len": "256"}
	})},
	{"persistence-rdb", newInstance(2, withRDB)},
	{"persistence-aof", newInstance(2, withRDB, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Persistence.Mode, ci.Spec.Persistence.AppendFsync = cachev1alpha1.PersistenceAOF, "always"
	})},
	{"persistence-rdb-and-aof", newInstance(2, withRDB, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Persistence.Mode = cachev1alpha1.PersistenceRDBAndAOF
	})},
	{"tls-secret", newInstance(2, withTLSSecret)},
	{"tls-cert-manager-replicated-required", newInstance(2, withTLSCertManager, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Replicas = ptr.To[int32](3)
		ci.Spec.TLS.AuthClients = cachev1alpha1.TLSAuthClientsRequired
	})},
}

func TestRenderConfigGolden(t *testing.T) {
	for _, tc := range configCases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := renderConfig(tc.ci)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "config/"+tc.name+".conf", []byte(cfg.Text))
			again, err := renderConfig(tc.ci.DeepCopy())
			if err != nil || again.Hash != cfg.Hash {
				t.Errorf("rendering the same spec twice gave hash %s then %s (%v)", cfg.Hash, again.Hash, err)
			}
		})
	}
}

// Every rendered file must load in the server's own config parser: an unknown directive or a bad
// value would stop the pod at startup.
func TestRenderedConfigLoadsInServer(t *testing.T) {
	secrets := t.TempDir()
	if err := os.WriteFile(filepath.Join(secrets, "password"), []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range configCases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := renderConfig(tc.ci)
			if err != nil {
				t.Fatal(err)
			}
			text := strings.ReplaceAll(cfg.Text, authDir, secrets)
			sc := serverconfig.New()
			if err := sc.ReadConfig(strings.NewReader(text)); err != nil {
				t.Fatalf("iocache-server refuses the rendered config: %v\n%s", err, text)
			}
			if sc.IOThreads != int(cfg.IOThreads) || sc.MaxMemory != cfg.MaxMemory || sc.CPUListMode != "relative" ||
				sc.ServerCPUList != cfg.CPULists.Server || sc.BioCPUList != cfg.CPULists.Bio ||
				sc.AOFRewriteCPUList != cfg.CPULists.AOFRewrite || sc.BGSaveCPUList != cfg.CPULists.BGSave {
				t.Errorf("server read io-threads %d maxmemory %d mode %s lists %s/%s/%s/%s; operator resolved %+v",
					sc.IOThreads, sc.MaxMemory, sc.CPUListMode, sc.ServerCPUList, sc.BioCPUList, sc.AOFRewriteCPUList, sc.BGSaveCPUList, cfg)
			}
			if tc.ci.Spec.Auth != nil && sc.RequirePass != "s3cret" {
				t.Errorf("server read password %q from requirepass-file, want the file's content", sc.RequirePass)
			}
			// With spec.tls the client port is the TLS port, and no plaintext port is open.
			port, tlsPort := serverPort, "0"
			if tc.ci.Spec.TLS != nil {
				port, tlsPort = 0, strconv.Itoa(serverPort)
			}
			if sc.MetricsPort != int(tc.ci.Spec.Metrics.Port) || sc.Port != port || sc.CompatValue("tls-port") != tlsPort || sc.Dir != dataDir {
				t.Errorf("server read metrics-port %d port %d tls-port %s dir %s", sc.MetricsPort, sc.Port, sc.CompatValue("tls-port"), sc.Dir)
			}
			if tc.ci.Spec.TLS != nil && (sc.CompatValue("tls-cert-file") != tlsCertPath || sc.CompatValue("tls-ca-cert-file") != tlsCAPath) {
				t.Errorf("server read tls-cert-file %q tls-ca-cert-file %q", sc.CompatValue("tls-cert-file"), sc.CompatValue("tls-ca-cert-file"))
			}
		})
	}
}

func TestRenderConfigResolves(t *testing.T) {
	for _, tc := range []struct {
		name          string
		ci            *cachev1alpha1.CacheInstance
		ioThreads     int32
		lists         cachev1alpha1.ResolvedCPULists
		maxMemory     int64
		tuningPending bool
	}{
		{"Auto on 8 cores: 6 threads first, background on the rest", newInstance(8), 6,
			cachev1alpha1.ResolvedCPULists{Server: "0-5", Bio: "6-7", AOFRewrite: "6-7", BGSave: "6-7"}, 966367642, false},
		{"Auto on 1 core shares it", newInstance(1), 1,
			cachev1alpha1.ResolvedCPULists{Server: "0", Bio: "0", AOFRewrite: "0", BGSave: "0"}, 966367642, false},
		{"Fixed count", newInstance(8, fixed(2)), 2,
			cachev1alpha1.ResolvedCPULists{Server: "0-1", Bio: "2-7", AOFRewrite: "2-7", BGSave: "2-7"}, 966367642, false},
		{"Tuned behaves as Auto and says it waits", newInstance(4, func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.IOThreads.Policy = cachev1alpha1.IOThreadsTuned
		}), 3, cachev1alpha1.ResolvedCPULists{Server: "0-2", Bio: "3", AOFRewrite: "3", BGSave: "3"}, 966367642, true},
		{"Auto limited by an explicit server list, background on the free cores",
			newInstance(8, affinity(cachev1alpha1.CPUAffinitySpec{Server: "4-5"})), 2,
			cachev1alpha1.ResolvedCPULists{Server: "4-5", Bio: "0-3,6-7", AOFRewrite: "0-3,6-7", BGSave: "0-3,6-7"}, 966367642, false},
		{"explicit background list next to the computed server list",
			newInstance(8, affinity(cachev1alpha1.CPUAffinitySpec{BGSave: "7"})), 6,
			cachev1alpha1.ResolvedCPULists{Server: "0-5", Bio: "6-7", AOFRewrite: "6-7", BGSave: "7"}, 966367642, false},
		{"maxMemory overrides 90%", newInstance(2, func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.MaxMemory = ptr.To(resource.MustParse("512Mi"))
		}), 1, cachev1alpha1.ResolvedCPULists{Server: "0", Bio: "1", AOFRewrite: "1", BGSave: "1"}, 512 << 20, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := renderConfig(tc.ci)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.IOThreads != tc.ioThreads || cfg.CPULists != tc.lists || cfg.MaxMemory != tc.maxMemory || cfg.TuningPending != tc.tuningPending {
				t.Errorf("got io-threads %d lists %+v maxmemory %d tuningPending %v\nwant io-threads %d lists %+v maxmemory %d tuningPending %v",
					cfg.IOThreads, cfg.CPULists, cfg.MaxMemory, cfg.TuningPending, tc.ioThreads, tc.lists, tc.maxMemory, tc.tuningPending)
			}
		})
	}
}

// Specs the schema should refuse still must not render a broken file when they reach the operator
// (an old CRD, a client that skips validation); and one rule only Go can check.
func TestRenderConfigRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		ci         *cachev1alpha1.CacheInstance
	}{
		{"background list on the computed server cores", "cpuAffinity.bio shares CPU 0-1 with the computed server list 0-5",
			newInstance(8, affinity(cachev1alpha1.CPUAffinitySpec{Bio: "0-1"}))},
		{"background list on the given server cores", "cpuAffinity.aofRewrite shares CPU 3 with cpuAffinity.server",
			newInstance(8, affinity(cachev1alpha1.CPUAffinitySpec{Server: "0-3", AOFRewrite: "3-4"}))},
		{"position beyond the cores", "cpuAffinity.server names position 8, but the instance has 8 cores",
			newInstance(8, affinity(cachev1alpha1.CPUAffinitySpec{Server: "0-8"}))},
		{"Fixed without count", "ioThreads.policy Fixed needs ioThreads.count", newInstance(4, func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.IOThreads.Policy = cachev1alpha1.IOThreadsFixed
		})},
		{"count above cores", "ioThreads.count 5 must be between 1 and spec.cores (4)", newInstance(4, fixed(5))},
		{"owned directive", "spec.config must not set IO-Threads", newInstance(4, func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.Config = map[string]cachev1alpha1.ConfigValue{"IO-Threads": "4"}
		})},
		{"value spanning lines", "spec.config hz needs a value on one line", newInstance(4, func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.Config = map[string]cachev1alpha1.ConfigValue{"hz": "10\nrequirepass x"}
		})},
		{"renaming a command the operator sends", "spec.config rename-command must not rename CONFIG", newInstance(4, func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.Config = map[string]cachev1alpha1.ConfigValue{"rename-command": `config ""`}
		})},
		{"maxMemory not below memory", "spec.maxMemory 1Gi must be positive and less than spec.memory 1Gi", newInstance(4, func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.MaxMemory = ptr.To(resource.MustParse("1Gi"))
		})},
		{"no cores", "spec.cores is 0", func() *cachev1alpha1.CacheInstance {
			ci := newInstance(1) // the schema and SetDefaults make it 1: only a bypass gives 0
			ci.Spec.Cores = 0
			return ci
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := renderConfig(tc.ci)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// Renaming a command nothing of the operator's sends is the user's choice, rendered as written.
func TestRenameCommandOfOtherCommands(t *testing.T) {
	cfg, err := renderConfig(newInstance(4, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Config = map[string]cachev1alpha1.ConfigValue{"rename-command": `FLUSHALL ""`}
	}))
	if err != nil || !strings.Contains(cfg.Text, "\nrename-command FLUSHALL \"\"\n") {
		t.Fatalf("rename-command FLUSHALL: %v\n%s", err, cfg.Text)
	}
}

func TestConfigHashFollowsContent(t *testing.T) {
	a, _ := renderConfig(newInstance(4))
	b, _ := renderConfig(newInstance(8))
	c, _ := renderConfig(newInstance(4, func(ci *cachev1alpha1.CacheInstance) { ci.Spec.PodLabels = map[string]string{"team": "a"} }))
	if a.Hash == b.Hash {
		t.Errorf("4 and 8 cores render the same hash %s", a.Hash)
	}
	if a.Hash != c.Hash {
		t.Errorf("a pod label changed the config hash (%s → %s), which would roll pods for nothing", a.Hash, c.Hash)
	}
}

// The CRD's CEL rule and ownedDirectives must refuse the same names; the rule is generated from a
// marker, so this reads the generated CRD.
func TestOwnedDirectivesMatchCRDRule(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "config", "crd", "bases", "cache.iocache.dev_cacheinstances.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema struct {
						Properties map[string]struct {
							Properties map[string]struct {
								Validations []struct {
									Rule string `json:"rule"`
								} `json:"x-kubernetes-validations"`
							} `json:"properties"`
						} `json:"properties"`
					} `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	var rule string
	for _, v := range crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["config"].Validations {
		if strings.Contains(v.Rule, "'io-threads'") {
			rule = v.Rule
		}
	}
	if rule == "" {
		t.Fatal("no CEL rule on spec.config lists the owned directives")
	}
	list := rule[strings.Index(rule, "["):strings.Index(rule, "]")]
	for _, d := range ownedDirectives {
		if !strings.Contains(list, "'"+d+"'") {
			t.Errorf("the CRD rule does not refuse %s", d)
		}
	}
	if n := strings.Count(list, "'") / 2; n != len(ownedDirectives) {
		t.Errorf("the CRD rule lists %d names, ownedDirectives %d", n, len(ownedDirectives))
	}
}

// Issue #30: adding, changing or removing a live directive in spec.config keeps the restart hash,
// so the pods stay (the live step sets it, or sets it back to the server's default); a start-only
// one changes it, and so does its value. Keys are taken case-insensitively and by alias, as the
// server takes them.
func TestRestartHashIgnoresLiveSpecConfig(t *testing.T) {
	render := func(conf map[string]cachev1alpha1.ConfigValue) *serverConfig {
		t.Helper()
		cfg, err := renderConfig(newInstance(4, func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Config = conf }))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	type config = map[string]cachev1alpha1.ConfigValue
	base := render(nil)
	for _, live := range []config{
		{"hz": "20"},
		{"hz": "20", "slowlog-log-slower-than": "5000"},
		{"latency-monitor-threshold": "100"},
		{"HZ": "20", "slave-read-only": "no"},
		{"client-output-buffer-limit": "pubsub 64mb 16mb 60"},
		{"notify-keyspace-events": "Ex", "maxmemory-clients": "10%"},
	} {
		cfg := render(live)
		if cfg.RestartHash != base.RestartHash {
			t.Errorf("spec.config %v changed the restart hash %s -> %s: a live directive must not replace the pods", live, base.RestartHash, cfg.RestartHash)
		}
		if cfg.Hash == base.Hash {
			t.Errorf("spec.config %v left the config hash as it was: the live step would not apply it", live)
		}
		for name := range live {
			if !slices.Contains(cfg.LiveNames, serverconfig.CanonicalName(name)) && !slices.Contains(cfg.LiveNames, "replica-read-only") {
				t.Errorf("spec.config %s is not among the live names %v", name, cfg.LiveNames)
			}
		}
	}
	for _, startOnly := range []config{
		{"rename-command": `FLUSHALL ""`},
		{"rename-command": `KEYS ""`},
		{"databases": "32"},
		{"databases": "32", "hz": "20"},
		{"tcp-backlog": "1024"},
	} {
		cfg := render(startOnly)
		if cfg.RestartHash == base.RestartHash {
			t.Errorf("spec.config %v kept the restart hash: the server reads it only at start, so the pods must be replaced", startOnly)
		}
		if slices.Contains(cfg.LiveNames, "rename-command") || slices.Contains(cfg.LiveNames, "databases") {
			t.Errorf("spec.config %v: a start-only directive among the live names %v", startOnly, cfg.LiveNames)
		}
	}
	// A start-only directive beside live ones: the live ones still do not count, its value does.
	a := render(config{"databases": "32"})
	if b := render(config{"databases": "32", "hz": "20", "latency-monitor-threshold": "100"}); b.RestartHash != a.RestartHash {
		t.Errorf("adding live directives beside databases changed the restart hash %s -> %s", a.RestartHash, b.RestartHash)
	}
	if b := render(config{"databases": "64"}); b.RestartHash == a.RestartHash {
		t.Error("databases 32 -> 64 kept the restart hash")
	}
}

// An instance without live spec.config directives keeps the restart hash earlier operators gave it,
// so that upgrading the operator replaces none of its pods. The value is what the operator before
// issue #30 rendered for this spec.
func TestRestartHashOfEarlierOperators(t *testing.T) {
	for _, tc := range []struct {
		conf map[string]cachev1alpha1.ConfigValue
		want string
	}{
		{nil, "8d3ec33b69e94993"},
		{map[string]cachev1alpha1.ConfigValue{"databases": "32"}, "73768ff7afc59155"},
	} {
		cfg, err := renderConfig(newInstance(4, func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Config = tc.conf }))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.RestartHash != tc.want {
			t.Errorf("spec.config %v: restart hash %s, earlier operators rendered %s", tc.conf, cfg.RestartHash, tc.want)
		}
	}
}

// LegacyRestartHash is what the operator before issue #30 (b0d1362) put on the pod template: the
// values below are its renderConfig's RestartHash for these specs, run at that commit. With a live
// directive in spec.config it differs from today's RestartHash, and the operator upgrade must
// recognise it to keep the pods.
func TestLegacyRestartHashIsWhatEarlierOperatorsRendered(t *testing.T) {
	type config = map[string]cachev1alpha1.ConfigValue
	for _, tc := range []struct {
		conf config
		want string
		live bool // the spec has a live spec.config directive: today's hash differs
	}{
		{nil, "8d3ec33b69e94993", false},
		{config{"databases": "32"}, "73768ff7afc59155", false},
		{config{"hz": "20"}, "019629b156979a7c", true},
		{config{"databases": "32", "hz": "20", "latency-monitor-threshold": "100"}, "65d9e075f4ecdf3a", true},
		{config{"HZ": "20", "slave-read-only": "no"}, "c00b6e8687a3e3f3", true},
	} {
		cfg, err := renderConfig(newInstance(4, func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Config = tc.conf }))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.LegacyRestartHash != tc.want {
			t.Errorf("spec.config %v: legacy restart hash %s, the operator at b0d1362 rendered %s", tc.conf, cfg.LegacyRestartHash, tc.want)
		}
		if differs := cfg.RestartHash != cfg.LegacyRestartHash; differs != tc.live {
			t.Errorf("spec.config %v: restart hash %s, legacy %s: they must differ exactly when a live directive is set", tc.conf, cfg.RestartHash, cfg.LegacyRestartHash)
		}
	}
}
