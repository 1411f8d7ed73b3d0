// Package config holds iocache-server's configuration: the directives it understands, their
// defaults, redis.conf parsing, `--name value` flags, the CONFIG GET/SET views of them, and what
// a running server must do when each one changes (effects.go). Names and value syntax follow
// redis-server so existing config files and tools work unchanged. The operator asks this same
// table what is live and what each directive's default is (live.go).
package config

import (
	"strings"
)

// OutputBufferLimit is one client class's client-output-buffer-limit: a client is disconnected
// when its pending output exceeds Hard, or stays above Soft for SoftSeconds.
type OutputBufferLimit struct {
	Hard        int64
	Soft        int64
	SoftSeconds int64
}

// Client classes of client-output-buffer-limit, in Redis's order.
const (
	ClassNormal = iota
	ClassReplica
	ClassPubSub
	numClasses
)

// NumClasses is the number of client-output-buffer-limit classes.
const NumClasses = numClasses

// Redis 7.0 still prints the replica class as "slave" (and reads both names).
var classNames = [numClasses]string{"normal", "slave", "pubsub"}

// CommandRename is one rename-command line: From is renamed To ("" removes it). Line and Text say
// where it was read, for the startup error when From names no command.
type CommandRename struct {
	From, To string
	Line     int
	Text     string
}

// UserLine is one "user <name> <rules...>" line, with where it was read.
type UserLine struct {
	Args []string
	Line int
	Text string
}

