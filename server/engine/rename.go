package engine

// rename-command, as Redis 7.0 applies it while reading its configuration: each line moves a
// command to a new name in the table clients look commands up in, or removes it when the new name
// is "". The command keeps its flags, arity, key positions and ACL categories, and COMMAND INFO,
// COMMAND DOCS and COMMAND LIST keep reporting its original name (Redis prints cmd->fullname),
// while COMMAND COUNT counts what clients can call. A removed command answers the unknown-command
// error. Internal lookups by original name go through Server.builtin, which renames never touch.

import (
	"strings"

	"github.com/iocache/iocache/server/config"
)

// applyRenames applies the configuration's rename-command lines, in order, to s.commands.
func (s *Server) applyRenames() error {
	for _, r := range s.cfg.RenameCommands {
		from := strings.ToLower(r.From)
		cmd, ok := s.commands[from]
		if !ok {
			// Subcommands ("config|get") are not in the table either: Redis 7.0 crashes on them.
			return &config.FileError{Line: r.Line, Text: r.Text, Message: "No such command in rename-command"}
		}
		delete(s.commands, from)
		if r.To == "" {
			continue
		}
		to := strings.ToLower(r.To)
		if _, taken := s.commands[to]; taken {
			return &config.FileError{Line: r.Line, Text: r.Text, Message: "Target command name already exists"}
		}
		s.commands[to] = cmd
	}
	return nil
}
