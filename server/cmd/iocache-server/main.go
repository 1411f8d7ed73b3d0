// Command iocache-server is a Redis-compatible cache server whose socket I/O runs on pinned I/O
// threads while commands execute on one main thread. Usage follows redis-server:
//
//	iocache-server [/path/to/iocache.conf] [--directive value ...]
//
// The same binary moves data to and from S3-compatible storage, as redis-server doubles as
// redis-check-rdb:
//
//	iocache-server backup --source host:port --endpoint URL --bucket B [--prefix P] ...
//	iocache-server restore --endpoint URL --bucket B [--prefix P] --name NAME --to dump.rdb
package main

import (
	"os"

	"github.com/iocache/iocache/server/backup"
	"github.com/iocache/iocache/server/engine"
)

func main() {
	if len(os.Args) > 1 && (os.Args[1] == "backup" || os.Args[1] == "restore") {
		os.Exit(backup.Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(engine.Main(os.Args[1:], os.Stdout, os.Stderr))
}
