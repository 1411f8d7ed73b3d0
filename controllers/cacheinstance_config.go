package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/cpuset"
)

// Where the server finds its files: one projected volume at configDir holds the rendered config,
// under auth/ the password from the auth Secret and, with spec.tls, under tls/ the certificate.
const (
	configDir      = "/etc/iocache"
	configFileName = "iocache.conf"
	configPath     = configDir + "/" + configFileName
	authSubdir     = "auth"
	authDir        = configDir + "/" + authSubdir
	// tlsSubdir holds the TLS Secret's three files, under their Secret keys (cert-manager's).
	tlsSubdir    = "tls"
	tlsDir       = configDir + "/" + tlsSubdir
	tlsCertKey   = "tls.crt"
	tlsKeyKey    = "tls.key"
	tlsCAKey     = "ca.crt"
	tlsCertPath  = tlsDir + "/" + tlsCertKey
	tlsKeyPath   = tlsDir + "/" + tlsKeyKey
	tlsCAPath    = tlsDir + "/" + tlsCAKey
	dataDir      = "/data"
	serverPort   = 6379
	serverBinary = "/usr/local/bin/iocache-server"
	// benchSpaceCeiling is the most a benchmark's scratch keyspace may take: enough for the default
	// workload's 100,000 keys of 256 bytes to mostly fit, little beside a large cache.
	benchSpaceCeiling = 32 << 20
)

// ownedDirectives are rendered from other spec fields (or would break the pod: a log file on a
// read-only filesystem, daemonizing away from the container's main process), so spec.config may not
// set them. user and aclfile are refused because their passwords would sit in the ConfigMap (ACL
// users belong in Secrets), protected-mode because the operator sets it from spec.auth, the
// replication directives because the operator chooses the primary (spec.replicas), and the TLS
// listener, files and client authentication because spec.tls sets them (tls-protocols and
// tls-ciphers stay the user's), cluster mode because a node without the operator's slot map
// serves no key (docs/cluster.md; spec.shards will set it). The CRD's CEL rule on spec.config lists the same names; a test
// keeps the two in step.
var ownedDirectives = []string{
	"port", "bind", "unixsocket",
	"io-threads", "io-threads-do-reads",
	"server_cpulist", "server-cpulist", "bio_cpulist", "bio-cpulist",
	"aof_rewrite_cpulist", "aof-rewrite-cpulist", "bgsave_cpulist", "bgsave-cpulist", "cpulist-mode",
	"maxmemory", "maxmemory-policy", "benchspace-maxmemory",
	"requirepass", "requirepass-file", "masterauth", "masteruser", "replicaof", "slaveof", "start-as-replica", "user", "aclfile", "protected-mode",
	"metrics-port", "dir", "logfile", "daemonize", "supervised", "include", "pidfile", "save", "appendonly", "appendfsync",
	"tls-port", "tls-cert-file", "tls-key-file", "tls-ca-cert-file", "tls-ca-cert-dir", "tls-auth-clients", "tls-replication",
	"tls-client-cert-file", "tls-client-key-file", "cluster-enabled", "cluster-config-file",
}

// operatorCommands are the commands the operator, the probes and preStop hook, replicas and the
// benchmark Jobs send: a rename-command of one of them would leave the instance unmanageable (a
// live change failing on every pass, probes failing, replicas unable to sync), so spec.config may
// not rename them.
var operatorCommands = []string{"acl", "auth", "benchspace", "bgsave", "client", "cluster", "clustermap", "config", "hello", "info", "ping", "psync", "replconf", "replicaof", "role"}

// serverConfig is what the operator resolved from a spec: the rendered iocache.conf and the values
// status reports.
type serverConfig struct {
	IOThreads int32
	CPULists  cachev1alpha1.ResolvedCPULists
	MaxMemory int64
	// BenchSpaceMaxMemory bounds the server's bench space, where benchmark Jobs work apart from the
	// user's data: a quarter of the memory maxmemory leaves, at most benchSpaceCeiling.
	BenchSpaceMaxMemory int64
	// TuningPending is true when ioThreads.policy is Tuned but no measurement exists, so the Auto
	// value stands in.
	TuningPending bool
	Text          string
	// Hash identifies what the server reads from Text (comments left out).
	Hash string
	// RestartHash identifies the directives the server reads only at start; it goes on the pod
	// template, so that a change of them rolls the pods.
	RestartHash string
	// Live are the directives the server takes through CONFIG SET, in the order of Text: a change of
	// them is applied to the running pods.
	Live [][2]string
	// LiveNames are Live's canonical names, sorted: what status.pods[].live records, so that a
	// directive a later config drops is set back to its default.
	LiveNames []string
	// LegacyRestartHash is the restart hash operators before issue #30 put on the pod template for
	// this spec: they counted the names of every spec.config directive, live ones too. A pod that
	// carries it was made from today's start-only config; only the hashing differs, so the
	// operator brings its annotation and revision to RestartHash in place instead of replacing it
	// (cacheinstance_resize.go). Equal to RestartHash when spec.config has no live directive.
	LegacyRestartHash string
}

