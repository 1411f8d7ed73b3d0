package e2eutil

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Keyspace is what a user would check to see that nothing touched their data: DBSIZE, a digest of
// every key with its value and absolute expiry time, and the counters a benchmark could move.
type Keyspace struct {
	DBSize                                 int64
	Digest                                 string
	UsedMemory, MaxMemory                  int64
	EvictedKeys, ExpiredKeys, Hits, Misses int64
}

func (k Keyspace) String() string {
	return fmt.Sprintf("DBSIZE %d, digest %s, used_memory %d of %d, evicted_keys %d, expired_keys %d, keyspace_hits %d, keyspace_misses %d",
		k.DBSize, k.Digest, k.UsedMemory, k.MaxMemory, k.EvictedKeys, k.ExpiredKeys, k.Hits, k.Misses)
}

// Counters reads the counters of INFO a benchmark could move, and DBSIZE.
func Counters(ctx context.Context, rdb *redis.Client) (Keyspace, error) {
	var k Keyspace
	info, err := Info(ctx, rdb, "everything")
	if err != nil {
		return k, err
	}
	num := func(name string) int64 { n, _ := strconv.ParseInt(info[name], 10, 64); return n }
	k.UsedMemory, k.MaxMemory = num("used_memory"), num("maxmemory")
	k.EvictedKeys, k.ExpiredKeys, k.Hits, k.Misses = num("evicted_keys"), num("expired_keys"), num("keyspace_hits"), num("keyspace_misses")
	k.DBSize, err = rdb.DBSize(ctx).Result()
	return k, err
}

// ReadKeyspace reads the counters, then the digest, whose reads count as hits: compare the counters
// of a later reading with Counters taken after an earlier digest.
func ReadKeyspace(ctx context.Context, rdb *redis.Client) (Keyspace, error) {
	k, err := Counters(ctx, rdb)
	if err != nil {
		return k, err
	}
	var keys []string
	iter := rdb.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return k, err
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	h := sha256.New()
	for start := 0; start < len(keys); start += 1000 {
		chunk := keys[start:min(start+1000, len(keys))]
		pipe := rdb.Pipeline()
		vals := make([]*redis.StringCmd, len(chunk))
		exps := make([]*redis.Cmd, len(chunk))
		for i, key := range chunk {
			vals[i] = pipe.Get(ctx, key)
			exps[i] = pipe.Do(ctx, "PEXPIRETIME", key)
		}
		if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
			return k, err
		}
		for i, key := range chunk {
			exp, _ := exps[i].Int64()
			fmt.Fprintf(h, "%s\x00%s\x00%d\n", key, vals[i].Val(), exp)
		}
	}
	k.Digest = fmt.Sprintf("%d keys %x", len(keys), h.Sum(nil)[:8])
	return k, nil
}

// FillToFraction writes 1 KiB string values (a third with an hour's TTL) under prefix until
// used_memory reaches fraction of maxmemory: a cache about to evict.
func FillToFraction(ctx context.Context, rdb *redis.Client, prefix string, fraction float64) (int, error) {
	value := strings.Repeat("v", 1024)
	n := 0
	for batch := 0; batch < 10000; batch++ {
		info, err := Info(ctx, rdb, "memory")
		if err != nil {
			return n, err
		}
		used, _ := strconv.ParseFloat(info["used_memory"], 64)
		limit, _ := strconv.ParseFloat(info["maxmemory"], 64)
		if limit == 0 || used >= fraction*limit {
			return n, nil
		}
		pipe := rdb.Pipeline()
		for range 1000 {
			ttl := time.Duration(0)
			if n%3 == 0 {
				ttl = time.Hour
			}
			pipe.Set(ctx, fmt.Sprintf("%s%08d", prefix, n), value, ttl)
			n++
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return n, err
		}
	}
	return n, fmt.Errorf("used_memory did not reach %.0f%% of maxmemory after %d keys", fraction*100, n)
}
