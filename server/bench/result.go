package bench

// This file is the machine-readable result: the JSON that --json, --json-full and --json-out write.
// An operator parses it from a pod's termination message, so the field names are a contract: they
// are snake_case, only ever added to (never renamed), and SchemaVersion changes if one ever has to
// change meaning. docs/bench.md documents every field.

// SchemaVersion is the "version" field of every Result. Bump it only for incompatible changes.
const SchemaVersion = 1

// Result is one iocache-bench run.
type Result struct {
	Version int    `json:"version"`
	Tool    string `json:"tool"`
	// OK is false when the run failed (no connection, every request errored); the exit code is then
	// non-zero and Error says why.
	OK        bool    `json:"ok"`
	Error     string  `json:"error,omitempty"`
	Target    string  `json:"target"`
	StartedAt string  `json:"started_at"` // RFC 3339, UTC
	Config    Config  `json:"config"`
	Duration  float64 `json:"duration_sec"` // measured time, all tests together (warmup excluded)
	Requests  int64   `json:"requests"`     // requests sent in measured tests, answered or lost
	Errors    int64   `json:"errors"`       // error replies plus requests lost with a connection
	OpsPerSec float64 `json:"ops_per_sec"`  // successful replies per second over all tests
	Latency   Latency `json:"latency_ms"`   // over all tests
	Tests     []Test  `json:"tests"`
	Warmup    *Warmup `json:"warmup,omitempty"`
	ClientCPU CPU     `json:"client_cpu"` // this process, over the measured tests
	Server    *Server `json:"server,omitempty"`
	// BenchSpace is what the server's bench space counted over the whole run (warmup included)
	// with --benchspace: the run's own hits, misses and evictions, kept apart from the user's.
	BenchSpace *BenchSpace `json:"benchspace,omitempty"`
	// Truncated says the compact form dropped per-thread detail to stay under MaxCompactBytes.
	Truncated bool `json:"truncated,omitempty"`
}

// Config echoes the settings the run used.
type Config struct {
	Clients     int      `json:"clients"`
	Threads     int      `json:"threads"`
	Pipeline    int      `json:"pipeline"`
	DataSize    int      `json:"data_size"`
	Keyspace    int64    `json:"keyspace"`
	Ratio       string   `json:"ratio"` // SET:GET of the mixed test
	Tests       []string `json:"tests"`
	Requests    int64    `json:"requests,omitempty"`     // per test, --requests mode
	DurationSec float64  `json:"duration_sec,omitempty"` // per test, --duration mode
	WarmupSec   float64  `json:"warmup_sec,omitempty"`
}

// Latency is a latency summary in milliseconds from an HDR histogram (3 significant digits).
// A reply's latency is the time from writing its pipeline batch to reading the reply.
type Latency struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p99_9"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// Test is one test of the run ("get", "set", "mixed", ...).
type Test struct {
	Name        string    `json:"name"`
	Requests    int64     `json:"requests"`
	Errors      int64     `json:"errors"`
	Misses      int64     `json:"misses,omitempty"` // nil replies (GET of a missing key)
	Duration    float64   `json:"duration_sec"`
	OpsPerSec   float64   `json:"ops_per_sec"`
	Latency     Latency   `json:"latency_ms"`
	ErrorSample string    `json:"error_sample,omitempty"` // the first error, to say why
	Commands    []Command `json:"commands,omitempty"`     // per command, for the mixed test
	ClientCPU   CPU       `json:"client_cpu"`
}

// Command is one command's share of a test that sends more than one (mixed: set and get).
type Command struct {
	Name      string  `json:"name"`
	Requests  int64   `json:"requests"`
	OpsPerSec float64 `json:"ops_per_sec"`
	P50       float64 `json:"p50_ms"`
	P99       float64 `json:"p99_ms"`
}

// Warmup is the unmeasured fill before the tests: SETs walking the keyspace in order.
type Warmup struct {
	Duration float64 `json:"duration_sec"`
	Requests int64   `json:"requests"`
	Errors   int64   `json:"errors"`
	Filled   bool    `json:"keyspace_filled"` // every key of the keyspace was set at least once
}

// CPU is CPU time from getrusage(2). Cores is (user+sys)/wall: 1.0 means one core fully busy.
type CPU struct {
	User  float64 `json:"user_sec"`
	Sys   float64 `json:"sys_sec"`
	Cores float64 `json:"cores"`
}

// Server is what the server said about itself in INFO threads and INFO cpu, before and after the
// measured tests, and the difference, so a run shows how the work spread over its I/O threads.
type Server struct {
	Before    *Info  `json:"before,omitempty"`
	After     *Info  `json:"after,omitempty"`
	Delta     *Info  `json:"delta,omitempty"` // After minus Before (counters and CPU seconds)
	InfoError string `json:"info_error,omitempty"`
}

// Info is the parsed INFO threads and INFO cpu sections. Raw is only in --json-full.
type Info struct {
	IOThreadsActive *int       `json:"io_threads_active,omitempty"`
	Threads         []IOThread `json:"threads,omitempty"`
	CPU             *ServerCPU `json:"cpu,omitempty"`
	Raw             string     `json:"raw,omitempty"`
}

// IOThread is one io_thread_N line of INFO threads (Redis 8 and iocache-server; Redis 7 has none).
// Clients is the connections the thread holds at that moment, not a counter.
type IOThread struct {
	ID              int     `json:"id"`
	Clients         int64   `json:"clients"`
	Reads           int64   `json:"reads"`
	Writes          int64   `json:"writes"`
	CPUs            string  `json:"cpus,omitempty"`
	TID             int64   `json:"tid,omitempty"`
	CPUBusy         float64 `json:"cpu_busy,omitempty"`
	Batches         int64   `json:"batches,omitempty"`
	BatchedCommands int64   `json:"batched_commands,omitempty"`
}

// ServerCPU is INFO cpu, in seconds of CPU time.
type ServerCPU struct {
	Sys            float64 `json:"used_cpu_sys"`
	User           float64 `json:"used_cpu_user"`
	SysMainThread  float64 `json:"used_cpu_sys_main_thread"`
	UserMainThread float64 `json:"used_cpu_user_main_thread"`
}

// BenchSpace is BENCHSPACE STATS at the end of a --benchspace run.
type BenchSpace struct {
	Keys        int64  `json:"keys"`
	UsedMemory  int64  `json:"used_memory"`
	PeakMemory  int64  `json:"peak_memory"`
	MaxMemory   int64  `json:"maxmemory"`
	Hits        int64  `json:"hits"`
	Misses      int64  `json:"misses"`
	EvictedKeys int64  `json:"evicted_keys"`
	Error       string `json:"error,omitempty"`
}
