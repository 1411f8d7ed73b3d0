package engine

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/probe"
	"github.com/iocache/iocache/server/version"
)

const usage = `Usage: iocache-server [/path/to/iocache.conf] [options] [-]
       iocache-server - (read config from stdin)
       iocache-server -v or --version
       iocache-server -h or --help
       iocache-server --check-health [--host H] [--port P] [--tls --cacert F [--cert F --key F]]
                  (exit 0 when the server answers PING)

Options are redis.conf directives written as flags, as with redis-server:
       iocache-server --port 7777
       iocache-server --io-threads auto --server_cpulist auto --bio_cpulist auto
       iocache-server /etc/iocache/iocache.conf --loglevel verbose --requirepass secret

Threading: commands run on one main thread; io-threads N (main thread included) moves socket
reads, parsing and writes to N-1 pinned I/O threads. server_cpulist, bio_cpulist,
aof_rewrite_cpulist and bgsave_cpulist pin each kind of work (taskset syntax, or auto);
cpulist-mode relative reads them as positions within the CPUs the process may use.
`

// Main runs iocache-server with redis-server's command line and returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 {
		switch args[0] {
		case "-h", "--help":
			fmt.Fprint(stdout, usage)
			return 0
		case "-v", "--version":
			fmt.Fprintf(stdout, "iocache-server v=%s redis=%s\n", version.Version, version.RedisVersion)
			return 0
		}
	}
	if len(args) > 0 && args[0] == "--check-health" {
		return probe.CheckHealth(args[1:], stderr)
	}
	if len(args) > 0 && args[0] == "--pre-stop" {
		return probe.PreStop(args[1:], stderr)
	}
	cfg, err := config.Load(args, os.Stdin)
	if err != nil {
		var fe *config.FileError
		if errors.As(err, &fe) {
			fmt.Fprintln(stderr, fe.Error())
		} else {
			fmt.Fprintln(stderr, err)
		}
		return 1
	}
	return run(cfg, stderr)
}
