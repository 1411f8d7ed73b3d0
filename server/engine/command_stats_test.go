package engine

import (
	"regexp"
	"sort"
	"strings"
	"testing"
)

// Statistics are kept per subcommand, as Redis 7.0 keeps them: INFO commandstats and LATENCY
// HISTOGRAM name "config|resetstat", "client|id"... with the same calls, rejections and failures
// as redis-server's (Redis's unit/latency-monitor reads them).
func TestSubcommandStatsAsRedis(t *testing.T) {
	_, io := startServer(t, nil)
	statLine := regexp.MustCompile(`cmdstat_([^:]+):calls=(\d+),usec=\d+,usec_per_call=[\d.]+,rejected_calls=(\d+),failed_calls=(\d+)`)
	histName := regexp.MustCompile(`\$\d+\r\n([a-z_|]+)\r\n%2\r\n\$5\r\ncalls\r\n:(\d+)`)
	run := func(addr string) string {
		p := dialPeer(t, addr)
		p.do("HELLO", "3")
		p.do("CONFIG", "RESETSTAT")
		for _, cmd := range split("CLIENT ID", "CLIENT LIST", "CLIENT ID", "CONFIG GET maxmemory", "SET a b", "CONFIG SET", "CONFIG SET maxmemory x", "CLIENT NOSUCH", "OBJECT ENCODING nokey") {
			p.do(cmd...)
		}
		var out []string
		for _, m := range statLine.FindAllStringSubmatch(p.do("INFO", "commandstats"), -1) {
			out = append(out, "stat "+strings.Join(m[1:], " "))
		}
		for _, names := range [][]string{nil, {"client"}, {"client|id"}, {"config|nosuch", "set", "nosuch"}} {
			var got []string
			for _, m := range histName.FindAllStringSubmatch(p.do(append([]string{"LATENCY", "HISTOGRAM"}, names...)...), -1) {
				got = append(got, m[1]+"="+m[2])
			}
			sort.Strings(got)
			out = append(out, "histogram "+strings.Join(names, ",")+": "+strings.Join(got, " "))
		}
		sort.Strings(out)
		return strings.Join(out, "\n")
	}
	if want, got := run(startRedisPeer(t)), run(io); want != got {
		t.Fatalf("statistics differ:\n--- redis\n%s\n--- iocache\n%s", want, got)
	}
}