// renderConfig resolves io-threads, the cpulists and maxmemory from a defaulted CacheInstance and
// renders the server's config file. It is a pure function of the object. Its errors describe specs
// that the schema cannot reject, in words meant for the user.
func renderConfig(ci *cachev1alpha1.CacheInstance) (*serverConfig, error) {
	s := &ci.Spec
	cores := int(s.Cores)
	if cores < 1 {
		return nil, fmt.Errorf("spec.cores is %d; it must be at least 1", s.Cores)
	}
	if s.CPUMode == cachev1alpha1.CPUShared {
		return renderSharedConfig(ci)
	}
	aff := s.CPUAffinity
	if aff == nil {
		aff = &cachev1alpha1.CPUAffinitySpec{}
	}
	explicitServer, err := parsePositions("cpuAffinity.server", aff.Server, cores)
	if err != nil {
		return nil, err
	}
	cfg := &serverConfig{}
	ioThreads, why, err := resolveIOThreads(ci, len(explicitServer))
	if err != nil {
		return nil, err
	}
	cfg.IOThreads = int32(ioThreads)
	cfg.TuningPending = s.IOThreads.Policy == cachev1alpha1.IOThreadsTuned && tunedIOThreads(ci) == 0

	layout, err := resolveLayout(aff, cores, ioThreads, explicitServer)
	if err != nil {
		return nil, err
	}
	cfg.CPULists = cachev1alpha1.ResolvedCPULists{
		Server:     cpuset.Format(layout.Server),
		Bio:        cpuset.Format(layout.Bio),
		AOFRewrite: cpuset.Format(layout.AOFRewrite),
		BGSave:     cpuset.Format(layout.BGSave),
	}

	return finishConfig(ci, cfg, func(line func(string, ...any)) {
		line("# io-threads: %s", why)
		line("io-threads %d", cfg.IOThreads)
		line("# cpulists are positions within the CPUs the kubelet gives the pod, not CPU ids.")
		line("cpulist-mode relative")
		line("server_cpulist %s", cfg.CPULists.Server)
		line("bio_cpulist %s", cfg.CPULists.Bio)
		line("aof_rewrite_cpulist %s", cfg.CPULists.AOFRewrite)
		line("bgsave_cpulist %s", cfg.CPULists.BGSave)
	})
}

// renderSharedConfig is the config of cpuMode Shared: one thread, pinned nowhere, since the pod
// owns no CPU to pin it to.
func renderSharedConfig(ci *cachev1alpha1.CacheInstance) (*serverConfig, error) {
	cfg := &serverConfig{IOThreads: 1}
	return finishConfig(ci, cfg, func(line func(string, ...any)) {
		line("# io-threads: cpuMode Shared, %s of a core from the node's shared pool: one thread, not pinned", ci.Spec.CPU)
		line("io-threads 1")
		line("cpulist-mode relative")
	})
}

