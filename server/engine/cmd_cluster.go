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
	{name: "cluster", h: cmdCluster},
	{name: "readonly", h: cmdClusterDisabled},
	{name: "readwrite", h: cmdClusterDisabled},
	{name: "asking", h: cmdClusterDisabled},
	{name: "restore-asking", h: cmdRestore},
}
