package engine

import (
	"github.com/iocache/iocache/server/glob"
	"github.com/iocache/iocache/server/rdb"
	"github.com/iocache/iocache/server/resp"
	"github.com/iocache/iocache/server/scripting"
)

// Redis 7.0 functions' commands: FUNCTION LOAD|LIST|DELETE|FLUSH|DUMP|RESTORE|STATS|KILL and
// FCALL, FCALL_RO. Loading and running libraries, on the Lua state EVAL uses, and the registry of
// what is loaded are package scripting's; the Server keeps the registry (s.functions).
// Libraries are saved in RDB files (persist.go) after the aux fields, as Redis saves them.

// loadLibrary compiles and runs a library's code and returns the library it registers, or the
// error reply; it does not install it.
func (s *Server) loadLibrary(code []byte) (*scripting.Library, string) {
	return s.scriptHost().state.LoadLibrary(code)
}

func cmdFunction(s *Server, c *client, argv [][]byte) {
	sub := argv[1]
	switch {
	case resp.EqualFold(sub, "load") && len(argv) >= 3:
		s.functionLoad(c, argv[2:])
	case resp.EqualFold(sub, "list"):
		s.functionList(c, argv[2:])
	case resp.EqualFold(sub, "delete") && len(argv) == 3:
		if !s.functions.Remove(string(argv[2])) {
			s.addError(c, "ERR Library not found")
			return
		}
		c.w.OK()
	case resp.EqualFold(sub, "flush") && len(argv) <= 3:
		if len(argv) == 3 && !resp.EqualFold(argv[2], "async") && !resp.EqualFold(argv[2], "sync") {
			s.addError(c, "ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
			return
		}
		s.functions = scripting.Registry{}
		c.w.OK()
	case resp.EqualFold(sub, "stats") && len(argv) == 2:
		if s.script.caller != nil && s.script.eval {
			s.addError(c, errBusyScript) // as Redis answers while a script (not a function) runs
			return
		}
		c.w.Map(2)
		c.w.BulkString("running_script")
		s.runningScriptStats(c)
		c.w.BulkString("engines")
		c.w.Map(1)
		c.w.BulkString("LUA")
		c.w.Map(2)
		libraries, functions := s.functions.Len()
		c.w.BulkString("libraries_count")
		c.w.Int(int64(libraries))
		c.w.BulkString("functions_count")
		c.w.Int(int64(functions))
	case resp.EqualFold(sub, "kill") && len(argv) == 2:
		s.scriptKill(c, false)
	case resp.EqualFold(sub, "dump") && len(argv) == 2:
		c.w.Bulk(rdb.DumpFunctions(s.functionCodes(), s.rdbOptions()))
	case resp.EqualFold(sub, "restore") && (len(argv) == 3 || len(argv) == 4):
		s.functionRestore(c, argv[2:])
	case resp.EqualFold(sub, "help") && len(argv) == 2:
		writeHelp(c, "FUNCTION", functionHelp)
	default:
		s.subcommandError(c, argv)
	}
}

// functionLoad is FUNCTION LOAD [REPLACE] code.
func (s *Server) functionLoad(c *client, args [][]byte) {
	replace := false
	if len(args) == 2 && resp.EqualFold(args[0], "replace") {
		replace, args = true, args[1:]
	}
	if len(args) != 1 {
		s.addError(c, "ERR Unknown option given: "+string(args[0]))
		return
	}
	if name, errText := scripting.LibraryName(args[0]); errText == "" && !replace && s.functions.Library(name) != nil {
		s.addError(c, "ERR Library '"+name+"' already exists")
		return
	}
	lib, errText := s.loadLibrary(args[0])
	if errText != "" {
		s.addError(c, errText)
		return
	}
	if errText := s.functions.Conflicts(lib); errText != "" {
		s.addError(c, errText)
		return
	}
	s.functions.Add(lib)
	c.w.BulkString(lib.Name)
}

// functionList is FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE].
func (s *Server) functionList(c *client, args [][]byte) {
	withCode := false
	var pattern []byte
	for i := 0; i < len(args); i++ {
		switch {
		case resp.EqualFold(args[i], "withcode") && !withCode:
			withCode = true
		case resp.EqualFold(args[i], "libraryname") && pattern == nil:
			if i+1 >= len(args) {
				s.addError(c, "ERR library name argument was not given")
				return
			}
			pattern = args[i+1]
			i++
		default:
			s.addError(c, "ERR Unknown argument "+string(args[i]))
			return
		}
	}
	var libs []*scripting.Library
	for _, lib := range s.functions.Libraries() {
		if pattern == nil || glob.Match(pattern, []byte(lib.Name), false) {
			libs = append(libs, lib)
		}
	}
	c.w.Array(len(libs))
	for _, lib := range libs {
		if withCode {
			c.w.Map(4)
		} else {
			c.w.Map(3)
		}
		c.w.BulkString("library_name")
		c.w.BulkString(lib.Name)
		c.w.BulkString("engine")
		c.w.BulkString("LUA")
		c.w.BulkString("functions")
		c.w.Array(len(lib.Functions))
		for _, f := range lib.Functions {
			c.w.Map(3)
			c.w.BulkString("name")
			c.w.BulkString(f.Name)
			c.w.BulkString("description")
			if d, ok := f.Description(); ok {
				c.w.BulkString(d)
			} else {
				c.w.Null()
			}
			c.w.BulkString("flags")
			c.w.Set(len(f.Flags))
			for _, flag := range f.Flags {
				c.w.Simple(flag)
			}
		}
		if withCode {
			c.w.BulkString("library_code")
			c.w.BulkString(lib.Code)
		}
	}
}

// functionRestore is FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE]: every library in the
// payload loads, or none does.
func (s *Server) functionRestore(c *client, args [][]byte) {
	policy := scripting.RestoreAppend
	if len(args) == 2 {
		switch lowerASCII(string(args[1])) {
		case "flush":
			policy = scripting.RestoreFlush
		case "append":
		case "replace":
			policy = scripting.RestoreReplace
		default:
			s.addError(c, "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
			return
		}
	}
	codes, err := rdb.RestoreFunctions(args[0])
	if err == rdb.ErrDumpPayload {
		s.addError(c, "ERR DUMP payload version or checksum are wrong")
		return
	}
	if err != nil {
		s.addError(c, "ERR given type is not a function")
		return
	}
	var loaded []*scripting.Library
	for _, code := range codes {
		lib, errText := s.loadLibrary(code)
		if errText != "" {
			s.addError(c, errText)
			return
		}
		loaded = append(loaded, lib)
	}
	next, errText := s.functions.Restore(loaded, policy)
	if errText != "" {
		s.addError(c, errText)
		return
	}
	s.functions = next
	c.w.OK()
}

// pausedFunction reports whether CLIENT PAUSE WRITE must hold this FCALL: a function may write
// unless it declares no-writes; an unknown one is held and answers once the pause ends.
func (s *Server) pausedFunction(argv [][]byte) bool {
	f := s.functions.Function(string(argv[1]))
	return f == nil || !f.NoWrites()
}

func cmdFCall(s *Server, c *client, argv [][]byte)   { fcallGeneric(s, c, argv, false) }
func cmdFCallRO(s *Server, c *client, argv [][]byte) { fcallGeneric(s, c, argv, true) }

// fcallGeneric is FCALL and FCALL_RO function numkeys [key ...] [arg ...].
func fcallGeneric(s *Server, c *client, argv [][]byte, readOnly bool) {
	// FCALL is flagged skip_monitor and shown here, before the commands its function runs, as
	// Redis's fcallCommandGeneric does (an unknown function included).
	if len(s.pubsub.monitors) > 0 {
		s.feedMonitors(c, argv)
	}
	f := s.functions.Function(string(argv[1]))
	if f == nil {
		s.addError(c, "ERR Function not found")
		return
	}
	numKeys, ok := parseInt(argv[2])
	switch {
	case !ok:
		s.addError(c, "ERR Bad number of keys provided")
		return
	case numKeys > int64(len(argv)-3):
		s.addError(c, "ERR Number of keys can't be greater than number of args")
		return
	case numKeys < 0:
		s.addError(c, "ERR Number of keys can't be negative")
		return
	}
	if readOnly && !f.NoWrites() {
		s.addError(c, "ERR Can not execute a script with write flag using *_ro command.")
		return
	}
	// As for a script with a shebang: one that may write and does not allow OOM is refused as a
	// whole over maxmemory.
	if !f.NoWrites() && !f.AllowOOM() && s.cfg.MaxMemory > 0 && !s.freeMemoryIfNeeded() {
		s.addError(c, "OOM command not allowed when used memory > 'maxmemory'.")
		return
	}
	h := s.scriptHost()
	keys, args := argv[3:3+numKeys], argv[3+numKeys:]
	h.run(c, argv, keys, f.Name, false, readOnly || f.NoWrites(), f.AllowOOM()) // the function's commands run as the caller's user
	ret, errReply := h.state.FCall(f, keys, args)
	if !s.endScript(c) {
		s.scriptReply(c, ret, errReply)
	}
}

var functionHelp = []string{
	"LOAD [REPLACE] <FUNCTION CODE>", "    Create a new library with the given library name and code.",
	"DELETE <LIBRARY NAME>", "    Delete the given library.",
	"LIST [LIBRARYNAME PATTERN] [WITHCODE]", "    Return general information on all the libraries:",
	"    * Library name", "    * The engine used to run the Library", "    * Library description", "    * Functions list",
	"    * Library code (if WITHCODE is given)",
	"    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
	"STATS", "    Return information about the current function running:", "    * Function name",
	"    * Command used to run the function", "    * Duration in MS that the function is running",
	"    If no function is running, return nil", "    In addition, returns a list of available engines.",
	"KILL", "    Kill the current running function.",
	"FLUSH [ASYNC|SYNC]", "    Delete all the libraries.",
	"    When called without the optional mode argument, the behavior is determined by the",
	"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
	"    * ASYNC: Asynchronously flush the libraries.", "    * SYNC: Synchronously flush the libraries.",
	"DUMP", "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
	"RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
	"    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
	"    control how to handle existing libraries (default APPEND):", "    * FLUSH: delete all existing libraries.",
	"    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
	"    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
	"      libraries with the new libraries (notice that even on this option there is a chance of failure",
	"      in case of functions name collision with another library).",
}

// functionCommands registers this file's commands (see table.go).
var functionCommands = []commandSpec{
	{name: "function", h: cmdFunction, own: cmdNoScript}, // a container: Redis flags its subcommands
	{name: "fcall", h: cmdFCall, own: cmdMayReplicate},   // Redis's, hidden by COMMAND INFO
	{name: "fcall_ro", h: cmdFCallRO},
}