// finishConfig renders the config file around the threading lines, which threads writes, and
// resolves what the rest of the spec says.
func finishConfig(ci *cachev1alpha1.CacheInstance, cfg *serverConfig, threads func(line func(string, ...any))) (*serverConfig, error) {
	s := &ci.Spec
	var err error
	if cfg.MaxMemory, err = resolveMaxMemory(s); err != nil {
		return nil, err
	}
	cfg.BenchSpaceMaxMemory = min(benchSpaceCeiling, (s.Memory.Value()-cfg.MaxMemory)/4)
	extras, err := extraDirectives(s.Config)
	if err != nil {
		return nil, err
	}

	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	line("# Rendered by the iocache operator from the CacheInstance spec; edits are overwritten.")
	if t := s.TLS; t != nil {
		line("# spec.tls: the client port speaks TLS only; no plaintext port is open. The files come from Secret %s,", ci.TLSSecretName())
		line("# mounted read-only; after a renewal the operator has the server load them again (CONFIG SET of the same paths).")
		line("port 0")
		line("tls-port %d", serverPort)
		line("tls-cert-file %s", tlsCertPath)
		line("tls-key-file %s", tlsKeyPath)
		line("tls-ca-cert-file %s", tlsCAPath)
		line("tls-auth-clients %s", redisAuthClients(t.AuthClients))
		if replicated(ci) {
			line("# Replicas follow the primary over TLS, presenting the same certificate.")
			line("tls-replication yes")
		}
	} else {
		line("port %d", serverPort)
	}
	line("bind * -::*")
	line("dir %s", dataDir)
	if parent := ci.Labels[labelShardOf]; parent != "" {
		line("# A shard of %s: a Redis Cluster node serving the slots the operator's map gives it (CLUSTERMAP SET).", parent)
		line("cluster-enabled yes")
	}
	line("metrics-port %d", s.Metrics.Port)
	threads(line)
	line("maxmemory %d", cfg.MaxMemory)
	line("maxmemory-policy %s", s.MaxMemoryPolicy)
	line("# Benchmark Jobs work in the bench space, apart from the user's keys, within a quarter of the memory maxmemory leaves.")
	line("benchspace-maxmemory %d", cfg.BenchSpaceMaxMemory)
	if s.Auth != nil {
		line("requirepass-file %s", authFilePath(s.Auth))
		if len(s.Users) > 0 {
			line("# spec.users: the ACL file the operator renders from the users' Secrets (password hashes only).")
			line("aclfile %s", usersFilePath)
		}
	} else {
		// Without a password the server's protected mode (on by default, as in Redis) would refuse every client from outside the pod.
		line("protected-mode no")
	}
	switch p := s.Persistence; p.Mode {
	case cachev1alpha1.PersistenceRDB:
		line("# persistence RDB: snapshots on the pod's volume claim at these save points and at every shutdown, loaded at start.")
		line("save %s", p.SavePoints)
		line("appendonly no")
	case cachev1alpha1.PersistenceAOF:
		line("# persistence AOF: every write logged to the append-only file on the pod's volume claim, loaded at start.")
		line(`save ""`)
		line("appendonly yes")
		line("appendfsync %s", p.AppendFsync)
	case cachev1alpha1.PersistenceRDBAndAOF:
		line("# persistence RDBAndAOF: the append-only file, and snapshots at these save points, on the pod's volume claim.")
		line("save %s", p.SavePoints)
		line("appendonly yes")
		line("appendfsync %s", p.AppendFsync)
	default:
		line("# persistence None: memory only, no snapshots (a replaced pod starts empty).")
		line(`save ""`)
	}
	if replicated(ci) {
		line("# replicas %d: the operator chooses the primary. Every pod starts as a replica without one, so that a primary", *s.Replicas)
		line("# that restarts empty never hands its empty dataset to the replicas.")
		line("start-as-replica yes")
	}
	if len(extras) > 0 {
		line("# spec.config")
		for _, kv := range extras {
			line("%s %s", kv[0], kv[1])
		}
	}
	cfg.Text = b.String()
	cfg.Hash = directivesHash(cfg.Text)
	var restart, legacy strings.Builder
	for _, d := range directives(cfg.Text) {
		if legacyRestartDirective(d[0]) {
			fmt.Fprintf(&legacy, "%s %s\n", d[0], d[1])
		}
		if restartDirective(d[0]) {
			fmt.Fprintf(&restart, "%s %s\n", d[0], d[1])
		} else {
			cfg.Live = append(cfg.Live, d)
			cfg.LiveNames = append(cfg.LiveNames, config.CanonicalName(d[0]))
		}
	}
	slices.Sort(cfg.LiveNames)
	cfg.LiveNames = slices.Compact(cfg.LiveNames)
	// A live directive that leaves spec.config is set back to the server's default on the running
	// pods (the live step, from status.pods[].live), so only the start-only ones count here. Their
	// lines above already say it; the names are kept, as earlier operators wrote them, so that an
	// upgrade of the operator leaves the pod template of an instance without live spec.config
	// directives as it was, and its pods in place.
	var startOnly []string
	for _, kv := range extras {
		if restartDirective(kv[0]) {
			startOnly = append(startOnly, kv[0])
		}
	}
	fmt.Fprintf(&restart, "spec.config %s\n", strings.Join(startOnly, ","))
	cfg.RestartHash = directivesHash(restart.String())
	names := make([]string, len(extras))
	for i, kv := range extras {
		names[i] = kv[0]
	}
	fmt.Fprintf(&legacy, "spec.config %s\n", strings.Join(names, ","))
	cfg.LegacyRestartHash = directivesHash(legacy.String())
	return cfg, nil
}

