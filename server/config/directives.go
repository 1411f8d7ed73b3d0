package config

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// directive is one configuration name: how to read its value from arguments, how to print it for
// CONFIG GET, and whether CONFIG SET may change it while the server runs.
type directive struct {
	name    string
	aliases []string
	mutable bool
	// protected directives name files the server writes; like Redis 7.0's protected configs,
	// CONFIG SET refuses them unless enable-protected-configs is yes.
	protected bool
	set       func(c *Config, args []string) error
	get       func(c *Config) string
	// multiArg directives take more than one argument (save, client-output-buffer-limit,
	// rename-command).
	multiArg bool
	// hidden directives, like Redis's HIDDEN_CONFIG ones, answer CONFIG GET only by their exact
	// name, not a pattern.
	hidden bool
	// effect is what a running server must do when the directive changes (effects.go).
	effect Effect
	// fileOnly directives (rename-command) exist only in a config file or on the command line:
	// CONFIG GET does not list them and CONFIG SET does not know them, as in Redis.
	fileOnly bool
}

// errInvalid is the cause used when save points do not parse, in Redis's words.
var errInvalid = errors.New("Invalid save parameters")

// alias adds Redis's older names of a directive (the ziplist spellings of Redis 6).
func alias(d directive, names ...string) directive {
	d.aliases = append(d.aliases, names...)
	return d
}

func hide(d directive) directive {
	d.hidden = true
	return d
}

func intDirective(name string, mutable bool, min, max int64, field func(*Config) *int) directive {
	return directive{name: name, mutable: mutable,
		set: func(c *Config, a []string) error {
			v, err := strconv.ParseInt(a[0], 10, 64)
			if err != nil {
				return fmt.Errorf("argument couldn't be parsed into an integer")
			}
			if v < min || v > max {
				return fmt.Errorf("argument must be between %d and %d inclusive", min, max)
			}
			*field(c) = int(v)
			return nil
		},
		get: func(c *Config) string { return strconv.Itoa(*field(c)) },
	}
}

func memDirective(name string, mutable bool, min int64, field func(*Config) *int64) directive {
	return directive{name: name, mutable: mutable,
		set: func(c *Config, a []string) error {
			v, err := ParseMemory(a[0])
			if err != nil {
				return fmt.Errorf("argument must be a memory value")
			}
			if v < min {
				return boundsError(min, longMax)
			}
			*field(c) = v
			return nil
		},
		get: func(c *Config) string { return strconv.FormatInt(*field(c), 10) },
	}
}

func int64Directive(name string, mutable bool, min int64, field func(*Config) *int64) directive {
	return directive{name: name, mutable: mutable,
		set: func(c *Config, a []string) error {
			v, err := strconv.ParseInt(a[0], 10, 64)
			if err != nil {
				return fmt.Errorf("argument couldn't be parsed into an integer")
			}
			if v < min {
				return fmt.Errorf("argument must be between %d and %d inclusive", min, int64(math.MaxInt64))
			}
			*field(c) = v
			return nil
		},
		get: func(c *Config) string { return strconv.FormatInt(*field(c), 10) },
	}
}

func boolDirective(name string, mutable bool, field func(*Config) *bool) directive {
	return directive{name: name, mutable: mutable,
		set: func(c *Config, a []string) error {
			switch strings.ToLower(a[0]) {
			case "yes":
				*field(c) = true
			case "no":
				*field(c) = false
			default:
				return fmt.Errorf("argument must be 'yes' or 'no'")
			}
			return nil
		},
		get: func(c *Config) string {
			if *field(c) {
				return "yes"
			}
			return "no"
		},
	}
}

func stringDirective(name string, mutable bool, field func(*Config) *string) directive {
	return directive{name: name, mutable: mutable,
		set: func(c *Config, a []string) error { *field(c) = a[0]; return nil },
		get: func(c *Config) string { return *field(c) },
	}
}

// dirDirective is dir: CONFIG GET answers the absolute path, as Redis's (which chdirs into it and
// answers getcwd); iocache joins it to each file name instead of changing the process's directory.
func dirDirective() directive {
	d := stringDirective("dir", true, func(c *Config) *string { return &c.Dir })
	d.get = func(c *Config) string {
		if abs, err := filepath.Abs(c.Dir); err == nil {
			return abs
		}
		return c.Dir
	}
	return d
}

