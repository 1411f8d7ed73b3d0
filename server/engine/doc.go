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
//     table), script_function.go (FUNCTION, FCALL); the Lua state, its sandbox and limits, the
//     script cache and the function registry are package scripting, the Lua libraries package
//     lualib.
//   - ACL: acl.go (users and rules), acl_cmd.go (ACL, AUTH), acl_categories.go, acl_keyspecs.go,
//     acl_describe.go, acl_file.go, acl_log.go; protected.go (protected mode).
//   - Replication: propagate.go (the stream), replication_primary.go, replication_replica.go,
//     replication_fullsync.go, replication_wait.go (WAIT), replication_failover.go, and
//     replication_info.go and replication_metrics.go.
//   - Persistence: persist.go (RDB SAVE, load, save points; the format is package rdb),
//     bgsave.go (forkless BGSAVE), aof.go, aof_manifest.go, aof_load.go, aof_rewrite.go,
//     aof_base.go.
//   - TLS: tls.go (tls-port listeners, handshakes, CONFIG SET of tls-*); building crypto/tls
//     configurations from the tls-* directives is package tlsconfig.
//
// Only the server's mains (server/cmd/...) import this package; it imports the packages below
// it (config, keyspace, netio, resp, rdb, scripting, lualib, tlsconfig...) and none of them imports it
// back. docs/architecture.md draws the whole map.
package engine
