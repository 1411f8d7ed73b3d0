package engine

// stats are the server-wide counters INFO stats reports. Only the main thread writes them.
type stats struct {
	commandsProcessed   int64
	connectionsReceived int64
	rejectedConns       int64
	expiredKeys         int64
	evictedKeys         int64
	keyspaceHits        int64
	keyspaceMisses      int64
	errorReplies        int64
	unknownCommands     int64
	dirty               int64 // writes since the last save
	pubsubMessages      int64
	evictedClients      int64 // closed by maxmemory-clients or the process memory guard
	evictedScripts      int64 // scripts only EVAL loaded, dropped from the cache past its 500 (Redis 7.4's)
	expireCycleMaxNs    int64 // longest active-expire cycle
	evictionMaxNs       int64 // longest eviction pass
	syncFull            int64 // full syncs served to replicas
	syncPartialOK       int64
	syncPartialErr      int64
	errorCodes          map[string]int64

	// instantaneous ops/sec, sampled by cron as Redis does
	opsSamples   [16]int64
	opsIdx       int
	lastOpsMs    int64
	lastOpsCount int64
}

func (st *stats) countError(code string) {
	if st.errorCodes == nil {
		st.errorCodes = map[string]int64{}
	}
	if len(st.errorCodes) < 128 || st.errorCodes[code] > 0 {
		st.errorCodes[code]++
	}
}

// sampleOps records the command rate since the last sample.
func (st *stats) sampleOps(nowMs int64) {
	if st.lastOpsMs == 0 {
		st.lastOpsMs, st.lastOpsCount = nowMs, st.commandsProcessed
		return
	}
	dt := nowMs - st.lastOpsMs
	if dt < 100 {
		return
	}
	ops := (st.commandsProcessed - st.lastOpsCount) * 1000 / dt
	st.opsSamples[st.opsIdx%len(st.opsSamples)] = ops
	st.opsIdx++
	st.lastOpsMs, st.lastOpsCount = nowMs, st.commandsProcessed
}

func (st *stats) instantaneousOps() int64 {
	n := st.opsIdx
	if n > len(st.opsSamples) {
		n = len(st.opsSamples)
	}
	if n == 0 {
		return 0
	}
	var sum int64
	for i := 0; i < n; i++ {
		sum += st.opsSamples[i]
	}
	return sum / int64(n)
}
