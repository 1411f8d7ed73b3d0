// Package engine is iocache-server: a Redis-compatible server whose commands execute on one main
// thread while socket reads, parsing and writes run on pinned I/O threads (io-threads), as in
// Redis 8. One Server type holds all state the main thread owns; the subsystems are told apart
// by file names:
//
//   - Main loop and clients: server.go (New, Serve, mainLoop, beforeSleep), client.go, outbuf.go
//     (output buffer limits), cron.go (serverCron), clock.go, bio.go (the background thread),
//     main.go (the command line; --check-health and --pre-stop are package probe).
//   - I/O engine: ioengine.go is what package netio's I/O threads may call back into (command
//     execution on the main thread, limits, accounting); layout.go re-pins threads live.
//   - The write path: write.go. Every write ends with one call (wrote) that announces it,
//     deletes a collection it emptied and marks the key modified (dirty, WATCH, blocked clients,
//     client-side caching); a collection a failed command created is swept when the command ends.
//     TestWritesHaveTheirEffects holds every write command to redis-server's effects.
//   - Configuration: CONFIG SET in cmd_server.go; what each directive's change does is
//     config_effects.go, one function per config.Effect.
//   - Commands: table.go and commands.go (the table, flags, dispatch), command_meta.go (Redis's
//     COMMAND INFO and DOCS, embedded from redis_commands.resp: the one source of key specs, ACL
//     categories and subcommands), keyspecs.go (finding keys, for GETKEYS and ACL alike),
//     cmd_*.go (one file per family), blocking.go,
//     multi.go, pubsub*.go, tracking.go, pause.go, expire.go, evict.go, info.go, metrics.go,
//     debug*.go, slowlog.go, latency_*.go.
//   - Scripting: script.go (EVAL, SCRIPT, and scriptHost: redis.call's dispatch into the command
//     table), script_function.go (FUNCTION, FCALL), script_busy.go (a script past
//     busy-reply-threshold: BUSY, SCRIPT KILL, FUNCTION KILL); the Lua state, its sandbox and limits, the
//     script cache and the function registry are package scripting, the Lua libraries package
//     lualib.
//   - ACL: the model (users, rules, passwords, the permission check, ACL LIST's descriptions) is
//     package acl. Here: acl.go (the state the Server holds, the check of a call),
//     acl_categories.go (the commands described to acl.NewTable), acl_keyspecs.go (a call's
//     keys), acl_cmd.go (ACL, AUTH), acl_file.go (user lines, the aclfile, a removed user's
//     clients), acl_log.go (ACL LOG, denied commands' replies); protected.go (protected mode).
//   - Replication: propagate.go (the stream), replication_primary.go, replication_replica.go,
//     replication_fullsync.go, replication_wait.go (WAIT), replication_failover.go,
//     replication_budget.go, and replication_info.go and replication_metrics.go; the backlog
//     ring, the full sync's sink, the replica's wire helpers and the sync budget's counting are
//     package replication.
//   - Persistence: persist.go (RDB SAVE, load, save points; the format is package rdb),
//     bgsave.go (forkless BGSAVE), aof.go (the buffer, writes, fsync policy), aof_manifest.go
//     (where the files are), aof_load.go (loading at start), aof_rewrite.go; the AOF's format
//     (the manifest and its file names, replaying a file, a base of commands) is package aof.
//   - TLS: tls.go (tls-port listeners, handshakes, CONFIG SET of tls-*); building crypto/tls
//     configurations from the tls-* directives is package tlsconfig.
//
// Only the server's mains (server/cmd/...) import this package; it imports the packages below
// it (acl, config, keyspace, netio, resp, rdb, aof, replication, scripting, lualib, tlsconfig...)
// and none of them imports it back. docs/architecture.md draws the whole map.
package engine