func enumDirective(name string, mutable bool, values []string, field func(*Config) *string) directive {
	return directive{name: name, mutable: mutable,
		set: func(c *Config, a []string) error {
			v := strings.ToLower(a[0])
			for _, allowed := range values {
				if v == allowed {
					*field(c) = v
					return nil
				}
			}
			return fmt.Errorf("argument(s) must be one of the following: %s", strings.Join(values, ", "))
		},
		get: func(c *Config) string { return *field(c) },
	}
}

// cpulistDirective accepts a taskset-style list, "auto", or "" (no pinning). The syntax is checked
// here; whether the CPUs exist is checked when the server resolves the lists (at startup, and
// before CONFIG SET commits, so a list the process cannot use is refused and changes nothing).
func cpulistDirective(name string, field func(*Config) *string) directive {
	d := stringDirective(name, true, field)
	d.set = func(c *Config, a []string) error {
		v := strings.TrimSpace(a[0])
		if v != "" && !strings.EqualFold(v, "auto") {
			if _, err := ParseCPUList(v); err != nil {
				return err
			}
		}
		*field(c) = strings.ToLower(v)
		return nil
	}
	return d
}

var table = buildTable()

// buildTable lists every directive iocache-server knows. Directives that only matter for features
// not implemented (replication, cluster) are not listed: a config file that sets them fails loudly.
func buildTable() map[string]*directive {
	ds := []directive{
		intDirective("port", false, 0, 65535, func(c *Config) *int { return &c.Port }),
		{name: "bind", multiArg: true,
			set: func(c *Config, a []string) error { c.Bind = append([]string(nil), a...); return nil },
			get: func(c *Config) string { return strings.Join(c.Bind, " ") }},
		stringDirective("unixsocket", false, func(c *Config) *string { return &c.UnixSocket }),
		{name: "unixsocketperm",
			set: func(c *Config, a []string) error {
				v, err := strconv.ParseUint(a[0], 8, 32)
				if err != nil || v > 0o777 {
					return fmt.Errorf("argument must be an octal permission such as 700")
				}
				c.UnixSocketPerm = uint32(v)
				return nil
			},
			get: func(c *Config) string { return strconv.FormatUint(uint64(c.UnixSocketPerm), 8) }},
		live(EffectDefaultUser, stringDirective("requirepass", true, func(c *Config) *string { return &c.RequirePass })),
		// user lines define ACL users (config file and command line only), as in Redis.
		{name: "user", multiArg: true, fileOnly: true,
			set: func(c *Config, a []string) error {
				c.Users = append(c.Users, UserLine{Args: append([]string(nil), a...), Line: c.loadingLine, Text: "user " + strings.Join(a, " ")})
				return nil
			}},
		stringDirective("aclfile", false, func(c *Config) *string { return &c.ACLFile }),
		live(EffectACLPubsub, enumDirective("acl-pubsub-default", true, []string{"allchannels", "resetchannels"}, func(c *Config) *string { return &c.ACLPubsubDefault })),
		intDirective("acllog-max-len", true, 0, longMax, func(c *Config) *int { return &c.ACLLogMaxLen }),
		{name: "requirepass-file",
			set: func(c *Config, a []string) error {
				b, err := os.ReadFile(a[0])
				if err != nil {
					return fmt.Errorf("can't read requirepass-file: %v", err)
				}
				c.RequirePass = strings.TrimRight(string(b), "\r\n")
				c.RequirePassFile = a[0]
				return nil
			},
			get: func(c *Config) string { return c.RequirePassFile }},
		live(EffectMaxClients, intDirective("maxclients", true, 1, 1<<24, func(c *Config) *int { return &c.MaxClients })),
		intDirective("timeout", true, 0, 1<<31-1, func(c *Config) *int { return &c.Timeout }),
		intDirective("tcp-keepalive", true, 0, 1<<31-1, func(c *Config) *int { return &c.TCPKeepAlive }),
		intDirective("tcp-backlog", false, 0, 1<<31-1, func(c *Config) *int { return &c.TCPBacklog }),
		boolDirective("protected-mode", true, func(c *Config) *bool { return &c.ProtectedMode }),
		// io-threads changes live: the server starts, drains and stops I/O threads and moves
		// connections between them (see server/engine). 128 is Redis's IO_THREADS_MAX_NUM.
		{name: "io-threads", effect: EffectLayout, mutable: true,
			set: func(c *Config, a []string) error {
				if strings.EqualFold(a[0], "auto") {
					c.IOThreads = 0
					return nil
				}
				v, err := strconv.Atoi(a[0])
				if err != nil || v < 1 || v > 128 {
					return fmt.Errorf("argument must be between 1 and 128 inclusive, or auto")
				}
				c.IOThreads = v
				return nil
			},
			get: func(c *Config) string {
				if c.IOThreads == 0 {
					return "auto"
				}
				return strconv.Itoa(c.IOThreads)
			}},
		boolDirective("io-threads-do-reads", false, func(c *Config) *bool { return &c.IOThreadsDoReads }),
		live(EffectIOActivation, enumDirective("io-threads-activation", true, []string{"load", "always"}, func(c *Config) *string { return &c.IOThreadsActivation })),
		live(EffectLayout, cpulistDirective("server_cpulist", func(c *Config) *string { return &c.ServerCPUList })),
		live(EffectLayout, cpulistDirective("bio_cpulist", func(c *Config) *string { return &c.BioCPUList })),
		live(EffectLayout, cpulistDirective("aof_rewrite_cpulist", func(c *Config) *string { return &c.AOFRewriteCPUList })),
		live(EffectLayout, cpulistDirective("bgsave_cpulist", func(c *Config) *string { return &c.BGSaveCPUList })),
		enumDirective("cpulist-mode", false, []string{"physical", "relative"}, func(c *Config) *string { return &c.CPUListMode }),
		intDirective("databases", false, 1, 1<<16, func(c *Config) *int { return &c.Databases }),
		{name: "client-output-buffer-limit", effect: EffectClientLimits, mutable: true, multiArg: true,
			set: setOutputBufferLimits, get: getOutputBufferLimits},
		live(EffectClientLimits, memDirective("client-query-buffer-limit", true, 1<<20, func(c *Config) *int64 { return &c.ClientQueryBufferLimit })),
		live(EffectClientLimits, memDirective("proto-max-bulk-len", true, 1<<20, func(c *Config) *int64 { return &c.ProtoMaxBulkLen })),
		live(EffectLogLevel, enumDirective("loglevel", true, []string{"debug", "verbose", "notice", "warning", "nothing"}, func(c *Config) *string { return &c.LogLevel })),
		stringDirective("logfile", false, func(c *Config) *string { return &c.LogFile }),
		live(EffectEvict|EffectClientLimits, memDirective("maxmemory", true, 0, func(c *Config) *int64 { return &c.MaxMemory })),
		// Redis takes any size from 1 and keeps at least 16kb (CONFIG_REPL_BACKLOG_MIN_SIZE), which
		// CONFIG GET then shows.
		live(EffectBacklog, clampMin(memDirective("repl-backlog-size", true, 1, func(c *Config) *int64 { return &c.ReplBacklogSize }),
			16<<10, func(c *Config) *int64 { return &c.ReplBacklogSize })),
		stringDirective("masterauth", true, func(c *Config) *string { return &c.MasterAuth }),
		stringDirective("masteruser", true, func(c *Config) *string { return &c.MasterUser }),
		alias(boolDirective("replica-read-only", true, func(c *Config) *bool { return &c.ReplicaReadOnly }), "slave-read-only"),
		alias(boolDirective("replica-serve-stale-data", true, func(c *Config) *bool { return &c.ReplicaServeStaleData }), "slave-serve-stale-data"),
		alias(intDirective("replica-priority", true, 0, 1<<31-1, func(c *Config) *int { return &c.ReplicaPriority }), "slave-priority"),
		intDirective("repl-timeout", true, 1, 1<<31-1, func(c *Config) *int { return &c.ReplTimeout }),
		live(EffectWriteGate, alias(intDirective("min-replicas-to-write", true, 0, 1<<31-1, func(c *Config) *int { return &c.MinReplicasToWrite }), "min-slaves-to-write")),
		alias(intDirective("min-replicas-max-lag", true, 0, 1<<31-1, func(c *Config) *int { return &c.MinReplicasMaxLag }), "min-slaves-max-lag"),
		// replicaof is read at start; REPLICAOF changes it while the server runs.
		{name: "replicaof", aliases: []string{"slaveof"}, multiArg: true,
			set: func(c *Config, a []string) error {
				if len(a) != 2 {
					return fmt.Errorf("wrong number of arguments")
				}
				if p, err := strconv.Atoi(a[1]); err != nil || p < 0 || p > 65535 {
					return fmt.Errorf("Invalid master port")
				}
				c.ReplicaOf = a[0] + " " + a[1]
				return nil
			},
			get: func(c *Config) string { return c.ReplicaOf }},
		// start-as-replica is read at start: setting it while the server runs changes nothing until
		// the next start, which is why the operator may set it live.
		boolDirective("start-as-replica", true, func(c *Config) *bool { return &c.StartAsReplica }),
		alias(intDirective("repl-ping-replica-period", true, 1, 1<<31-1, func(c *Config) *int { return &c.ReplPingReplicaPeriod }), "repl-ping-slave-period"),
		live(EffectEvict, enumDirective("maxmemory-policy", true, []string{"volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl", "allkeys-lru", "allkeys-lfu", "allkeys-random", "noeviction"}, func(c *Config) *string { return &c.MaxMemoryPolicy })),
		intDirective("maxmemory-samples", true, 1, 64, func(c *Config) *int { return &c.MaxMemorySamples }),
		intDirective("lfu-log-factor", true, 0, 1<<31-1, func(c *Config) *int { return &c.LFULogFactor }),
		intDirective("lfu-decay-time", true, 0, 1<<31-1, func(c *Config) *int { return &c.LFUDecayTime }),
		// Redis takes any hz and runs at 1 to 500 (CONFIG_MIN_HZ, CONFIG_MAX_HZ); CONFIG GET shows
		// the clamped value.
		{name: "hz", effect: EffectWatchdog, mutable: true,
			set: func(c *Config, a []string) error {
				v, err := strconv.ParseInt(a[0], 10, 64)
				if err != nil {
					return errors.New("argument couldn't be parsed into an integer")
				}
				if v < 0 || v > intMax {
					return boundsError(0, intMax)
				}
				c.HZ = int(min(max(v, 1), 500))
				return nil
			},
			get: func(c *Config) string { return strconv.Itoa(c.HZ) }},
		boolDirective("lazyfree-lazy-eviction", true, func(c *Config) *bool { return &c.LazyFreeLazyEviction }),
		boolDirective("lazyfree-lazy-expire", true, func(c *Config) *bool { return &c.LazyFreeLazyExpire }),
		boolDirective("lazyfree-lazy-user-del", true, func(c *Config) *bool { return &c.LazyFreeLazyUserDel }),
		boolDirective("lazyfree-lazy-user-flush", true, func(c *Config) *bool { return &c.LazyFreeLazyFlush }),
		int64Directive("slowlog-log-slower-than", true, -1, func(c *Config) *int64 { return &c.SlowlogLogSlowerThan }),
		intDirective("slowlog-max-len", true, 0, longMax, func(c *Config) *int { return &c.SlowlogMaxLen }),
		boolDirective("latency-tracking", true, func(c *Config) *bool { return &c.LatencyTracking }),
		intDirective("metrics-port", false, 0, 65535, func(c *Config) *int { return &c.MetricsPort }),
		memDirective("benchspace-maxmemory", true, 0, func(c *Config) *int64 { return &c.BenchSpaceMaxMemory }),
		protect(dirDirective()),
		protect(stringDirective("dbfilename", true, func(c *Config) *string { return &c.DBFilename })),
		{name: "save", mutable: true, multiArg: true,
			set: func(c *Config, a []string) error { return setSave(c, a) },
			get: func(c *Config) string { return c.Save }},
		live(EffectAppendOnly, boolDirective("appendonly", true, func(c *Config) *bool { return &c.AppendOnly })),
		baseNameDirective("appendfilename", "filename", func(c *Config) *string { return &c.AppendFilename }),
		baseNameDirective("appenddirname", "dirname", func(c *Config) *string { return &c.AppendDirname }),
		enumDirective("appendfsync", true, []string{"always", "everysec", "no"}, func(c *Config) *string { return &c.AppendFsync }),
		boolDirective("no-appendfsync-on-rewrite", true, func(c *Config) *bool { return &c.NoAppendFsyncOnRewrite }),
		intDirective("auto-aof-rewrite-percentage", true, 0, 1<<31-1, func(c *Config) *int { return &c.AutoAOFRewritePercentage }),
		memDirective("auto-aof-rewrite-min-size", true, 0, func(c *Config) *int64 { return &c.AutoAOFRewriteMinSize }),
		boolDirective("aof-load-truncated", true, func(c *Config) *bool { return &c.AOFLoadTruncated }),
		boolDirective("aof-rewrite-incremental-fsync", true, func(c *Config) *bool { return &c.AOFRewriteIncrementalFsync }),
		live(EffectAOFHistory, boolDirective("aof-disable-auto-gc", true, func(c *Config) *bool { return &c.AOFDisableAutoGC })),
		boolDirective("aof-use-rdb-preamble", true, func(c *Config) *bool { return &c.AOFUseRDBPreamble }),
		boolDirective("aof-timestamp-enabled", true, func(c *Config) *bool { return &c.AOFTimestampEnabled }),
		boolDirective("stop-writes-on-bgsave-error", true, func(c *Config) *bool { return &c.StopWritesOnBGSaveError }),
		boolDirective("rdbcompression", true, func(c *Config) *bool { return &c.RDBCompression }),
		boolDirective("rdbchecksum", false, func(c *Config) *bool { return &c.RDBChecksum }),
		{name: "notify-keyspace-events", effect: EffectNotify, mutable: true,
			set: func(c *Config, a []string) error {
				flags, err := ParseNotifyFlags(a[0])
				if err != nil {
					return err
				}
				c.NotifyKeyspaceEvents = FormatNotifyFlags(flags)
				c.NotifyFlags = flags
				return nil
			},
			get: func(c *Config) string { return c.NotifyKeyspaceEvents }},
		intDirective("active-expire-effort", true, 1, 10, func(c *Config) *int { return &c.ActiveExpireEffort }),
		live(EffectEncodings, alias(intDirective("list-max-listpack-size", true, -5, 1<<31-1, func(c *Config) *int { return &c.ListMaxListpackSize }), "list-max-ziplist-size")),
		live(EffectEncodings, alias(intDirective("hash-max-listpack-entries", true, 0, longMax, func(c *Config) *int { return &c.HashMaxListpackEntries }), "hash-max-ziplist-entries")),
		live(EffectEncodings, alias(memDirective("hash-max-listpack-value", true, 0, func(c *Config) *int64 { return &c.HashMaxListpackValue }), "hash-max-ziplist-value")),
		live(EffectEncodings, intDirective("set-max-intset-entries", true, 0, longMax, func(c *Config) *int { return &c.SetMaxIntsetEntries })),
		live(EffectEncodings, alias(intDirective("zset-max-listpack-entries", true, 0, longMax, func(c *Config) *int { return &c.ZSetMaxListpackEntries }), "zset-max-ziplist-entries")),
		live(EffectEncodings, alias(memDirective("zset-max-listpack-value", true, 0, func(c *Config) *int64 { return &c.ZSetMaxListpackValue }), "zset-max-ziplist-value")),
		memDirective("stream-node-max-bytes", true, 0, func(c *Config) *int64 { return &c.StreamNodeMaxBytes }),
		int64Directive("stream-node-max-entries", true, 0, func(c *Config) *int64 { return &c.StreamNodeMaxEntries }),
		alias(intDirective("busy-reply-threshold", true, 0, longMax, func(c *Config) *int { return &c.BusyReplyThreshold }), "lua-time-limit"),
		live(EffectWatchdog, hide(intDirective("watchdog-period", true, 0, 1<<31-1, func(c *Config) *int { return &c.WatchdogPeriod }))),
		{name: "maxmemory-clients", effect: EffectClientLimits, mutable: true, set: setMaxMemoryClients, get: getMaxMemoryClients},
		enumDirective("enable-debug-command", false, []string{"no", "yes", "local"}, func(c *Config) *string { return &c.EnableDebugCommand }),
		refuse(boolDirective("daemonize", false, func(c *Config) *bool { return &c.Daemonize }), "yes",
			"daemonize yes is not supported: run iocache-server in the foreground under a supervisor (systemd with 'supervised systemd', a container runtime)"),
		refuse(boolDirective("syslog-enabled", false, func(c *Config) *bool { return &c.SyslogEnabled }), "yes",
			"syslog-enabled yes is not supported: iocache logs to logfile or standard output"),
		// oom-score-adj: iocache does not write /proc/self/oom_score_adj; only "no" is honoured.
		{name: "oom-score-adj", mutable: true,
			set: func(c *Config, a []string) error {
				switch strings.ToLower(a[0]) {
				case "no":
					return nil
				case "yes", "relative", "absolute":
					return errors.New("oom-score-adj is not supported: set the OOM score of the process from outside (systemd OOMScoreAdjust, Kubernetes QoS)")
				}
				return fmt.Errorf("argument(s) must be one of the following: no, yes, relative, absolute")
			},
			get: func(c *Config) string { return "no" }},
		stringDirective("pidfile", false, func(c *Config) *string { return &c.PidFile }),
		enumDirective("supervised", false, []string{"no", "upstart", "systemd", "auto"}, func(c *Config) *string { return &c.SupervisedMode }),
		// rename-command is read from the config file and the command line only, as in Redis: the
		// engine applies the renames, in order, to its command table at start.
		{name: "rename-command", multiArg: true, fileOnly: true,
			set: func(c *Config, a []string) error {
				if len(a) != 2 {
					return errWrongArgs
				}
				c.RenameCommands = append(c.RenameCommands, CommandRename{From: a[0], To: a[1],
					Line: c.loadingLine, Text: "rename-command " + a[0] + " " + a[1]})
				return nil
			}},
	}
	ds = append(ds, compatDirectives()...)
	t := make(map[string]*directive, len(ds)*2)
	for i := range ds {
		d := &ds[i]
		t[d.name] = d
		for _, a := range d.aliases {
			t[a] = d
		}
	}
	// The directives of noEffect that have no definition above (the AOF ones): kept as text, so
	// that CONFIG GET shows what was set.
	for _, name := range sortedKeys(noEffect) {
		if _, typed := t[name]; typed {
			continue
		}
		name := name
		t[name] = &directive{name: name, mutable: true,
			set: func(c *Config, a []string) error {
				if c.Compat == nil {
					c.Compat = map[string]string{}
				}
				c.Compat[name] = strings.Join(a, " ")
				return nil
			},
			get: func(c *Config) string { return c.Compat[name] }}
	}
	return t
}