// legacyRestartDirective is restartDirective as operators before issue #30 decided it (the name
// compared as written): kept apart so that LegacyRestartHash stays what they rendered.
func legacyRestartDirective(name string) bool {
	return !liveDirective(name) || slices.Contains(podShapeDirectives, name)
}

// restartDirective is true for a directive whose change needs a new pod: the server reads it only
// at start, or the pod template holds it (podShapeDirectives).
func restartDirective(name string) bool {
	return !liveDirective(name) || slices.Contains(podShapeDirectives, config.CanonicalName(name))
}

// liveDirective is the one place that decides whether a change of a directive is applied to the
// running pods (CONFIG SET, then CONFIG GET to verify) or rolls them. The server's own directive
// table decides, since the operator deploys the server of its own image: io-threads and the
// cpulists become live when the server takes them through CONFIG SET (issue 14); port, bind, dir,
// metrics-port, cpulist-mode and requirepass-file are read at start only.
func liveDirective(name string) bool { return config.Live(name) }

// podShapeDirectives are where the pod template puts things: the TLS port the container port,
// Services and probes name, and the paths where the volume mounts the certificate. The server
// could change them live, but they are the same for every spec, so they go with the pod template;
// a renewed certificate's content is reloaded by the TLS rotation step (cacheinstance_tls.go).
var podShapeDirectives = []string{"tls-port", "tls-cert-file", "tls-key-file", "tls-ca-cert-file"}

// directives splits a rendered config into name/value pairs, comments left out.
func directives(text string) [][2]string {
	var out [][2]string
	for _, l := range strings.Split(text, "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		name, value, _ := strings.Cut(l, " ")
		out = append(out, [2]string{name, value})
	}
	return out
}

