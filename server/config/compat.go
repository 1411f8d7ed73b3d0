package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Directives that redis-server 7.0 has and iocache takes for parity: CONFIG GET * lists them with
// Redis's defaults, CONFIG SET validates them with Redis's bounds and texts, and redis.conf files
// that set them load. Their values live in Config.Compat as CONFIG GET prints them (absent: the
// default), since most change nothing here: noeffect.go says why for each, and refuses the values
// that would be a promise iocache cannot keep. Those the engine honours are typed fields of
// Config (LatencyMonitorThreshold, TLSPort, ...), declared here with Redis's bounds; the TLS
// files and options are read by package tlsconfig.

// CompatValue is the value of a directive kept in Compat: the one set, or Redis's default.
func (c *Config) CompatValue(name string) string {
	d, ok := table[canonicalName(name)]
	if !ok || d.get == nil {
		return ""
	}
	return d.get(c)
}

// compatDirective keeps its value in Compat; parse checks an argument and returns the text
// CONFIG GET shows for it.
func compatDirective(name string, mutable bool, def string, parse func(string) (string, error)) directive {
	return directive{name: name, mutable: mutable,
		set: func(c *Config, a []string) error {
			v, err := parse(a[0])
			if err != nil {
				return err
			}
			if c.Compat == nil {
				c.Compat = map[string]string{}
			}
			c.Compat[name] = v
			return nil
		},
		get: func(c *Config) string {
			if v, ok := c.Compat[name]; ok {
				return v
			}
			return def
		},
	}
}

func compatBool(name string, mutable bool, def string) directive {
	return compatDirective(name, mutable, def, parseYesNo)
}

func parseYesNo(v string) (string, error) {
	switch strings.ToLower(v) {
	case "yes":
		return "yes", nil
	case "no":
		return "no", nil
	}
	return "", errors.New("argument must be 'yes' or 'no'")
}

// compatInt is a numeric directive with Redis's bounds (INT_MAX, LONG_MAX: as Redis declares it).
func compatInt(name string, mutable bool, lo, hi, def int64) directive {
	return compatDirective(name, mutable, strconv.FormatInt(def, 10), func(v string) (string, error) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return "", errors.New("argument couldn't be parsed into an integer")
		}
		if n < lo || n > hi {
			return "", boundsError(lo, hi)
		}
		return strconv.FormatInt(n, 10), nil
	})
}

// compatMemory is a memory directive ("100mb"); CONFIG GET shows bytes.
func compatMemory(name string, mutable bool, lo, hi, def int64) directive {
	return compatDirective(name, mutable, strconv.FormatInt(def, 10), func(v string) (string, error) {
		n, err := ParseMemory(v)
		if err != nil {
			return "", errors.New("argument must be a memory value")
		}
		if n < lo || n > hi {
			return "", boundsError(lo, hi)
		}
		return strconv.FormatInt(n, 10), nil
	})
}

func boundsError(lo, hi int64) error {
	return fmt.Errorf("argument must be between %d and %d inclusive", lo, hi)
}

func compatEnum(name string, mutable bool, values []string, def string) directive {
	return compatDirective(name, mutable, def, func(v string) (string, error) {
		for _, allowed := range values {
			if strings.EqualFold(v, allowed) {
				return allowed, nil
			}
		}
		return "", fmt.Errorf("argument(s) must be one of the following: %s", strings.Join(values, ", "))
	})
}

func compatString(name string, mutable bool, def string) directive {
	return compatDirective(name, mutable, def, func(v string) (string, error) { return v, nil })
}

// Redis's C type bounds, as its CONFIG SET errors print them.
const (
	intMax  = math.MaxInt32
	longMax = math.MaxInt64
)

