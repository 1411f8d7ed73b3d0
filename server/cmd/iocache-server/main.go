// Command iocache-server is a Redis-compatible cache server whose socket I/O runs on pinned I/O
// threads while commands execute on one main thread. Usage follows redis-server:
//
//	iocache-server [/path/to/iocache.conf] [--directive value ...]
package main

import (
	"os"

	"github.com/iocache/iocache/server/engine"
)

func main() {
	os.Exit(engine.Main(os.Args[1:], os.Stdout, os.Stderr))
}
