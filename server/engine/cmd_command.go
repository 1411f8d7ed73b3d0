package engine

import (
	"sort"
	"strings"

	"github.com/iocache/iocache/server/glob"
	"github.com/iocache/iocache/server/resp"
)

// COMMAND and its subcommands: COUNT, INFO, DOCS, LIST [FILTERBY MODULE|ACLCAT|PATTERN], GETKEYS,
// GETKEYSANDFLAGS. For the commands iocache shares with Redis, INFO and DOCS answer with Redis
// 7.0's own entries (command_meta.go) and GETKEYS follows Redis's key specs; iocache's own
// commands are described from the command table.

func cmdCommand(s *Server, c *client, argv [][]byte) {
	if len(argv) == 1 {
		s.commandInfoAll(c)
		return
	}
	sub := argv[1]
	switch {
	case resp.EqualFold(sub, "count") && len(argv) == 2:
		c.w.Int(int64(len(s.commands)))
	case resp.EqualFold(sub, "info"):
		if len(argv) == 2 {
			s.commandInfoAll(c)
			return
		}
		c.w.Array(len(argv) - 2)
		for _, n := range argv[2:] {
			if name, cmd := s.lookupFullName(n); cmd != nil {
				writeCommandInfo(c, name, cmd)
			} else {
				c.w.Null()
			}
		}
	case resp.EqualFold(sub, "docs"):
		s.commandDocs(c, argv[2:])
	case resp.EqualFold(sub, "list"):
		s.commandList(c, argv)
	case resp.EqualFold(sub, "getkeys") && len(argv) >= 4, resp.EqualFold(sub, "getkeysandflags") && len(argv) >= 4:
		s.commandGetKeys(c, argv[2:], resp.EqualFold(sub, "getkeysandflags"))
	case resp.EqualFold(sub, "getkeys"), resp.EqualFold(sub, "getkeysandflags"):
		s.wrongArgs(c, "command|"+lowerASCII(string(sub)))
	case resp.EqualFold(sub, "help") && len(argv) == 2:
		writeHelp(c, "COMMAND", []string{
			"(no subcommand)", "    Return details about all Redis commands.",
			"COUNT", "    Return the total number of commands in this Redis server.",
			"LIST", "    Return a list of all commands in this Redis server.",
			"INFO [<command-name> ...]", "    Return details about multiple Redis commands.",
			"    If no command names are given, documentation details for all",
			"    commands are returned.",
			"DOCS [<command-name> ...]", "    Return documentation details about multiple Redis commands.",
			"    If no command names are given, documentation details for all",
			"    commands are returned.",
			"GETKEYS <full-command>", "    Return the keys from a full Redis command.",
			"GETKEYSANDFLAGS <full-command>", "    Return the keys and the access flags from a full Redis command.",
		})
	default:
		s.subcommandError(c, argv)
	}
}

// lookupFullName finds a command by its full name, "get" or "config|get": the container must be
// one of iocache's commands and the subcommand one Redis lists for it. It returns the full name
// under the command's original name (a renamed command reports that, as in Redis) and the
// (container's) command.
func (s *Server) lookupFullName(b []byte) (string, *command) {
	base, subName, isSub := strings.Cut(lowerASCII(string(b)), "|")
	cmd := s.commands[base]
	if cmd == nil || strings.Contains(subName, "|") {
		return "", nil
	}
	name := cmd.name
	if isSub {
		name += "|" + subName
		if commandInfoEntry(name) == nil {
			return "", nil
		}
	}
	return name, cmd
}

