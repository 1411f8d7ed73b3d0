package engine

import "testing"

// The cluster commands answer as redis-server 7.0 with cluster support disabled, arity errors
// and unknown subcommands included; RESTORE-ASKING restores as RESTORE does.
func TestClusterCommandsMatchRedis(t *testing.T) {
	_, addr := startServer(t, nil)
	differential(t, addr, split(
		"READONLY", "READWRITE", "ASKING", "READONLY x", "ASKING x",
		"CLUSTER", "CLUSTER FOO", "CLUSTER HELP", "CLUSTER INFO", "CLUSTER INFO x", "CLUSTER NODES", "CLUSTER SLOTS",
		"CLUSTER SHARDS", "CLUSTER MYID", "CLUSTER KEYSLOT foo", "CLUSTER KEYSLOT", "CLUSTER COUNTKEYSINSLOT 1",
		"CLUSTER GETKEYSINSLOT 1 10", "CLUSTER ADDSLOTS 1 2", "CLUSTER ADDSLOTS", "CLUSTER SETSLOT 1 STABLE",
		"CLUSTER MEET 127.0.0.1 7000", "CLUSTER RESET HARD", "CLUSTER FAILOVER", "CLUSTER LINKS", "CLUSTER REPLICAS x",
		"RESTORE-ASKING", "RESTORE-ASKING k 0 x", "SET s v", "DUMP nosuch", "RESTORE-ASKING s 0 x",
	))
	// A payload DUMP wrote comes back through RESTORE-ASKING.
	differential(t, addr, [][]string{
		{"RESTORE-ASKING", "dst", "0", dumpOfHello},
		{"GET", "dst"}, {"RESTORE-ASKING", "dst", "0", dumpOfHello},
	})
}
