package engine

// Redis Cluster's commands on a server without cluster support. iocache runs standalone (with
// replicas; cluster-enabled yes is refused), and answers these as redis-server 7.0 does with
// cluster-enabled no: READONLY, READWRITE, ASKING and every CLUSTER subcommand refuse with one
// error, after the same arity checks, so that cluster-aware clients probing a server learn it is
// standalone exactly as they do from Redis. RESTORE-ASKING, which a cluster's MIGRATE sends, is
// RESTORE: Redis runs it on a standalone server too.

const errClusterDisabled = "ERR This instance has cluster support disabled"

func cmdClusterDisabled(s *Server, c *client, argv [][]byte) { s.addError(c, errClusterDisabled) }

// cmdCluster checks the subcommand and its arity as Redis's command table does, then refuses.
func cmdCluster(s *Server, c *client, argv [][]byte) {
	e := commandInfoEntry("cluster|" + lowerASCII(string(argv[1])))
	if e == nil {
		s.subcommandError(c, argv)
		return
	}
	if arity := int(e.elems[1].num); (arity > 0 && len(argv) != arity) || len(argv) < -arity {
		s.subcommandError(c, argv)
		return
	}
	s.addError(c, errClusterDisabled)
}

// clusterCommands registers this file's commands (see table.go).
var clusterCommands = []commandSpec{
	{"cluster", cmdCluster, -2, 0, 0, 0, 0, "cluster", "A container for cluster commands"},
	{"readonly", cmdClusterDisabled, 1, cmdFast | cmdLoading | cmdStale, 0, 0, 0, "cluster", "Enables read queries for a connection to a cluster replica node"},
	{"readwrite", cmdClusterDisabled, 1, cmdFast | cmdLoading | cmdStale, 0, 0, 0, "cluster", "Disables read queries for a connection to a cluster replica node"},
	{"asking", cmdClusterDisabled, 1, cmdFast, 0, 0, 0, "cluster", "Sent by cluster clients after an -ASK redirect"},
	{"restore-asking", cmdRestore, -4, cmdWrite | cmdDenyOOM, 1, 1, 1, "server", "An internal command for migrating keys in a cluster"},
}