// compatDirectives are the Redis 7.0 directives kept in Compat (the AOF ones excepted: see
// buildTable), in the order of Redis's config.c.
func compatDirectives() []directive {
	return []directive{
		compatBool("always-show-logo", false, "no"),
		compatBool("rdb-del-sync-files", true, "no"),
		compatBool("activerehashing", true, "yes"),
		compatBool("set-proc-title", false, "yes"),
		compatBool("dynamic-hz", true, "yes"),
		compatBool("lazyfree-lazy-server-del", true, "no"),
		compatBool("repl-disable-tcp-nodelay", true, "no"),
		compatBool("repl-diskless-sync", true, "yes"),
		compatBool("cluster-require-full-coverage", true, "yes"),
		compatBool("rdb-save-incremental-fsync", true, "yes"),
		alias(compatBool("cluster-replica-no-failover", true, "no"), "cluster-slave-no-failover"),
		alias(compatBool("replica-lazy-flush", true, "no"), "slave-lazy-flush"),
		alias(refuse(compatBool("replica-ignore-maxmemory", true, "yes"), "no",
			"replica-ignore-maxmemory no is not supported: a replica holds what its primary holds and evicts nothing itself"), "slave-ignore-maxmemory"),
		compatBool("jemalloc-bg-thread", true, "yes"),
		refuse(compatBool("activedefrag", true, "no"), "yes",
			"Active defragmentation cannot be enabled: it requires a Redis server compiled with a modified Jemalloc like the one shipped by default with the Redis source distribution"),
		boolDirective("cluster-enabled", false, func(c *Config) *bool { return &c.ClusterEnabled }),
		compatBool("cluster-allow-reads-when-down", true, "no"),
		compatBool("cluster-allow-pubsubshard-when-down", true, "yes"),
		compatBool("crash-log-enabled", true, "yes"),
		compatBool("crash-memcheck-enabled", true, "yes"),
		compatBool("disable-thp", false, "yes"),
		compatBool("cluster-allow-replica-migration", true, "yes"),
		boolDirective("replica-announced", true, func(c *Config) *bool { return &c.ReplicaAnnounced }),
		compatBool("replica-ignore-disk-write-errors", true, "no"),

		alias(stringDirective("replica-announce-ip", true, func(c *Config) *string { return &c.ReplicaAnnounceIP }), "slave-announce-ip"),
		live(EffectClusterAnnounce, compatString("cluster-announce-ip", true, "")),
		compatString("cluster-config-file", false, "nodes.conf"),
		live(EffectClusterAnnounce, compatDirective("cluster-announce-hostname", true, "", parseHostname)),
		compatString("syslog-ident", false, "redis"),
		compatString("ignore-warnings", true, ""),
		stringDirective("bind-source-addr", true, func(c *Config) *string { return &c.BindSourceAddr }),
		compatDirective("proc-title-template", true, "{title} {listen-addr} {server-mode}", parseProcTitleTemplate),

		compatEnum("syslog-facility", false, []string{"user", "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7"}, "local0"),
		compatEnum("repl-diskless-load", true, []string{"disabled", "on-empty-db", "swapdb"}, "disabled"),
		compatEnum("sanitize-dump-payload", true, []string{"no", "yes", "clients"}, "no"),
		refuse(compatEnum("enable-protected-configs", false, []string{"no", "yes", "local"}, "no"), "local",
			"enable-protected-configs local is not supported: use yes or no"),
		compatEnum("enable-module-command", false, []string{"no", "yes", "local"}, "no"),
		compatEnum("cluster-preferred-endpoint-type", true, []string{"ip", "hostname", "unknown-endpoint"}, "ip"),
		refuse(refuse(compatEnum("propagation-error-behavior", true, []string{"ignore", "panic", "panic-on-replicas"}, "ignore"),
			"panic", "propagation-error-behavior panic is not supported: a replica ignores errors of replicated commands"),
			"panic-on-replicas", "propagation-error-behavior panic-on-replicas is not supported: a replica ignores errors of replicated commands"),
		shutdownOnSignal("shutdown-on-sigint"),
		shutdownOnSignal("shutdown-on-sigterm"),

		alias(compatInt("cluster-replica-validity-factor", true, 0, intMax, 10), "cluster-slave-validity-factor"),
		compatInt("cluster-migration-barrier", true, 0, intMax, 1),
		compatInt("active-defrag-cycle-min", true, 1, 99, 1),
		compatInt("active-defrag-cycle-max", true, 1, 99, 25),
		compatInt("active-defrag-threshold-lower", true, 0, 1000, 10),
		compatInt("active-defrag-threshold-upper", true, 0, 1000, 100),
		compatInt("repl-diskless-sync-delay", true, 0, intMax, 5),
		intDirective("maxmemory-eviction-tenacity", true, 0, 100, func(c *Config) *int { return &c.MaxMemoryEvictionTenacity }),
		compatInt("list-compress-depth", true, 0, intMax, 0),
		alias(intDirective("replica-announce-port", true, 0, 65535, func(c *Config) *int { return &c.ReplicaAnnouncePort }), "slave-announce-port"),
		compatInt("cluster-port", false, 0, 65535, 0),
		compatInt("cluster-announce-bus-port", true, 0, 65535, 0),
		live(EffectClusterAnnounce, compatInt("cluster-announce-port", true, 0, 65535, 0)),
		live(EffectClusterAnnounce, compatInt("cluster-announce-tls-port", true, 0, 65535, 0)),
		compatInt("shutdown-timeout", true, 0, intMax, 10),
		compatInt("repl-diskless-sync-max-replicas", true, 0, intMax, 0),
		refuseUnless(compatInt("socket-mark-id", false, 0, math.MaxUint32, 0), "0",
			"socket-mark-id is not supported: mark the pod's or host's traffic from outside (iptables, a CNI)"),
		compatInt("active-defrag-max-scan-fields", true, 1, longMax, 1000),
		compatInt("cluster-node-timeout", true, 0, longMax, 15000),
		live(EffectLatencyMonitor, int64Directive("latency-monitor-threshold", true, 0, func(c *Config) *int64 { return &c.LatencyMonitorThreshold })),
		live(EffectTrackingTable, int64Directive("tracking-table-max-keys", true, 0, func(c *Config) *int64 { return &c.TrackingTableMaxKeys })),
		compatInt("repl-backlog-ttl", true, 0, longMax, 3600),

		compatMemory("cluster-link-sendbuf-limit", true, 0, longMax, 0),
		compatMemory("active-defrag-ignore-bytes", true, 1, longMax, 100<<20),
		compatMemory("hll-sparse-max-bytes", true, 0, longMax, 3000),
		// Redis 7.2's names, taken so that 7.2 config files load; 7.0 does not list them.
		compatInt("set-max-listpack-entries", true, 0, longMax, 128),
		compatMemory("set-max-listpack-value", true, 0, longMax, 64),

		// TLS, with Redis's defaults. The engine reads them (tls.go); what Go's crypto/tls
		// cannot honour is listed in noeffect.go. tls-cluster yes is refused with cluster mode.
		live(EffectTLS, intDirective("tls-port", true, 0, 65535, func(c *Config) *int { return &c.TLSPort })),
		live(EffectTLS, compatInt("tls-session-cache-size", true, 0, intMax, 20*1024)),
		live(EffectTLS, compatInt("tls-session-cache-timeout", true, 0, intMax, 300)),
		refuse(compatBool("tls-cluster", true, "no"), "yes", errNoTLSCluster),
		live(EffectTLS, boolDirective("tls-replication", true, func(c *Config) *bool { return &c.TLSReplication })),
		live(EffectTLS, compatEnum("tls-auth-clients", true, []string{"no", "yes", "optional"}, "yes")),
		live(EffectTLS, compatBool("tls-prefer-server-ciphers", true, "no")),
		live(EffectTLS, compatBool("tls-session-caching", true, "yes")),
		live(EffectTLS, compatString("tls-cert-file", true, "")),
		live(EffectTLS, compatString("tls-key-file", true, "")),
		live(EffectTLS, compatString("tls-key-file-pass", true, "")),
		live(EffectTLS, compatString("tls-client-cert-file", true, "")),
		live(EffectTLS, compatString("tls-client-key-file", true, "")),
		live(EffectTLS, compatString("tls-client-key-file-pass", true, "")),
		live(EffectTLS, compatString("tls-dh-params-file", true, "")),
		live(EffectTLS, compatString("tls-ca-cert-file", true, "")),
		live(EffectTLS, compatString("tls-ca-cert-dir", true, "")),
		live(EffectTLS, compatString("tls-protocols", true, "")),
		live(EffectTLS, compatString("tls-ciphers", true, "")),
		live(EffectTLS, compatString("tls-ciphersuites", true, "")),

		{name: "oom-score-adj-values", mutable: true, multiArg: true, set: setOOMScoreAdjValues,
			get: func(c *Config) string { return compatOr(c, "oom-score-adj-values", "0 200 800") }},
		{name: "latency-tracking-info-percentiles", mutable: true, multiArg: true, set: setLatencyPercentiles,
			get: func(c *Config) string {
				out := make([]string, len(c.LatencyPercentiles))
				for i, f := range c.LatencyPercentiles {
					out[i] = strconv.FormatFloat(f, 'f', -1, 64)
				}
				return strings.Join(out, " ")
			}},
	}
}