// Config is the whole server configuration. New returns it with Redis's defaults.
type Config struct {
	Port           int
	Bind           []string
	UnixSocket     string
	UnixSocketPerm uint32
	RequirePass    string
	// RequirePassFile names a file holding the password (a mounted Secret), so the password never
	// appears in a config file, a ConfigMap or a command line.
	RequirePassFile string
	MaxClients      int
	Timeout         int
	TCPKeepAlive    int
	TCPBacklog      int
	ProtectedMode   bool

	// ClusterEnabled is cluster-enabled: the server serves a Redis Cluster node's slots, with the
	// map the operator pushes (CLUSTERMAP SET) instead of a gossip bus. Start only, as in Redis.
	ClusterEnabled bool

	// IOThreads counts the main thread; 0 means auto (resolved from the effective core count).
	IOThreads        int
	IOThreadsDoReads bool
	// IOThreadsActivation is "load" (I/O threads serve sockets only while they pay) or "always".
	IOThreadsActivation string

	// CPU lists in taskset syntax, "" (no pinning) or "auto". CPUListMode "relative" reads them as
	// positions within the CPUs the process may use, "physical" (Redis's meaning) as CPU ids.
	ServerCPUList     string
	BioCPUList        string
	AOFRewriteCPUList string
	BGSaveCPUList     string
	CPUListMode       string

	Databases               int
	ClientOutputBufferLimit [numClasses]OutputBufferLimit
	ClientQueryBufferLimit  int64
	ProtoMaxBulkLen         int64

	LogLevel string
	LogFile  string

	MaxMemory       int64
	MaxMemoryPolicy string

	// Replication: the backlog that feeds partial resyncs, and how often a primary pings its
	// replicas in the stream (which is what keeps their link from timing out).
	ReplBacklogSize       int64
	ReplPingReplicaPeriod int
	// ReplicaOf is "host port" of the primary to replicate from at start ("" = a primary).
	ReplicaOf string
	// StartAsReplica makes a server that has no replicaof start as a replica without a primary:
	// read-only, serving no replicas, until REPLICAOF names one or REPLICAOF NO ONE makes it the
	// primary. The operator sets it on replicated instances, so that a primary restarted empty can
	// never become the source its replicas resync from (and empty themselves).
	StartAsReplica  bool
	MasterAuth      string
	MasterUser      string
	ReplicaReadOnly bool
	// ReplicaServeStaleData no: a replica whose link is down answers only "stale" commands.
	ReplicaServeStaleData bool
	// ReplicaPriority is reported in INFO for whoever picks a replica to promote.
	ReplicaPriority int
	// A primary refuses writes while fewer than MinReplicasToWrite replicas acknowledged within
	// MinReplicasMaxLag seconds (0 turns it off).
	MinReplicasToWrite int
	MinReplicasMaxLag  int
	// ReplTimeout (seconds) drops a link that carried nothing for that long, on either side.
	ReplTimeout int

	MaxMemorySamples int
	LFULogFactor     int
	LFUDecayTime     int
	HZ               int

	LazyFreeLazyEviction bool
	LazyFreeLazyExpire   bool
	LazyFreeLazyUserDel  bool
	LazyFreeLazyFlush    bool

	SlowlogLogSlowerThan int64
	SlowlogMaxLen        int
	LatencyTracking      bool

	MetricsPort int

	// BenchSpaceMaxMemory bounds the bench space (BENCHSPACE ENTER): the scratch keyspace where
	// benchmark clients work apart from the user's data. 0 disables it.
	BenchSpaceMaxMemory int64

	// Persistence directives. Accepted and reported so that redis.conf files and tools work.
	Dir                     string
	DBFilename              string
	Save                    string
	AppendOnly              bool
	AppendFilename          string
	AppendFsync             string
	StopWritesOnBGSaveError bool
	RDBCompression          bool
	RDBChecksum             bool
	// saveLoaded is set once a config file or the command line gave a save line: later lines add
	// save points instead of replacing them (see addSavePoints).
	saveLoaded bool

	// The append-only file (server/engine/aof.go), as in Redis 7.0, besides AppendOnly,
	// AppendFilename and AppendFsync above. AOFDisableAutoGC keeps the files a rewrite replaced,
	// listed as history.
	AppendDirname              string
	NoAppendFsyncOnRewrite     bool
	AutoAOFRewritePercentage   int
	AutoAOFRewriteMinSize      int64
	AOFLoadTruncated           bool
	AOFUseRDBPreamble          bool
	AOFTimestampEnabled        bool
	AOFRewriteIncrementalFsync bool
	AOFDisableAutoGC           bool

	NotifyKeyspaceEvents string
	// NotifyFlags are notify-keyspace-events' classes as set: the string above is what CONFIG GET
	// shows, which, as in Redis 7.0, leaves out "n" when "A" is there.
	NotifyFlags         int
	ActiveExpireEffort  int
	ListMaxListpackSize int
	// The thresholds of the compact encodings (keyspace.Limits).
	HashMaxListpackEntries int
	HashMaxListpackValue   int64
	SetMaxIntsetEntries    int
	ZSetMaxListpackEntries int
	ZSetMaxListpackValue   int64
	// StreamNodeMaxBytes and StreamNodeMaxEntries bound the nodes a stream is kept in, as in
	// Redis: XADD and XTRIM with "~" remove whole nodes only.
	StreamNodeMaxBytes   int64
	StreamNodeMaxEntries int64
	BusyReplyThreshold   int
	// WatchdogPeriod (ms, 0 off) is how long the main thread may stay away from its event loop
	// before the watchdog logs its stack.
	WatchdogPeriod int
	// MaxMemoryClients bounds the memory all client buffers may take together: bytes, or a share
	// of maxmemory when MaxMemoryClientsPercent is set (Redis's "N%"). 0: no limit.
	MaxMemoryClients        int64
	MaxMemoryClientsPercent int
	// EnableDebugCommand is "no" (Redis 7's default), "yes" or "local" (loopback and unix socket
	// clients only).
	EnableDebugCommand string
	Daemonize          bool
	SyslogEnabled      bool
	// Users are the config file's user lines; ACLFile names a file of them that ACL LOAD and ACL
	// SAVE read and write. Redis refuses both at once, and so does the engine.
	Users   []UserLine
	ACLFile string
	// ACLPubsubDefault is the channel permission of new users and selectors: "resetchannels"
	// (none, Redis 7.0's default) or "allchannels".
	ACLPubsubDefault string
	// ACLLogMaxLen bounds ACL LOG's entries (Redis's acllog-max-len).
	ACLLogMaxLen   int
	PidFile        string
	SupervisedMode string
	// RenameCommands are the rename-command lines in the order they were read; a rename to ""
	// removes the command.
	RenameCommands []CommandRename
	// loadingLine is the config file line being read (0 on the command line), so that an error
	// found later, when the engine applies a rename, can point at it.
	loadingLine int

	// File is the absolute path of the config file the server was started with ("" without
	// one, or from standard input): where CONFIG REWRITE writes (rewrite.go).
	File string

	// Directives of Redis's that the engine honours, typed so that no code parses them where it
	// uses them (compat.go declares them with Redis's bounds and defaults).
	LatencyMonitorThreshold   int64  // latency-monitor-threshold: ms, 0 off
	TrackingTableMaxKeys      int64  // tracking-table-max-keys: 0 unlimited
	MaxMemoryEvictionTenacity int    // maxmemory-eviction-tenacity: 0-100
	ReplicaAnnounced          bool   // replica-announced: INFO's replica_announced
	ReplicaAnnounceIP         string // replica-announce-ip: what a replica tells its primary
	ReplicaAnnouncePort       int    // replica-announce-port: 0, the listening port
	BindSourceAddr            string // bind-source-addr: outgoing connections' source
	TLSPort                   int    // tls-port: 0 none
	TLSReplication            bool   // tls-replication: replicas connect with TLS
	// LatencyPercentiles are latency-tracking-info-percentiles: what INFO latencystats reports.
	LatencyPercentiles []float64

	// Compat holds directives accepted only so that existing redis.conf files load: they tune
	// Redis internals (encodings, jemalloc, rehashing) that iocache does not have.
	Compat map[string]string
}

