// Package scripting is Redis 7.0's Lua scripting without the server: everything about scripts
// and functions that does not need the engine's Server, so that it can be read, and tested,
// on its own.
//
// It owns the Lua state scripts and functions run in (State: gopher-lua opened with Redis's
// libraries from package lualib, in a sandbox that keeps one script from changing what the next
// one runs), the limits a run is held to (time, memory, the size of strings it builds), the
// script cache by SHA1 with each script's shebang flags, the function registry (libraries,
// their functions and flags, FUNCTION LOAD's parsing and redis.register_function, RESTORE's
// policies), the conversions between RESP replies and Lua values both ways, and the wording of
// scripts' errors as Redis's.
//
// It does not run commands: what a script reaches of the server (redis.call's command,
// redis.acl_check_cmd, redis.log, the current limits) goes through the Host the engine passes
// to New. The engine keeps the commands (EVAL, FCALL, SCRIPT, FUNCTION), redis.call's dispatch
// into its command table with the checks Redis makes there, propagation, and what the flags
// mean for maxmemory, CLIENT PAUSE and read-only scripts.
//
// It may import the packages below it (lualib, resp, version) and never server/engine.
package scripting