var errWrongArgs = errors.New("wrong number of arguments")

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// setMaxMemoryClients reads maxmemory-clients as Redis does: a memory value, or a percentage of
// maxmemory ("10%", at most 100).
func setMaxMemoryClients(c *Config, a []string) error {
	if pct, ok := strings.CutSuffix(a[0], "%"); ok {
		v, err := strconv.Atoi(pct)
		if err != nil || v < 0 {
			return fmt.Errorf("argument must be a memory or percent value")
		}
		if v > 100 {
			return fmt.Errorf("percentage argument must be less or equal to 100")
		}
		c.MaxMemoryClients, c.MaxMemoryClientsPercent = 0, v
		return nil
	}
	v, err := ParseMemory(a[0])
	if err != nil || v < 0 {
		return fmt.Errorf("argument must be a memory or percent value")
	}
	c.MaxMemoryClients, c.MaxMemoryClientsPercent = v, 0
	return nil
}

func getMaxMemoryClients(c *Config) string {
	if c.MaxMemoryClientsPercent > 0 {
		return strconv.Itoa(c.MaxMemoryClientsPercent) + "%"
	}
	return strconv.FormatInt(c.MaxMemoryClients, 10)
}

// ClientMemoryLimit is maxmemory-clients in bytes (0: no limit).
func (c *Config) ClientMemoryLimit() int64 {
	if c.MaxMemoryClientsPercent > 0 {
		return c.MaxMemory * int64(c.MaxMemoryClientsPercent) / 100
	}
	return c.MaxMemoryClients
}

