package engine

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func infoInt(t testing.TB, c *redis.Client, section, field string) int64 {
	t.Helper()
	v := regexpFind(field+`:(-?\d+)`, c.Info(ctx(), section).Val())
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("INFO %s has no %s", section, field)
	}
	return n
}

// fillValues writes n keys of size bytes with a pipeline.
func fillValues(t testing.TB, c *redis.Client, prefix string, n, size int) {
	t.Helper()
	val := strings.Repeat("v", size)
	for start := 0; start < n; start += 1000 {
		p := c.Pipeline()
		for i := start; i < start+1000 && i < n; i++ {
			p.Set(ctx(), prefix+strconv.Itoa(i), val, 0)
		}
		if _, err := p.Exec(ctx()); err != nil && !strings.HasPrefix(err.Error(), "OOM") {
			t.Fatal(err)
		}
	}
}

func TestEvictionPolicies(t *testing.T) {
	const maxmem = 32 << 20
	t.Run("allkeys-lru keeps recently used keys", func(t *testing.T) {
		addr, _ := startProcess(t, "--maxmemory", "32mb", "--maxmemory-policy", "allkeys-lru")
		c := redisClient(t, addr, 2)
		// Old keys first; the LRU clock ticks once a second, as in Redis.
		fillValues(t, c, "old:", 40000, 1000)
		time.Sleep(1100 * time.Millisecond)
		fillValues(t, c, "hot:", 1000, 1000)
		fillValues(t, c, "new:", 10000, 1000)
		if used := infoInt(t, c, "memory", "used_memory"); used > maxmem*11/10 {
			t.Fatalf("used_memory %d far above maxmemory %d", used, maxmem)
		}
		if ev := infoInt(t, c, "stats", "evicted_keys"); ev == 0 {
			t.Fatal("nothing evicted")
		}
		hot := c.Exists(ctx(), keys("hot:", 1000)...).Val()
		if hot < 950 {
			t.Fatalf("only %d of 1000 hot keys survived LRU eviction", hot)
		}
	})
	t.Run("noeviction refuses writes", func(t *testing.T) {
		addr, _ := startProcess(t, "--maxmemory", "16mb", "--maxmemory-policy", "noeviction")
		c := redisClient(t, addr, 2)
		fillValues(t, c, "k:", 40000, 1000)
		err := c.Set(ctx(), "one-more", "x", 0).Err()
		if err == nil || err.Error() != "OOM command not allowed when used memory > 'maxmemory'." {
			t.Fatalf("write over maxmemory: %v", err)
		}
		if err := c.Get(ctx(), "k:1").Err(); err != nil {
			t.Fatalf("reads must still work: %v", err)
		}
		if c.Del(ctx(), "k:1").Val() != 1 {
			t.Fatal("DEL must still work under noeviction")
		}
	})
	t.Run("volatile-ttl evicts only keys with a TTL", func(t *testing.T) {
		addr, _ := startProcess(t, "--maxmemory", "32mb", "--maxmemory-policy", "volatile-ttl")
		c := redisClient(t, addr, 2)
		fillValues(t, c, "keep:", 5000, 1000)
		val := strings.Repeat("v", 1000)
		for i := 0; i < 60000; i += 1000 {
			p := c.Pipeline()
			for j := i; j < i+1000; j++ {
				p.SetEx(ctx(), "tmp:"+strconv.Itoa(j), val, 3600_000_000_000)
			}
			p.Exec(ctx())
		}
		if n := c.Exists(ctx(), keys("keep:", 5000)...).Val(); n != 5000 {
			t.Fatalf("volatile-ttl evicted %d keys without a TTL", 5000-n)
		}
		if ev := infoInt(t, c, "stats", "evicted_keys"); ev == 0 {
			t.Fatal("nothing evicted")
		}
	})
}

func keys(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}