const errNoTLSCluster = "tls-cluster yes is not supported: iocache runs standalone, with replicas (tls-replication)"

func compatOr(c *Config, name, def string) string {
	if v, ok := c.Compat[name]; ok {
		return v
	}
	return def
}

func setCompat(c *Config, name, v string) {
	if c.Compat == nil {
		c.Compat = map[string]string{}
	}
	c.Compat[name] = v
}

// refuseUnless makes a directive refuse every value but keep (a setting that would turn on a
// feature iocache does not have), with why as the error.
func refuseUnless(d directive, keep, why string) directive {
	set, get := d.set, d.get
	d.set = func(c *Config, a []string) error {
		prev, had := c.Compat[d.name]
		if err := set(c, a); err != nil {
			return err
		}
		if get(c) != keep {
			if had {
				c.Compat[d.name] = prev
			} else {
				delete(c.Compat, d.name)
			}
			return errors.New(why)
		}
		return nil
	}
	return d
}

// parseHostname is Redis's isValidAnnouncedHostname.
func parseHostname(v string) (string, error) {
	for _, r := range v {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.') {
			return "", errors.New("Hostnames may only contain alphanumeric characters, hyphens or dots")
		}
	}
	return v, nil
}

// parseProcTitleTemplate is Redis's validation of proc-title-template: every {variable} is
// known and closed, and the title it expands to, with an empty {title}, is not blank.
func parseProcTitleTemplate(v string) (string, error) {
	// Whether each variable expands to something on a standalone server without TLS or socket.
	vars := map[string]bool{"title": false, "listen-addr": true, "server-mode": false, "port": true,
		"tls-port": true, "unixsocket": false, "config-file": false}
	blank := true
	for rest := v; rest != ""; {
		open := strings.IndexByte(rest, '{')
		if open < 0 {
			blank = blank && strings.TrimSpace(rest) == ""
			break
		}
		blank = blank && strings.TrimSpace(rest[:open]) == ""
		end := strings.IndexByte(rest[open:], '}')
		if end < 0 {
			return "", errProcTitle
		}
		nonEmpty, known := vars[rest[open+1:open+end]]
		if !known {
			return "", errProcTitle
		}
		blank = blank && !nonEmpty
		rest = rest[open+end+1:]
	}
	if blank {
		return "", errProcTitle
	}
	return v, nil
}

