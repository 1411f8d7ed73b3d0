// Package lualib is what Redis 7.0's Lua has that gopher-lua lacks: the bit, cjson, cmsgpack and
// struct libraries, Lua 5.1's pattern matching (interruptible, for string.find, match, gmatch and
// gsub), and the nesting check that refuses a script before gopher-lua's compiler could overflow
// the stack. Each is a function of a Lua state and its arguments: it imports gopher-lua and the
// standard library only, and knows nothing of the server; server/engine's scripting opens them
// into each state and decides when a script is stopped.
package lualib
