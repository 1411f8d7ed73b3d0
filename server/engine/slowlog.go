package engine

import (
	"strings"

	"github.com/iocache/iocache/server/resp"
)

// slowlog keeps the commands that took longer than slowlog-log-slower-than microseconds, newest
// first, at most slowlog-max-len of them.
type slowlog struct {
	nextID  int64
	entries recentLog[slowEntry]
}

type slowEntry struct {
	id   int64
	time int64
	usec int64
	argv []string
	addr string
	name string
}

const slowlogMaxArgs, slowlogMaxArgLen = 32, 128

func (l *slowlog) add(s *Server, c *client, argv [][]byte, usec int64) {
	if s.cfg.SlowlogMaxLen == 0 {
		return
	}
	n := len(argv)
	if n > slowlogMaxArgs {
		n = slowlogMaxArgs
	}
	args := make([]string, 0, n)
	for i := 0; i < n; i++ {
		if i == slowlogMaxArgs-1 && len(argv) > slowlogMaxArgs {
			args = append(args, "... ("+itoa(int64(len(argv)-slowlogMaxArgs+1))+" more arguments)")
			break
		}
		a := argv[i]
		if len(a) > slowlogMaxArgLen {
			args = append(args, string(a[:slowlogMaxArgLen])+"... ("+itoa(int64(len(a)-slowlogMaxArgLen))+" more bytes)")
		} else {
			args = append(args, string(a))
		}
	}
	e := slowEntry{id: l.nextID, time: s.unixtime, usec: usec, argv: args, addr: c.addr, name: c.name}
	l.nextID++
	l.entries.Push(e, s.cfg.SlowlogMaxLen)
}

func cmdSlowlog(s *Server, c *client, argv [][]byte) {
	sub := argv[1]
	switch {
	case resp.EqualFold(sub, "get") && len(argv) <= 3:
		count := 10
		if len(argv) == 3 {
			n, ok := parseInt(argv[2])
			if !ok || n < -1 {
				s.addError(c, "ERR count should be greater than or equal to -1")
				return
			}
			count = int(n)
			if n == -1 {
				count = s.slowlog.entries.Len()
			}
		}
		if count > s.slowlog.entries.Len() {
			count = s.slowlog.entries.Len()
		}
		c.w.Array(count)
		for i := 0; i < count; i++ {
			e := s.slowlog.entries.At(i)
			c.w.Array(6)
			c.w.Int(e.id)
			c.w.Int(e.time)
			c.w.Int(e.usec)
			c.w.Array(len(e.argv))
			for _, a := range e.argv {
				c.w.BulkString(a)
			}
			c.w.BulkString(e.addr)
			c.w.BulkString(e.name)
		}
	case resp.EqualFold(sub, "len") && len(argv) == 2:
		c.w.Int(int64(s.slowlog.entries.Len()))
	case resp.EqualFold(sub, "reset") && len(argv) == 2:
		s.slowlog.entries.Reset()
		c.w.OK()
	case resp.EqualFold(sub, "help") && len(argv) == 2:
		writeHelp(c, "SLOWLOG", []string{
			"GET [<count>]", "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
			"LEN", "    Return the length of the slowlog.",
			"RESET", "    Reset the slowlog.",
		})
	default:
		s.subcommandError(c, argv)
	}
}

// containerSubcommands are the subcommands Redis 7.0 registers for a container command, from its
// COMMAND INFO entry (command_meta.go); isContainer is false for any other command. For these,
// an unknown subcommand and a known one with the wrong arguments get different errors.
func containerSubcommands(container string) (subs []string, isContainer bool) {
	for _, full := range subcommandNames(container) {
		_, sub, _ := strings.Cut(full, "|")
		subs = append(subs, sub)
	}
	return subs, len(subs) > 0
}

// subcommandError is Redis 7.0's reply to an unknown subcommand, or to a known one with the wrong
// number of arguments. Commands that are not containers (DEBUG) keep the older combined text.
func (s *Server) subcommandError(c *client, argv [][]byte) {
	container := lowerASCII(string(argv[0]))
	known, isContainer := containerSubcommands(container)
	if !isContainer {
		s.addError(c, "ERR unknown subcommand or wrong number of arguments for '"+truncate(string(argv[1]), 128)+"'. Try "+upper(string(argv[0]))+" HELP.")
		return
	}
	sub := lowerASCII(string(argv[1]))
	for _, k := range known {
		if k == sub {
			// processCommand has checked Redis's arity of the subcommand already: a known one
			// with arguments its handler refuses gets addReplySubcommandSyntaxError's text, as
			// in Redis 7.0 (FUNCTION RESTORE a b c).
			if cmd := s.commands[container]; cmd != nil {
				if st := cmd.subs[sub]; st != nil && st.arity != 0 && !((st.arity > 0 && len(argv) != st.arity) || len(argv) < -st.arity) {
					s.addError(c, "ERR unknown subcommand or wrong number of arguments for '"+truncate(string(argv[1]), 128)+"'. Try "+upper(string(argv[0]))+" HELP.")
					return
				}
			}
			s.addError(c, "ERR wrong number of arguments for '"+container+"|"+sub+"' command")
			return
		}
	}
	s.addError(c, "ERR unknown subcommand '"+truncate(string(argv[1]), 128)+"'. Try "+upper(string(argv[0]))+" HELP.")
}

func writeHelp(c *client, name string, lines []string) {
	all := append([]string{name + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"}, lines...)
	all = append(all, "HELP", "    Prints this help.")
	c.w.Array(len(all))
	for _, l := range all {
		c.w.Simple(l)
	}
}

func upper(s string) string {
	b := []byte(s)
	for i, ch := range b {
		if ch >= 'a' && ch <= 'z' {
			b[i] = ch - 'a' + 'A'
		}
	}
	return string(b)
}

func itoa(v int64) string {
	var buf [20]byte
	i := len(buf)
	neg := v < 0
	u := uint64(v)
	if neg {
		u = uint64(-v)
	}
	for {
		i--
		buf[i] = byte('0' + u%10)
		u /= 10
		if u == 0 {
			break
		}
	}
	if neg {
		i--
		buf[i] = '-'
	}
	return string(buf[i:])
}

// slowlogCommands registers this file's commands (see table.go).
var slowlogCommands = []commandSpec{
	{name: "slowlog", h: cmdSlowlog, own: cmdAdmin | cmdStale}, // a container: Redis flags its subcommands
}
