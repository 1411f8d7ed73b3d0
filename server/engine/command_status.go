package engine

import (
	"sort"
	"strings"
)

// Which of Redis 7.0's commands iocache has. The list of commands is Redis's own (its COMMAND
// LIST: every command and container subcommand in the metadata of command_meta.go); a command is
// implemented when the command table has it, less the subcommands named below, and partly so
// where a note says what is missing. docs/commands.md and the README's list of commands not
// implemented are written from here (TestCommandStatusDocs), so neither can drift from the table.

// missingSubcommands are subcommands of implemented containers that iocache does not have.
var missingSubcommands = map[string]bool{}

// partialCommands notes what an implemented command lacks.
var partialCommands = map[string]string{
	"debug":               "DIGEST, DIGEST-VALUE, LOADAOF, OBJECT, PAUSE-CRON, POPULATE, PROTOCOL, QUICKLIST-PACKED-THRESHOLD (no effect), RELOAD, SET-ACTIVE-EXPIRE, SET-DISABLE-DENY-SCRIPTS, SLEEP and HELP only",
	"memory|doctor":       "a fixed answer",
	"latency|histogram":   "buckets are powers of two of microseconds",
	"latency|doctor":      "the events iocache records: command, fast-command, expire-cycle, eviction-cycle",
	"memory|malloc-stats": "the Go runtime's heap figures, not jemalloc's report",
	"script|debug":        "NO only: YES and SYNC, Redis's Lua debugger, are refused",
	"readonly":            clusterDisabledNote,
	"readwrite":           clusterDisabledNote,
	"asking":              clusterDisabledNote,
}

// clusterDisabledNote is the note of READONLY, READWRITE, ASKING and every CLUSTER subcommand
// (cmd_cluster.go).
const clusterDisabledNote = "answers as Redis with cluster support disabled"

// commandStatus is one Redis 7.0 command's state here.
type commandStatus struct {
	name        string // full name: "get", "config|get"
	implemented bool
	note        string
}

// redisCommandStatuses lists every command of Redis 7.0, by name.
func (s *Server) redisCommandStatuses() []commandStatus {
	var out []commandStatus
	for name := range redisCommandMeta().info {
		base, _, isSub := strings.Cut(name, "|")
		st := commandStatus{name: name, implemented: s.commands[base] != nil && !missingSubcommands[name]}
		if st.implemented {
			st.note = partialCommands[name]
			if base == "cluster" && isSub {
				st.note = clusterDisabledNote
			}
		}
		if isSub && s.commands[base] == nil {
			continue // listed with its container
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}
