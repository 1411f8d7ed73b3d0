package engine

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Replication on /metrics, under redis_exporter's names and labels, so that dashboards and
// alerts written for Redis (replica lag, link down, resyncs) work unchanged. Like the exporter,
// the resync counts are gauges.

var (
	dConnectedSlaves  = desc("redis_connected_slaves", "Replicas attached to this server.")
	dMasterReplOffset = desc("redis_master_repl_offset", "The replication offset: bytes of the stream so far (on a replica, applied so far).")
	dBacklogActive    = desc("redis_repl_backlog_is_active", "1 while the replication backlog exists.")
	dBacklogSize      = desc("redis_replication_backlog_bytes", "The repl-backlog-size setting.")
	dBacklogFirst     = desc("redis_repl_backlog_first_byte_offset", "The offset of the oldest byte in the backlog.")
	dBacklogHistory   = desc("redis_repl_backlog_history_bytes", "Bytes of stream the backlog holds.")
	dResyncsFull      = desc("redis_replica_resyncs_full", "Full syncs served to replicas.")
	dPartialOK        = desc("redis_replica_partial_resync_accepted", "Partial resyncs served from the backlog.")
	dPartialErr       = desc("redis_replica_partial_resync_denied", "Partial resyncs refused (a full sync followed).")
	dSlaveOffset      = desc("redis_connected_slave_offset_bytes", "Offset each replica acknowledged.", "slave_ip", "slave_port", "slave_state")
	dSlaveLag         = desc("redis_connected_slave_lag_seconds", "Seconds since each replica's last acknowledgement.", "slave_ip", "slave_port", "slave_state")
	dMasterLinkUp     = desc("redis_master_link_up", "On a replica: 1 while the link to the primary is up.", "master_host", "master_port")
	dMasterLastIO     = desc("redis_master_last_io_seconds_ago", "On a replica: seconds since the primary last sent something (-1 while the link is down).", "master_host", "master_port")
	dMasterSyncing    = desc("redis_master_sync_in_progress", "On a replica: 1 while it connects to or syncs with the primary.", "master_host", "master_port")
	dSlaveReplOffset  = desc("redis_slave_repl_offset", "On a replica: the offset of the stream applied so far.", "master_host", "master_port")
)

func init() {
	allDescs = append(allDescs, dConnectedSlaves, dMasterReplOffset, dBacklogActive, dBacklogSize, dBacklogFirst,
		dBacklogHistory, dResyncsFull, dPartialOK, dPartialErr, dSlaveOffset, dSlaveLag, dMasterLinkUp, dMasterLastIO,
		dMasterSyncing, dSlaveReplOffset)
}

// replSnap is the replication state a scrape reports, copied on the main thread.
type replSnap struct {
	offset, backlogSize, backlogFirst, backlogHist int64
	backlogActive                                  bool
	syncFull, partialOK, partialErr                int64
	replicas                                       []replicaSnap
	master                                         *masterSnap
}

type replicaSnap struct {
	ip, port, state string
	offset, lag     int64
}

type masterSnap struct {
	host, port string
	up         bool
	lastIO     int64
	syncing    bool
}

func (s *Server) replicationSnapshot() replSnap {
	r := &s.repl
	sn := replSnap{offset: r.offset, backlogSize: s.cfg.ReplBacklogSize, backlogHist: r.backlog.Len(),
		backlogActive: r.backlog.Active(), syncFull: s.stats.syncFull, partialOK: s.stats.syncPartialOK, partialErr: s.stats.syncPartialErr}
	if sn.backlogActive {
		sn.backlogFirst = r.offset - r.backlog.Len() + 1
	}
	for _, rl := range r.replicas {
		sn.replicas = append(sn.replicas, replicaSnap{ip: s.replicaIP(rl), port: strconv.Itoa(rl.listeningPort),
			state: replicaStateNames[rl.state], offset: rl.ackOff, lag: s.unixtime - rl.ackUnix})
	}
	if m := r.master; m != nil {
		sn.offset = m.offset
		ms := &masterSnap{host: m.host, port: strconv.Itoa(m.port), up: m.client != nil, lastIO: -1, syncing: m.connecting}
		if ms.up {
			ms.lastIO = s.unixtime - m.lastIO
		}
		sn.master = ms
	}
	return sn
}

func collectReplication(sn replSnap, gauge func(*prometheus.Desc, float64, ...string)) {
	gauge(dConnectedSlaves, float64(len(sn.replicas)))
	gauge(dMasterReplOffset, float64(sn.offset))
	gauge(dBacklogActive, float64(boolInt(sn.backlogActive)))
	gauge(dBacklogSize, float64(sn.backlogSize))
	gauge(dBacklogFirst, float64(sn.backlogFirst))
	gauge(dBacklogHistory, float64(sn.backlogHist))
	gauge(dResyncsFull, float64(sn.syncFull))
	gauge(dPartialOK, float64(sn.partialOK))
	gauge(dPartialErr, float64(sn.partialErr))
	for _, r := range sn.replicas {
		gauge(dSlaveOffset, float64(r.offset), r.ip, r.port, r.state)
		gauge(dSlaveLag, float64(r.lag), r.ip, r.port, r.state)
	}
	if m := sn.master; m != nil {
		gauge(dMasterLinkUp, float64(boolInt(m.up)), m.host, m.port)
		gauge(dMasterLastIO, float64(m.lastIO), m.host, m.port)
		gauge(dMasterSyncing, float64(boolInt(m.syncing)), m.host, m.port)
		gauge(dSlaveReplOffset, float64(sn.offset), m.host, m.port)
	}
}