// refuse makes a directive refuse one value at start and on CONFIG SET, with why as the error:
// for settings iocache cannot honour, which must not be accepted and silently ignored.
func refuse(d directive, value, why string) directive {
	set := d.set
	d.set = func(c *Config, a []string) error {
		if strings.EqualFold(a[0], value) {
			return errors.New(why)
		}
		return set(c, a)
	}
	return d
}

// baseNameDirective is a file or directory name inside dir (appendfilename, appenddirname): set at
// start only, and never a path, as Redis requires (what is its word for the name).
func baseNameDirective(name, what string, field func(*Config) *string) directive {
	d := stringDirective(name, false, field)
	d.set = func(c *Config, a []string) error {
		if a[0] == "" || a[0] == "." || a[0] == ".." || strings.ContainsAny(a[0], "/\\") {
			return fmt.Errorf("%s can't be a path, just a %s", name, what)
		}
		*field(c) = a[0]
		return nil
	}
	return d
}

// clampMin raises a value the directive took to floor, as Redis does for repl-backlog-size.
func clampMin(d directive, floor int64, field func(*Config) *int64) directive {
	set := d.set
	d.set = func(c *Config, a []string) error {
		if err := set(c, a); err != nil {
			return err
		}
		*field(c) = max(*field(c), floor)
		return nil
	}
	return d
}