// directivesHash hashes what the server reads from the config, leaving comments out: a comment
// that only explains a choice differently (a tuning result applied after its sweep measured the
// same setting) must not roll the pods and empty the cache.
func directivesHash(text string) string {
	h := sha256.New()
	for _, l := range strings.Split(text, "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			h.Write([]byte(l))
			h.Write([]byte{'\n'})
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// resolveIOThreads applies the policy and says in words how it chose. With an explicit server list
// of n CPUs, Auto uses at most n threads: more would only share those CPUs. A benchmark that holds
// the instance to measure a setting (status.activeBenchmark) comes first, whatever the policy: the
// spec stays the user's, and the setting it resolves to returns when the benchmark lets go. Tuned
// uses what its sweep measured for the current cores (status.tuning), else the Auto value.
func resolveIOThreads(ci *cachev1alpha1.CacheInstance, serverCPUs int) (int, string, error) {
	s := &ci.Spec
	if n := benchmarkIOThreads(ci); n > 0 {
		return int(n), fmt.Sprintf("CacheBenchmark %s measures this setting; the spec's own returns when it ends",
			ci.Status.ActiveBenchmark.Name), nil
	}
	if n := tunedIOThreads(ci); n > 0 && s.IOThreads.Policy == cachev1alpha1.IOThreadsTuned {
		return int(n), fmt.Sprintf("policy Tuned, measured best by CacheBenchmark %s on %d cores",
			ci.Status.Tuning.Benchmark, s.Cores), nil
	}
	switch s.IOThreads.Policy {
	case cachev1alpha1.IOThreadsFixed:
		if s.IOThreads.Count == nil {
			return 0, "", fmt.Errorf("ioThreads.policy Fixed needs ioThreads.count")
		}
		n := int(*s.IOThreads.Count)
		if n < 1 || n > int(s.Cores) {
			return 0, "", fmt.Errorf("ioThreads.count %d must be between 1 and spec.cores (%d)", n, s.Cores)
		}
		return n, fmt.Sprintf("policy Fixed, count %d", n), nil
	case cachev1alpha1.IOThreadsAuto, cachev1alpha1.IOThreadsTuned:
		n := cpuset.AutoIOThreads(int(s.Cores))
		why := fmt.Sprintf("policy Auto, about 3/4 of %d cores", s.Cores)
		if s.IOThreads.Policy == cachev1alpha1.IOThreadsTuned {
			why = fmt.Sprintf("policy Tuned, not measured yet, so the Auto value for %d cores", s.Cores)
		}
		if serverCPUs > 0 && n > serverCPUs {
			n = serverCPUs
			why += fmt.Sprintf(", limited to the %d CPUs of cpuAffinity.server", serverCPUs)
		}
		return n, why, nil
	default:
		return 0, "", fmt.Errorf("ioThreads.policy %q is not one of Auto, Fixed, Tuned", s.IOThreads.Policy)
	}
}

// benchmarkIOThreads is the setting a benchmark sweep asks the instance to run, or 0. A setting the
// instance's cores cannot hold is ignored (the benchmark fails it before asking).
func benchmarkIOThreads(ci *cachev1alpha1.CacheInstance) int32 {
	ab := ci.Status.ActiveBenchmark
	if ab == nil || ab.IOThreads == nil || *ab.IOThreads < 1 || *ab.IOThreads > ci.Spec.Cores {
		return 0
	}
	return *ab.IOThreads
}

// tunedIOThreads is the setting the Tuned policy's sweep chose for the current cores, or 0 when it
// has not measured them (or its sweep failed).
func tunedIOThreads(ci *cachev1alpha1.CacheInstance) int32 {
	t := ci.Status.Tuning
	if t == nil || t.ChosenIOThreads == nil || t.Cores != ci.Spec.Cores || *t.ChosenIOThreads < 1 || *t.ChosenIOThreads > ci.Spec.Cores {
		return 0
	}
	return *t.ChosenIOThreads
}

// resolveLayout fills the lists the spec leaves out. Without a server list, cpuset.AutoLayout
// decides everything; with one, background work takes the cores it leaves free. Background lists
// the user gives must not share a CPU with the server list, given or computed.
func resolveLayout(aff *cachev1alpha1.CPUAffinitySpec, cores, ioThreads int, server []int) (cpuset.Layout, error) {
	l := cpuset.AutoLayout(cores, ioThreads)
	rest := l.Bio
	serverGiven := len(server) > 0
	if serverGiven {
		l.Server = server
		rest = nil
		for i := range cores {
			if !slices.Contains(server, i) {
				rest = append(rest, i)
			}
		}
		if len(rest) == 0 {
			// As AutoLayout does when the server takes every core: share the last one.
			rest = []int{server[len(server)-1]}
		}
	}
	for _, bg := range []struct {
		field string
		list  cachev1alpha1.CPUList
		dst   *[]int
	}{
		{"cpuAffinity.bio", aff.Bio, &l.Bio},
		{"cpuAffinity.aofRewrite", aff.AOFRewrite, &l.AOFRewrite},
		{"cpuAffinity.bgsave", aff.BGSave, &l.BGSave},
	} {
		given, err := parsePositions(bg.field, bg.list, cores)
		if err != nil {
			return l, err
		}
		if len(given) == 0 {
			*bg.dst = rest
			continue
		}
		if both := cpuset.Overlap(l.Server, given); len(both) > 0 {
			origin := "cpuAffinity.server"
			if !serverGiven {
				origin = fmt.Sprintf("the computed server list %s (main and I/O threads on the first cores)", cpuset.Format(l.Server))
			}
			return l, fmt.Errorf("%s shares CPU %s with %s; background work there steals time from the threads that serve clients: set cpuAffinity.server too, or move %s",
				bg.field, cpuset.Format(both), origin, bg.field)
		}
		*bg.dst = given
	}
	return l, nil
}

// parsePositions reads a CPU list as positions within cores; "" gives nil.
func parsePositions(field string, list cachev1alpha1.CPUList, cores int) ([]int, error) {
	if list == "" {
		return nil, nil
	}
	pos, err := cpuset.Parse(string(list))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	if last := pos[len(pos)-1]; last >= cores {
		return nil, fmt.Errorf("%s names position %d, but the instance has %d cores (positions 0-%d)", field, last, cores, cores-1)
	}
	return pos, nil
}

// resolveMaxMemory leaves a tenth of the pod's memory for buffers and the runtime unless the spec
// says otherwise.
func resolveMaxMemory(s *cachev1alpha1.CacheInstanceSpec) (int64, error) {
	limit := s.Memory.Value()
	if limit <= 0 {
		return 0, fmt.Errorf("spec.memory must be positive")
	}
	if s.MaxMemory == nil {
		return limit - runtimeReserve(limit), nil
	}
	m := s.MaxMemory.Value()
	if m <= 0 || m >= limit {
		return 0, fmt.Errorf("spec.maxMemory %s must be positive and less than spec.memory %s", s.MaxMemory, &s.Memory)
	}
	return m, nil
}

// runtimeReserve is what the default maxmemory leaves of the pod's memory for everything but the
// data: the Go runtime and the garbage between collections, client buffers, the bench space. A
// tenth of it, but at least 64 MiB (a quarter of the memory, below 256 MiB): a 256 MiB pod filled to
// 90% with 1 KiB values and then benchmarked was OOM-killed, its cache lost (the e2e test, with the
// smaller per-key accounting of the dense index).
func runtimeReserve(memory int64) int64 {
	return max(memory/10, min(64<<20, memory/4))
}

// extraDirectives returns spec.config sorted by name, so the same map always renders the same file
// (and hash).
func extraDirectives(config map[string]cachev1alpha1.ConfigValue) ([][2]string, error) {
	out := make([][2]string, 0, len(config))
	for name, v := range config {
		value := string(v)
		if slices.Contains(ownedDirectives, strings.ToLower(name)) {
			return nil, fmt.Errorf("spec.config must not set %s: the operator sets it from the other spec fields", name)
		}
		if strings.ContainsAny(name, " \t\r\n#\"'") || name == "" {
			return nil, fmt.Errorf("spec.config key %q is not a directive name", name)
		}
		if strings.TrimSpace(value) == "" || strings.ContainsAny(value, "\r\n") {
			return nil, fmt.Errorf("spec.config %s needs a value on one line", name)
		}
		if strings.EqualFold(name, "rename-command") {
			if cmd := strings.ToLower(strings.Fields(value)[0]); slices.Contains(operatorCommands, cmd) {
				return nil, fmt.Errorf("spec.config rename-command must not rename %s: the operator, the probes, replicas or benchmark Jobs send it (they send %s); rename or disable other commands, such as FLUSHALL, KEYS or DEBUG",
					strings.ToUpper(cmd), strings.ToUpper(strings.Join(operatorCommands, ", ")))
			}
		}
		out = append(out, [2]string{name, value})
	}
	slices.SortFunc(out, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	return out, nil
}

// redisAuthClients is spec.tls.authClients as Redis's tls-auth-clients says it.
func redisAuthClients(a cachev1alpha1.TLSAuthClients) string {
	switch a {
	case cachev1alpha1.TLSAuthClientsRequired:
		return "yes"
	case cachev1alpha1.TLSAuthClientsOptional:
		return "optional"
	default:
		return "no"
	}
}

// authFilePath is where the server reads its password: the auth Secret's key, mounted as a file.
func authFilePath(a *cachev1alpha1.AuthSpec) string {
	return authDir + "/" + a.Key
}

// desiredConfigMap holds the rendered config file.
func desiredConfigMap(ci *cachev1alpha1.CacheInstance, cfg *serverConfig) *corev1ac.ConfigMapApplyConfiguration {
	return corev1ac.ConfigMap(configMapName(ci), ci.Namespace).
		WithLabels(objectLabels(ci)).
		WithOwnerReferences(ownerReference(ci)).
		WithData(map[string]string{configFileName: cfg.Text})
}

// reconcileConfig renders the config. A spec that cannot be rendered stops the pass without a
// retry: only a new spec can fix it, and the watch brings that.
func (r *CacheInstanceReconciler) reconcileConfig(_ context.Context, inst *instance) (*ctrl.Result, error) {
	cfg, err := renderConfig(inst.CacheInstance)
	if err != nil {
		inst.block(reasonInvalidSpec, err.Error())
		r.Recorder.Eventf(inst.CacheInstance, nil, corev1.EventTypeWarning, reasonInvalidSpec, "RenderConfig", "%s", err.Error())
		return &ctrl.Result{}, nil
	}
	inst.config = cfg
	return nil, nil
}

// reconcileConfigMap applies the ConfigMap before the StatefulSet, so pods that roll for a new hash
// find the new file.
func (r *CacheInstanceReconciler) reconcileConfigMap(ctx context.Context, inst *instance) (*ctrl.Result, error) {
	var prev corev1.ConfigMap
	if err := r.Get(ctx, client.ObjectKey{Namespace: inst.Namespace, Name: configMapName(inst.CacheInstance)}, &prev); err == nil {
		inst.previousConfig = prev.Data[configFileName]
	} else if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading ConfigMap: %w", err)
	}
	if err := r.Apply(ctx, desiredConfigMap(inst.CacheInstance, inst.config), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
		return nil, fmt.Errorf("applying ConfigMap: %w", err)
	}
	return nil, nil
}
