package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iocache/iocache/server/config"
)

// watchdog-period: a main thread held up longer than the period logs one warning with the main
// goroutine's stack, which names the command holding it; the server goes on serving, and a
// period below Redis's minimum (two cron ticks) is raised to it.
func TestWatchdogLogsStall(t *testing.T) {
	logFile := filepath.Join(t.TempDir(), "iocache.log")
	_, addr := startServer(t, func(c *config.Config) {
		c.LogFile = logFile
		c.EnableDebugCommand = "yes"
	})
	rc := redisClient(t, addr, 2)
	if err := rc.ConfigSet(ctx(), "watchdog-period", "50").Err(); err != nil {
		t.Fatal(err)
	}
	if v := rc.ConfigGet(ctx(), "watchdog-period").Val()["watchdog-period"]; v != "200" {
		t.Fatalf("watchdog-period after setting 50: %q, want Redis's minimum 200 at hz 10", v)
	}
	if got := rc.ConfigGet(ctx(), "watchdog*").Val(); len(got) != 0 {
		t.Fatalf("CONFIG GET watchdog*: %v; hidden, as in Redis, it answers only to its name", got)
	}
	if err := rc.Do(ctx(), "DEBUG", "SLEEP", "0.5").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rc.Ping(ctx()).Err(); err != nil {
		t.Fatalf("after the stall: %v", err)
	}
	b, _ := os.ReadFile(logFile)
	log := string(b)
	if strings.Count(log, "--- WATCHDOG TIMER EXPIRED ---") != 1 || !strings.Contains(log, "cmdDebug") {
		t.Fatalf("want one watchdog warning with the main goroutine's stack, got log:\n%s", log)
	}
	if !strings.Contains(rc.Info(ctx(), "stats").Val(), "watchdog_stalls:1") {
		t.Error("INFO stats does not count the stall")
	}
}
