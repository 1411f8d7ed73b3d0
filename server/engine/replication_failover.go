package engine

import (
	"strconv"
	"strings"

	"github.com/iocache/iocache/server/resp"
)

// FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT ms], Redis 7.0's coordinated failover: the
// primary holds writes, waits until a replica (the one named, or the first) has acknowledged
// everything, then becomes a replica of it and asks it, with PSYNC <replid> <offset> FAILOVER,
// to take over: the replica promotes itself and answers +CONTINUE, so no write is lost and
// neither side needs a full sync. INFO's master_failover_state shows the steps. A TIMEOUT ends
// the wait by aborting (or, with FORCE, by failing over anyway); unlike Redis, a handshake with
// the target that fails also aborts, so writes are never held for an unbounded time.

type failoverState int

const (
	failoverNone failoverState = iota
	failoverWaitForSync
	failoverInProgress
)

type failover struct {
	state      failoverState
	host       string // the target; "" until one is chosen
	port       int
	endMs      int64 // 0: no timeout
	force      bool
	targetSeen bool // the target was named (FAILOVER TO)
}

func (f *failover) stateName() string {
	switch f.state {
	case failoverWaitForSync:
		return "waiting-for-sync"
	case failoverInProgress:
		return "failover-in-progress"
	}
	return "no-failover"
}

func cmdFailover(s *Server, c *client, argv [][]byte) {
	f := &s.repl.failover
	if len(argv) == 2 && resp.EqualFold(argv[1], "abort") {
		if f.state == failoverNone {
			s.addError(c, "ERR No failover in progress.")
			return
		}
		s.abortFailover("Failover manually aborted")
		c.w.OK()
		return
	}
	var timeoutMs, port int64
	var host string
	var force, haveHost bool
	for j := 1; j < len(argv); j++ {
		switch a := argv[j]; {
		case resp.EqualFold(a, "timeout") && j+1 < len(argv) && timeoutMs == 0:
			v, ok := parseInt(argv[j+1])
			if !ok {
				s.addError(c, errNotInt)
				return
			}
			if v <= 0 {
				s.addError(c, "ERR FAILOVER timeout must be greater than 0")
				return
			}
			timeoutMs = v
			j++
		case resp.EqualFold(a, "to") && j+2 < len(argv) && !haveHost:
			v, ok := parseInt(argv[j+2])
			if !ok {
				s.addError(c, errNotInt)
				return
			}
			host, port, haveHost = string(argv[j+1]), v, true
			j += 2
		case resp.EqualFold(a, "force") && !force:
			force = true
		default:
			s.addError(c, errSyntax)
			return
		}
	}
	switch {
	case f.state != failoverNone:
		s.addError(c, "ERR FAILOVER already in progress.")
		return
	case s.repl.master != nil:
		s.addError(c, "ERR FAILOVER is not valid when server is a replica.")
		return
	case len(s.repl.replicas) == 0:
		s.addError(c, "ERR FAILOVER requires connected replicas.")
		return
	case force && (timeoutMs == 0 || !haveHost):
		s.addError(c, "ERR FAILOVER with force option requires both a timeout and target HOST and IP.")
		return
	}
	if haveHost {
		rl := s.findReplica(host, int(port))
		if rl == nil {
			s.addError(c, "ERR FAILOVER target HOST and PORT is not a replica.")
			return
		}
		if rl.state != replicaOnline {
			s.addError(c, "ERR FAILOVER target replica is not online.")
			return
		}
		s.logf(logNotice, "FAILOVER requested to %s:%d.", host, port)
	} else {
		s.logf(logNotice, "FAILOVER requested to any replica.")
	}
	*f = failover{state: failoverWaitForSync, host: host, port: int(port), force: force, targetSeen: haveHost}
	if timeoutMs > 0 {
		f.endMs = s.nowMs + timeoutMs
	}
	s.repl.getack = true // the replicas' acknowledgements, at once rather than within a second
	c.w.OK()
}

// findReplica is the online or syncing replica at host:port, as it announced itself.
func (s *Server) findReplica(host string, port int) *replicaLink {
	for _, rl := range s.repl.replicas {
		if strings.EqualFold(s.replicaIP(rl), host) && rl.listeningPort == port {
			return rl
		}
	}
	return nil
}

// updateFailover moves a waiting failover on: to its target once that replica has acknowledged
// the whole stream, or, at the timeout, to the target anyway (FORCE) or back to no failover.
func (s *Server) updateFailover() {
	f := &s.repl.failover
	if f.state != failoverWaitForSync {
		return
	}
	if f.endMs != 0 && f.endMs <= s.nowMs {
		if f.force {
			s.logf(logNotice, "FAILOVER to %s:%d time out exceeded, failing over.", f.host, f.port)
			s.startFailover()
			return
		}
		s.abortFailover("Replica never caught up before timeout")
		return
	}
	var target *replicaLink
	if f.targetSeen {
		target = s.findReplica(f.host, f.port)
	} else {
		for _, rl := range s.repl.replicas {
			if rl.state == replicaOnline && rl.ackOff == s.repl.offset {
				target = rl
				f.host, f.port = s.replicaIP(rl), rl.listeningPort
				break
			}
		}
	}
	if target != nil && target.state == replicaOnline && target.ackOff == s.repl.offset {
		s.logf(logNotice, "Failover target %s:%d is synced, failing over.", f.host, f.port)
		s.startFailover()
	}
}

// startFailover makes this server a replica of the target, whose handshake asks it to take over.
func (s *Server) startFailover() {
	f := &s.repl.failover
	f.state = failoverInProgress
	s.replicate(f.host, f.port)
}

// failoverHandshakeDone ends a failover in progress with the handshake's outcome.
func (s *Server) failoverHandshakeDone(ok bool) {
	if s.repl.failover.state != failoverInProgress {
		return
	}
	if !ok {
		s.abortFailover("Failover target rejected psync request")
		return
	}
	s.logf(logNotice, "Failover to %s:%d completed.", s.repl.failover.host, s.repl.failover.port)
	s.clearFailover()
}

// abortFailover gives up: a failover in progress returns this server to being the primary.
func (s *Server) abortFailover(why string) {
	f := &s.repl.failover
	if f.state == failoverNone {
		return
	}
	target := "any replica"
	if f.host != "" {
		target = f.host + ":" + strconv.Itoa(f.port)
	}
	s.logf(logNotice, "FAILOVER to %s aborted: %s", target, why)
	if f.state == failoverInProgress && s.repl.master != nil {
		s.becomePrimary()
	}
	s.clearFailover()
}

// clearFailover ends the failover and lets the held writes run.
func (s *Server) clearFailover() {
	s.repl.failover = failover{}
	s.releasePaused()
}

// failoverCommands registers this file's commands (see table.go).
var failoverCommands = []commandSpec{
	{name: "failover", h: cmdFailover},
}