func protect(d directive) directive {
	d.protected = true
	return d
}

func setOutputBufferLimits(c *Config, a []string) error {
	if len(a)%4 != 0 {
		return errors.New("Wrong number of arguments in buffer limit configuration.")
	}
	limits := c.ClientOutputBufferLimit
	for i := 0; i < len(a); i += 4 {
		var class int
		switch strings.ToLower(a[i]) {
		case "normal":
			class = ClassNormal
		case "replica", "slave":
			class = ClassReplica
		case "pubsub":
			class = ClassPubSub
		default:
			return fmt.Errorf("Invalid client class specified in buffer limit configuration.")
		}
		hard, err1 := ParseMemory(a[i+1])
		soft, err2 := ParseMemory(a[i+2])
		secs, err3 := strconv.ParseInt(a[i+3], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || hard < 0 || soft < 0 || secs < 0 {
			return fmt.Errorf("Error in hard, soft or soft_seconds setting in buffer limit configuration.")
		}
		limits[class] = OutputBufferLimit{Hard: hard, Soft: soft, SoftSeconds: secs}
	}
	c.ClientOutputBufferLimit = limits
	return nil
}

func getOutputBufferLimits(c *Config) string {
	parts := make([]string, 0, numClasses)
	for i, l := range c.ClientOutputBufferLimit {
		parts = append(parts, fmt.Sprintf("%s %d %d %d", classNames[i], l.Hard, l.Soft, l.SoftSeconds))
	}
	return strings.Join(parts, " ")
}

// addSavePoints applies a save line of a config file or the command line, as Redis reads them:
// the first one replaces the default save points and later ones add to it ("save 900 1" then
// "save 300 10" keeps both), "save \"\"" clears them, and a single argument holding several
// numbers (--save "3600 1 300 100") is split.
func addSavePoints(c *Config, a []string) error {
	if len(a) == 1 && strings.TrimSpace(a[0]) != "" {
		a = strings.Fields(a[0])
	}
	prev, loaded := c.Save, c.saveLoaded
	if err := setSave(c, a); err != nil {
		return err
	}
	c.saveLoaded = true
	if loaded && prev != "" && c.Save != "" {
		c.Save = prev + " " + c.Save
	}
	return nil
}

func setSave(c *Config, a []string) error {
	if len(a) == 1 && a[0] == "" {
		c.Save = ""
		return nil
	}
	if len(a)%2 != 0 {
		return errInvalid
	}
	for _, v := range a {
		if _, err := strconv.ParseUint(v, 10, 63); err != nil {
			return errInvalid
		}
	}
	c.Save = strings.Join(a, " ")
	return nil
}

// Names lists the canonical names of all directives, sorted.
func Names() []string {
	seen := map[string]bool{}
	var names []string
	for _, d := range table {
		if !seen[d.name] {
			seen[d.name] = true
			names = append(names, d.name)
		}
	}
	sort.Strings(names)
	return names
}
