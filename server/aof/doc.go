// Package aof is the file format of Redis 7.0's multi-part append-only file: the manifest that
// lists a base and incremental files (its text, its file names, its atomic replacement), reading
// the commands of one file back with the offset of the last complete one (so that a file cut
// short by a crash can be truncated there), the RDB preamble a base may start with, and writing
// a base of commands (aof-use-rdb-preamble no).
//
// It owns no state of a running server and decides no policy: when to write, fsync or rewrite,
// what a loaded command does, whether a short file may be truncated and what is logged stay in
// server/engine, which passes in the configured appendfilename and directory and receives
// loaded commands through callbacks (Handler). It may import keyspace (the values a base
// rebuilds) and resp (RESP encoding, argument splitting), never the engine, so that the format
// is tested on its own.
package aof
