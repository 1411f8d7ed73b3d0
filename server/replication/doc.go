// Package replication holds the pieces of Redis's replication protocol that need no server: the
// primary's backlog ring (the stream's recent bytes, for partial resyncs), the sink that carries
// a full sync's RDB from the snapshot writer to the main thread, a replica's wire helpers for the
// handshake and the payload that follows +FULLRESYNC (lines read without reading ahead, the
// "$EOF:<mark>" and "$<len>" forms, a deadline per read), the budget that refuses a full sync
// past the memory the replica may use, and replication IDs.
//
// server/engine keeps the state and the decisions: the replica links, the primary's stream and
// offsets, PSYNC's answer, the handshake's sequence, failover, WAIT. It passes in what these
// pieces need (limits, a wake-up callback, a connection) and they call nothing back but that.
// It may import keyspace (the databases a budget checks), never the engine.
package replication