// New returns a configuration with redis-server's defaults (and iocache's own for its directives).
func New() *Config {
	return &Config{
		Port:           6379,
		Bind:           []string{"*", "-::*"},
		UnixSocketPerm: 0,
		MaxClients:     10000,
		TCPKeepAlive:   300,
		TCPBacklog:     511,
		ProtectedMode:  true,

		IOThreads:           1,
		IOThreadsDoReads:    true,
		IOThreadsActivation: "load",
		CPUListMode:         "physical",

		Databases: 16,
		ClientOutputBufferLimit: [numClasses]OutputBufferLimit{
			ClassNormal:  {},
			ClassReplica: {Hard: 256 << 20, Soft: 64 << 20, SoftSeconds: 60},
			ClassPubSub:  {Hard: 32 << 20, Soft: 8 << 20, SoftSeconds: 60},
		},
		ClientQueryBufferLimit: 1 << 30,
		ProtoMaxBulkLen:        512 << 20,

		LogLevel: "notice",

		MaxMemoryPolicy:  "noeviction",
		MaxMemorySamples: 5,
		LFULogFactor:     10,
		LFUDecayTime:     1,
		HZ:               10,

		SlowlogLogSlowerThan: 10000,
		SlowlogMaxLen:        128,
		LatencyTracking:      true,

		MetricsPort: 9121,

		BenchSpaceMaxMemory: 32 << 20,

		TrackingTableMaxKeys:      1000000,
		LatencyPercentiles:        []float64{50, 99, 99.9},
		MaxMemoryEvictionTenacity: 10,
		ReplicaAnnounced:          true,

		ReplBacklogSize:       1 << 20,
		ReplicaReadOnly:       true,
		ReplicaServeStaleData: true,
		ReplicaPriority:       100,
		MinReplicasMaxLag:     10,
		ReplTimeout:           60,
		ReplPingReplicaPeriod: 10,

		Dir:                     ".",
		DBFilename:              "dump.rdb",
		Save:                    "3600 1 300 100 60 10000",
		AppendFilename:          "appendonly.aof",
		AppendFsync:             "everysec",
		StopWritesOnBGSaveError: true,
		RDBCompression:          true,
		RDBChecksum:             true,
		ActiveExpireEffort:      1,
		ListMaxListpackSize:     -2,
		HashMaxListpackEntries:  512, // redis-server's own default (redis.conf writes 128)
		HashMaxListpackValue:    64,
		SetMaxIntsetEntries:     512,
		ZSetMaxListpackEntries:  128,
		ZSetMaxListpackValue:    64,
		StreamNodeMaxBytes:      4096,
		StreamNodeMaxEntries:    100,
		BusyReplyThreshold:      5000,
		EnableDebugCommand:      "no",
		SupervisedMode:          "no",
		ACLLogMaxLen:            128,
		ACLPubsubDefault:        "resetchannels",

		AppendDirname:              "appendonlydir",
		AutoAOFRewritePercentage:   100,
		AutoAOFRewriteMinSize:      64 << 20,
		AOFLoadTruncated:           true,
		AOFUseRDBPreamble:          true,
		AOFRewriteIncrementalFsync: true,
	}
}

// canonicalName maps the accepted spellings of a directive to its canonical name: Redis spells the
// cpulists with underscores, and iocache also accepts hyphens, as for every other directive.
// CanonicalName is a directive's name as the configuration lists it (see canonicalName).
func CanonicalName(name string) string { return canonicalName(name) }

func canonicalName(name string) string {
	n := strings.ToLower(name)
	switch n {
	case "server-cpulist", "bio-cpulist", "aof-rewrite-cpulist", "bgsave-cpulist":
		return strings.ReplaceAll(n, "-", "_")
	}
	return n
}
