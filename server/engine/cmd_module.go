package engine

import (
	"strings"

	"github.com/iocache/iocache/server/resp"
)

// MODULE, as a Redis 7.0 without modules answers it: LIST is empty, and LOAD, LOADEX and UNLOAD
// are refused, with enable-module-command's error while that is no (the default), else with
// Redis's load and unload failures: iocache cannot load Redis modules.

func cmdModule(s *Server, c *client, argv [][]byte) {
	sub := argv[1]
	switch {
	case resp.EqualFold(sub, "list") && len(argv) == 2:
		c.w.EmptyArray()
	case (resp.EqualFold(sub, "load") || resp.EqualFold(sub, "loadex")) && len(argv) >= 3, resp.EqualFold(sub, "unload") && len(argv) == 3:
		if !s.moduleCommandAllowed(c) {
			s.addError(c, "ERR MODULE command not allowed. If the enable-module-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.")
			return
		}
		if resp.EqualFold(sub, "unload") {
			s.addError(c, "ERR Error unloading module: no such module with that name")
			return
		}
		s.addError(c, "ERR Error loading the extension. Please check the server logs.")
	case resp.EqualFold(sub, "help") && len(argv) == 2:
		writeHelp(c, "MODULE", []string{
			"LIST", "    Return a list of loaded modules.",
			"LOAD <path> [<arg> ...]", "    Load a module library from <path>, passing to it any optional arguments.",
			"LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
			"    Load a module library from <path>, while passing it module configurations and optional arguments.",
			"UNLOAD <name>", "    Unload a module.",
		})
	default:
		s.subcommandError(c, argv)
	}
}

// moduleCommandAllowed applies enable-module-command as enable-debug-command is applied.
func (s *Server) moduleCommandAllowed(c *client) bool {
	switch s.cfg.Compat["enable-module-command"] {
	case "yes":
		return true
	case "local":
		return c.unix || strings.HasPrefix(c.addr, "127.0.0.1:") || strings.HasPrefix(c.addr, "[::1]:")
	}
	return false
}

// moduleCommands registers this file's commands (see table.go).
var moduleCommands = []commandSpec{
	{name: "module", h: cmdModule, own: cmdAdmin | cmdNoScript}, // a container: Redis flags its subcommands
}
