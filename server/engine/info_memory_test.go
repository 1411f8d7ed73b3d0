package engine

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// INFO memory's script and function lines: the same names in the same order as Redis 7.0's, and
// counts and sizes that follow what is loaded: cached scripts and libraries counted as Redis
// counts them, bytes that grow with each script and fall to nothing after SCRIPT FLUSH and
// FUNCTION FLUSH (monitoring reads used_memory_scripts_eval to see a cache filled by unique
// EVALs).
func TestInfoMemoryScriptLines(t *testing.T) {
	_, addr := startServer(t, nil)
	servers := map[string]*peerConn{"redis": dialPeer(t, startRedisPeer(t)), "iocache": dialPeer(t, addr)}
	scriptLines := func(p *peerConn) (names []string, values map[string]int64) {
		values = map[string]int64{}
		for _, line := range strings.Split(p.do("INFO", "memory"), "\r\n") {
			name, v, ok := strings.Cut(line, ":")
			if !ok || !(strings.Contains(name, "lua") || strings.Contains(name, "script") || strings.Contains(name, "function") ||
				strings.Contains(name, "libraries") || strings.Contains(name, "_vm_")) {
				continue
			}
			names = append(names, name)
			values[name], _ = strconv.ParseInt(v, 10, 64)
		}
		return names, values
	}
	redisNames, _ := scriptLines(servers["redis"])
	names, before := scriptLines(servers["iocache"])
	if strings.Join(names, ",") != strings.Join(redisNames, ",") {
		t.Fatalf("script lines:\n%v\nredis-server:\n%v", names, redisNames)
	}
	for name, p := range servers {
		for i := 0; i < 50; i++ {
			p.do("EVAL", "return "+strconv.Itoa(i), "0")
		}
		p.do("EVAL", "return 1", "0") // cached already
		p.do("FUNCTION", "LOAD", "#!lua name=lib1\nredis.register_function('f1', function() return 1 end)\nredis.register_function('f2', function() return 2 end)")
		_, after := scriptLines(p)
		if after["number_of_cached_scripts"] != 50 || after["number_of_libraries"] != 1 || after["number_of_functions"] != 2 {
			t.Errorf("%s: after 50 scripts and a library of 2 functions: %v", name, after)
		}
		if name != "iocache" {
			continue
		}
		for _, line := range []string{"used_memory_scripts_eval", "used_memory_vm_eval", "used_memory_functions", "used_memory_vm_functions"} {
			if after[line] <= before[line] {
				t.Errorf("%s did not grow: %d, then %d", line, before[line], after[line])
			}
		}
		// 50 small scripts: more than their bodies, far less than the 20 KB each the
		// compiler's leftovers once cost.
		if per := after["used_memory_scripts_eval"] / 50; per < 10 || per > 2000 {
			t.Errorf("used_memory_scripts_eval %d B per script", per)
		}
		p.do("SCRIPT", "FLUSH")
		p.do("FUNCTION", "FLUSH")
		_, flushed := scriptLines(p)
		for _, line := range []string{"used_memory_scripts_eval", "used_memory_vm_eval", "number_of_cached_scripts", "used_memory_functions", "number_of_libraries"} {
			if flushed[line] != 0 {
				t.Errorf("%s after SCRIPT FLUSH and FUNCTION FLUSH: %d", line, flushed[line])
			}
		}
	}
}

// used_memory_peak is the largest used_memory seen, not the current one: after a large value is
// deleted and the memory returned, it still says how much the server once needed.
func TestInfoMemoryPeak(t *testing.T) {
	_, addr := startServer(t, nil)
	p := dialPeer(t, addr)
	field := func(name string) int64 {
		_, rest, _ := strings.Cut(p.do("INFO", "memory"), "\r\n"+name+":")
		v, _, _ := strings.Cut(rest, "\r\n")
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("%s: %q", name, v)
		}
		return n
	}
	p.do("SET", "big", strings.Repeat("x", 32<<20))
	during := field("used_memory")
	p.do("DEL", "big")
	// used_memory counts what the Go heap holds beyond the keyspace, measured by cron: let the
	// collector run and cron measure again before reading the fall.
	p.do("MEMORY", "PURGE")
	time.Sleep(300 * time.Millisecond)
	after, peak := field("used_memory"), field("used_memory_peak")
	if peak < during || after >= during-16<<20 {
		t.Fatalf("used_memory %d with a 32 MiB value, %d after DEL; used_memory_peak %d", during, after, peak)
	}
}