var errProcTitle = errors.New("template format is invalid or contains unknown variables")

// setOOMScoreAdjValues reads the three OOM scores (normal, replica, background child) Redis
// would write when oom-score-adj is on; iocache only checks and reports them (see noeffect.go).
func setOOMScoreAdjValues(c *Config, a []string) error {
	if len(a) == 1 {
		a = strings.Fields(a[0])
	}
	if len(a) != 3 {
		return errWrongArgs
	}
	for i, v := range a {
		n, err := strconv.Atoi(v)
		if err != nil || n < -2000 || n > 2000 {
			return errors.New("Invalid oom-score-adj-values, elements must be between -2000 and 2000.")
		}
		a[i] = strconv.Itoa(n)
	}
	setCompat(c, "oom-score-adj-values", strings.Join(a, " "))
	return nil
}

// setLatencyPercentiles reads latency-tracking-info-percentiles: the percentiles INFO
// latencystats reports, in [0, 100]; "" reports none.
func setLatencyPercentiles(c *Config, a []string) error {
	if len(a) == 1 {
		a = strings.Fields(a[0])
	}
	out := make([]float64, 0, len(a))
	for _, v := range a {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return errors.New("Invalid latency-tracking-info-percentiles parameters")
		}
		if f < 0 || f > 100 {
			return errors.New("latency-tracking-info-percentiles parameters should sit between [0.0,100.0]")
		}
		out = append(out, f)
	}
	c.LatencyPercentiles = out
	return nil
}

// shutdownOnSignal is shutdown-on-sigint and shutdown-on-sigterm: "default", or any of save,
// nosave, now and force (save and nosave exclude each other), as SHUTDOWN takes them.
func shutdownOnSignal(name string) directive {
	d := compatDirective(name, true, "default", parseShutdownFlags)
	// A config file line may give the flags as several arguments.
	d.multiArg = true
	set := d.set
	d.set = func(c *Config, a []string) error { return set(c, []string{strings.Join(a, " ")}) }
	return d
}

func parseShutdownFlags(v string) (string, error) {
	flags := strings.Fields(strings.ToLower(v))
	seen := map[string]bool{}
	for _, f := range flags {
		switch f {
		case "default", "save", "nosave", "now", "force":
			seen[f] = true
		default:
			return "", errors.New("argument(s) must be one of the following: default, save, nosave, now, force")
		}
	}
	if len(flags) == 0 {
		return "", errors.New("argument(s) must be one of the following: default, save, nosave, now, force")
	}
	if seen["save"] && seen["nosave"] {
		return "", errors.New("shutdown options SAVE and NOSAVE can't be used simultaneously")
	}
	// "default" is no flag at all, as in Redis: with others it adds nothing.
	var out []string
	for _, f := range []string{"save", "nosave", "now", "force"} {
		if seen[f] {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return "default", nil
	}
	return strings.Join(out, " "), nil
}

// ShutdownFlags are what a shutdown that signal asks for does: save, nosave, force (SHUTDOWN's
// modifiers); "default" is none of them.
func (c *Config) ShutdownFlags(sigint bool) (save, nosave, force bool) {
	name := "shutdown-on-sigterm"
	if sigint {
		name = "shutdown-on-sigint"
	}
	for _, f := range strings.Fields(c.CompatValue(name)) {
		switch f {
		case "save":
			save = true
		case "nosave":
			nosave = true
		case "force":
			force = true
		}
	}
	return save, nosave, force
}
