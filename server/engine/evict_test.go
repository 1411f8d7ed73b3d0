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

// The five policies TestEvictionPolicies does not cover, each run as its own process: what each
// must keep (keys without a TTL under volatile-*, frequently or recently used keys under LFU and
// LRU), that it evicts, that memory stays near maxmemory, and that volatile-* answers OOM once no
// key with a TTL is left to evict, as Redis does.
func TestEvictionPoliciesKeepWhatTheyPromise(t *testing.T) {
	const maxmem = 16 << 20
	val := strings.Repeat("v", 1000)
	fillTTL := func(t *testing.T, c *redis.Client, prefix string, n int) {
		for i := 0; i < n; i += 1000 {
			p := c.Pipeline()
			for j := i; j < i+1000; j++ {
				p.SetEx(ctx(), prefix+strconv.Itoa(j), val, time.Hour)
			}
			if _, err := p.Exec(ctx()); err != nil && !strings.HasPrefix(err.Error(), "OOM") {
				t.Fatal(err)
			}
		}
	}
	touch := func(c *redis.Client, ks []string, times int) {
		for r := 0; r < times; r++ {
			p := c.Pipeline()
			for _, k := range ks {
				p.Get(ctx(), k)
			}
			p.Exec(ctx())
		}
	}
	for _, tc := range []struct {
		policy   string
		volatile bool // keys without a TTL must all survive
		hot      string
	}{
		{"allkeys-lfu", false, "frequent"},
		{"volatile-lfu", true, "frequent"},
		{"volatile-lru", true, "recent"},
		{"volatile-random", true, ""},
		{"allkeys-random", false, ""},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			addr, _ := startProcess(t, "--maxmemory", "16mb", "--maxmemory-policy", tc.policy)
			c := redisClient(t, addr, 2)
			fillValues(t, c, "plain:", 3000, 1000) // about 4 MB without a TTL
			hot := keys("hot:", 500)
			if tc.hot == "frequent" { // used often before the flood: LFU keeps them
				fillTTL(t, c, "hot:", 500)
				touch(c, hot, 20)
			}
			// Many old keys, then few new ones: a policy that keeps what it should finds its
			// victims among the old.
			fillTTL(t, c, "old:", 20000)
			if tc.hot == "recent" { // written after the old ones: LRU keeps them
				time.Sleep(1100 * time.Millisecond) // the LRU clock ticks once a second
				fillTTL(t, c, "hot:", 500)
			}
			fillTTL(t, c, "new:", 2000)
			if used := infoInt(t, c, "memory", "used_memory"); used > maxmem*11/10 {
				t.Fatalf("used_memory %d far above maxmemory %d", used, maxmem)
			}
			if ev := infoInt(t, c, "stats", "evicted_keys"); ev == 0 {
				t.Fatal("nothing evicted")
			}
			plain := c.Exists(ctx(), keys("plain:", 3000)...).Val()
			if tc.volatile && plain != 3000 {
				t.Fatalf("%s evicted %d keys without a TTL", tc.policy, 3000-plain)
			}
			if tc.policy == "allkeys-random" && plain == 3000 {
				t.Fatal("allkeys-random never evicted a key without a TTL")
			}
			if tc.hot != "" {
				if n := c.Exists(ctx(), hot...).Val(); n < 450 {
					t.Fatalf("only %d of 500 %s keys survived %s", n, tc.hot, tc.policy)
				}
			}
			if tc.volatile {
				// Only keys without a TTL left: no candidate, so writes are refused and nothing is
				// evicted. Until the runtime collects what FLUSHALL dropped, used_memory still
				// counts it, so a first refusal may come early and a later write fit again: keep
				// writing until one is refused with memory really full.
				c.FlushAll(ctx())
				evicted := infoInt(t, c, "stats", "evicted_keys")
				var err error
				for round := 0; round < 20 && err == nil; round++ {
					fillValues(t, c, "plain"+strconv.Itoa(round)+":", 2000, 1000)
					err = c.Set(ctx(), "one-more", val, 0).Err()
				}
				if err == nil || err.Error() != "OOM command not allowed when used memory > 'maxmemory'." {
					t.Fatalf("%s with nothing volatile to evict: %v", tc.policy, err)
				}
				if now := infoInt(t, c, "stats", "evicted_keys"); now != evicted {
					t.Fatalf("%s evicted %d keys without a TTL", tc.policy, now-evicted)
				}
			}
		})
	}
}