func (s *Server) sortedCommands() []*command {
	out := make([]*command, 0, len(s.commands))
	for _, cmd := range s.commands {
		out = append(out, cmd)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func (s *Server) commandInfoAll(c *client) {
	cmds := s.sortedCommands()
	c.w.Array(len(cmds))
	for _, cmd := range cmds {
		writeCommandInfo(c, cmd.name, cmd)
	}
}

// writeCommandInfo writes the 10-element COMMAND INFO entry of Redis 7: Redis's own when it has
// the command, else one made from the command table.
func writeCommandInfo(c *client, name string, cmd *command) {
	if e := commandInfoEntry(name); e != nil {
		e.write(c)
		return
	}
	c.w.Array(10)
	c.w.BulkString(cmd.name)
	c.w.Int(int64(cmd.arity))
	var flags []string
	for i, n := range flagNames {
		if n != "" && cmd.flags&(1<<i) != 0 {
			flags = append(flags, n)
		}
	}
	c.w.Set(len(flags))
	for _, f := range flags {
		c.w.Simple(f)
	}
	c.w.Int(int64(cmd.firstKey))
	c.w.Int(int64(cmd.lastKey))
	c.w.Int(int64(cmd.step))
	cats := commandACLCategories(cmd.name, cmd)
	c.w.Set(len(cats))
	for _, cat := range cats {
		c.w.Simple("@" + cat)
	}
	c.w.EmptyArray() // tips
	c.w.EmptyArray() // key specs
	c.w.EmptyArray() // subcommands
}

// commandDocs answers COMMAND DOCS: every command, or the named ones that exist (others are left
// out, as in Redis), each with Redis's documentation when it has the command.
func (s *Server) commandDocs(c *client, names [][]byte) {
	type doc struct {
		name string
		cmd  *command
	}
	var docs []doc
	if len(names) == 0 {
		for _, cmd := range s.sortedCommands() {
			docs = append(docs, doc{cmd.name, cmd})
		}
	} else {
		for _, n := range names {
			if name, cmd := s.lookupFullName(n); cmd != nil {
				docs = append(docs, doc{name, cmd})
			}
		}
	}
	c.w.Map(len(docs))
	for _, d := range docs {
		c.w.BulkString(d.name)
		if e := commandDocsEntry(d.name); e != nil {
			e.write(c)
			continue
		}
		c.w.Map(3)
		c.w.BulkString("summary")
		c.w.BulkString(d.cmd.summary)
		c.w.BulkString("since")
		c.w.BulkString("1.0.0")
		c.w.BulkString("group")
		c.w.BulkString(d.cmd.group)
	}
}

// commandList answers COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN pattern]:
// every command and, for containers, their subcommands ("config|get"), as Redis 7.0 lists them.
func (s *Server) commandList(c *client, argv [][]byte) {
	keep := func(string, *command) bool { return true }
	switch {
	case len(argv) == 2:
	case len(argv) == 5 && resp.EqualFold(argv[2], "filterby"):
		value := string(argv[4])
		switch {
		case resp.EqualFold(argv[3], "module"):
			keep = func(string, *command) bool { return false } // no modules
		case resp.EqualFold(argv[3], "aclcat"):
			cat := lowerASCII(value)
			keep = func(name string, cmd *command) bool {
				for _, have := range commandACLCategories(name, cmd) {
					if have == cat {
						return true
					}
				}
				return false
			}
		case resp.EqualFold(argv[3], "pattern"):
			keep = func(name string, _ *command) bool { return glob.MatchString(value, name, true) }
		default:
			s.addError(c, errSyntax)
			return
		}
	default:
		s.addError(c, errSyntax)
		return
	}
	var names []string
	for _, cmd := range s.sortedCommands() {
		if keep(cmd.name, cmd) {
			names = append(names, cmd.name)
		}
		for _, sub := range subcommandNames(cmd.name) {
			if keep(sub, cmd) {
				names = append(names, sub)
			}
		}
	}
	c.w.Array(len(names))
	for _, n := range names {
		c.w.BulkString(n)
	}
}

// commandGetKeys answers COMMAND GETKEYS and GETKEYSANDFLAGS for the command line args, with
// Redis 7.0's checks and errors.
func (s *Server) commandGetKeys(c *client, args [][]byte, withFlags bool) {
	cmd := s.lookupCommand(args[0])
	if cmd == nil {
		s.addError(c, "ERR Invalid command specified")
		return
	}
	name := cmd.name
	entry := commandInfoEntry(name)
	if entry != nil && len(entry.elems[9].elems) > 0 && len(args) >= 2 {
		name += "|" + lowerASCII(string(args[1]))
		if entry = commandInfoEntry(name); entry == nil {
			s.addError(c, "ERR Invalid command specified")
			return
		}
	}
	arity := cmd.arity
	if entry != nil {
		arity = int(entry.elems[1].num)
	}
	if (entry != nil && len(entry.elems[8].elems) == 0) || (entry == nil && cmd.firstKey == 0) {
		s.addError(c, "ERR The command has no key arguments")
		return
	}
	if (arity > 0 && arity != len(args)) || len(args) < -arity {
		s.addError(c, "ERR Invalid number of arguments specified for command")
		return
	}
	var keys []foundKey
	if entry != nil {
		keys, _ = appendKeys(nil, name, args)
	} else {
		for _, k := range commandKeys(cmd, args) {
			keys = append(keys, foundKey{key: k})
		}
	}
	if len(keys) == 0 {
		if entry != nil && hasString(entry.elems[2].strings(), "no_mandatory_keys") {
			c.w.EmptyArray()
		} else {
			s.addError(c, "ERR Invalid arguments specified for command")
		}
		return
	}
	c.w.Array(len(keys))
	for _, k := range keys {
		if !withFlags {
			c.w.Bulk(k.key)
			continue
		}
		c.w.Array(2)
		c.w.Bulk(k.key)
		c.w.Set(len(k.flags))
		for _, f := range k.flags {
			c.w.Simple(f)
		}
	}
}

func hasString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// commandKeys extracts key arguments by the command's first/last/step (client tracking, and
// COMMAND GETKEYS for iocache's own commands).
func commandKeys(cmd *command, argv [][]byte) [][]byte {
	if cmd.firstKey == 0 {
		return nil
	}
	last := cmd.lastKey
	if last < 0 {
		last = len(argv) + last
	}
	var keys [][]byte
	for i := cmd.firstKey; i <= last && i < len(argv); i += cmd.step {
		keys = append(keys, argv[i])
	}
	return keys
}
