package engine

import (
	"bufio"
	"fmt"
	"math/rand"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestAOFCrashSafety: a server process under a write load is SIGKILLed at random moments and
// restarted on its AOF, many times, with small auto-rewrite thresholds so that rewrites (new
// base, new incremental file, manifest swaps) are cut by kills too. With appendfsync always
// every acknowledged write is there after each restart; with everysec the test reports how many
// were lost. A kill leaves the kernel's page cache alone, so this checks the order of write and
// reply, and that every state a kill can leave loads; it cannot check the fsync itself.
func TestAOFCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts a server process dozens of times")
	}
	for _, tc := range []struct {
		fsync  string
		rounds int
	}{{"always", 50}, {"everysec", 20}} {
		t.Run(tc.fsync, func(t *testing.T) { testAOFCrashSafety(t, tc.fsync, tc.rounds) })
	}
}

func testAOFCrashSafety(t *testing.T, fsync string, rounds int) {
	dir := t.TempDir()
	args := []string{"--dir", dir, "--appendonly", "yes", "--appendfsync", fsync,
		"--auto-aof-rewrite-min-size", "64kb", "--auto-aof-rewrite-percentage", "30"}
	const writers = 4
	var acked [writers]atomic.Int64
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	var lost, maxLost, writes int64
	start := time.Now()
	for round := 0; round < rounds; round++ {
		addr, cmd := startProcess(t, args...)
		p := dialPeer(t, addr)
		var roundLost int64
		for w := range acked {
			reply := p.do("GET", fmt.Sprintf("ctr:%d", w))
			got := int64(0)
			if f := strings.Fields(reply); len(f) == 2 {
				got, _ = strconv.ParseInt(f[1], 10, 64)
			}
			want := acked[w].Load()
			switch {
			case got < want && fsync == "always":
				t.Fatalf("round %d: counter %d is %d after the restart, but %d was acknowledged", round, w, got, want)
			case got > want+1:
				t.Fatalf("round %d: counter %d is %d, more than the %d acknowledged plus one in flight", round, w, got, want)
			case got < want:
				roundLost += want - got
			}
			acked[w].Store(got)
		}
		lost += roundLost
		maxLost = max(maxLost, roundLost)
		var wg sync.WaitGroup
		var n atomic.Int64
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				n.Add(incrUntilKilled(addr, w, &acked[w]))
			}(w)
		}
		time.Sleep(time.Duration(10+rng.Intn(150)) * time.Millisecond)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		wg.Wait()
		writes += n.Load()
	}
	m, _ := os.ReadFile(filepath.Join(dir, "appendonlydir", "appendonly.aof.manifest"))
	t.Logf("appendfsync %s: %d kills in %v, %d writes acknowledged, %d lost (at most %d at one kill); final manifest:\n%s",
		fsync, rounds, time.Since(start).Round(time.Millisecond), writes, lost, maxLost, m)
	// everysec may lose what the last second (two while an fsync is slow) had not written yet.
	if elapsed := time.Since(start); maxLost > int64(float64(writes)/elapsed.Seconds()*2)+1 {
		t.Fatalf("%d writes lost at one kill: more than two seconds' worth", maxLost)
	}
	if !strings.Contains(string(m), " type b\n") {
		t.Fatalf("no base in the manifest:\n%s", m)
	}
}

// incrUntilKilled INCRs counter w and, every tenth time, writes a larger value, recording each
// acknowledged count, until the connection breaks. It returns how many writes were acknowledged.
func incrUntilKilled(addr string, w int, acked *atomic.Int64) int64 {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0
	}
	defer c.Close()
	br := bufio.NewReader(c)
	key := fmt.Sprintf("ctr:%d", w)
	incr := fmt.Sprintf("*2\r\n$4\r\nINCR\r\n$%d\r\n%s\r\n", len(key), key)
	pad := strings.Repeat("x", 200)
	var done int64
	for {
		if _, err := c.Write([]byte(incr)); err != nil {
			return done
		}
		line, err := br.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, ":") {
			return done
		}
		v, _ := strconv.ParseInt(strings.TrimSpace(line[1:]), 10, 64)
		acked.Store(v)
		done++
		if v%10 == 0 {
			val := fmt.Sprintf("%d-%s", v, pad)
			big := fmt.Sprintf("big:%d", w)
			set := fmt.Sprintf("*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(big), big, len(val), val)
			if _, err := c.Write([]byte(set)); err != nil {
				return done
			}
			if _, err := br.ReadString('\n'); err != nil {
				return done
			}
		}
	}
}
