package engine

import (
	"bytes"
	"sort"
)

// Command statistics per subcommand. Redis 7.0 counts the calls, time, latency histogram,
// failures and rejections of a container's subcommands each on its own (cmdstat_config|get,
// LATENCY HISTOGRAM's "config|resetstat"), never on the container; so does iocache, in the
// stats-only command of each subcommand (command.subs). A container keeps what has no
// subcommand to go to (an unknown one).

// statsOf is the command whose statistics a call of container cmd with argv counts in. It does
// not allocate.
func (cmd *command) statsOf(argv [][]byte) *command {
	if len(argv) < 2 {
		return cmd
	}
	if st := cmd.subcommand(argv[1]); st != nil {
		return st
	}
	return cmd
}

// statCommands lists every command and subcommand statistics are kept for, sorted by name.
func (s *Server) statCommands() []*command {
	out := make([]*command, 0, len(s.commands))
	for _, cmd := range s.commands {
		out = append(out, cmd)
		for _, sub := range cmd.subs {
			out = append(out, sub)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// statCommandsNamed resolves a name LATENCY HISTOGRAM was given: a command, "container|sub" for
// one subcommand, or a container for all of its subcommands (and itself), as Redis does. Unknown
// names resolve to nothing.
func (s *Server) statCommandsNamed(name []byte) []*command {
	if i := bytes.IndexByte(name, '|'); i >= 0 {
		cmd := s.lookupCommand(name[:i])
		if cmd == nil || cmd.subs == nil {
			return nil
		}
		if st := cmd.statsOf([][]byte{name[:i], name[i+1:]}); st != cmd {
			return []*command{st}
		}
		return nil
	}
	cmd := s.lookupCommand(name)
	if cmd == nil {
		return nil
	}
	out := []*command{cmd}
	for _, sub := range cmd.subs {
		out = append(out, sub)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}
