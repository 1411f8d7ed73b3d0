// Package version holds the release version stamped into all three programs at build time, so the
// operator can default the server image to its own tag and every binary can report what it is.
package version

// Version is set with -ldflags "-X github.com/iocache/iocache/server/version.Version=...".
var Version = "0.1.0-dev"

// RedisVersion is the Redis version iocache reports in INFO and HELLO: the command set and
// behaviour it follows. Clients use it to decide which commands they may send.
const RedisVersion = "7.2.5"
