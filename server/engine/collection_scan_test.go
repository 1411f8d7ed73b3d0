package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestCollectionScansPageLikeRedis: HSCAN, SSCAN and ZSCAN of a large collection return pages of
// about COUNT elements whose union is the collection, on iocache as on Debian's redis-server, and
// a small (compact) one whole, with cursor 0, as both do. HSCAN and ZSCAN used to return a large
// collection whole: one unbounded reply of a million fields.
func TestCollectionScansPageLikeRedis(t *testing.T) {
	ctx := context.Background()
	const n = 20000
	for _, server := range []struct{ name, addr string }{
		{"redis", startRedisPeer(t)},
		{"iocache", func() string { _, a := startServer(t, nil); return a }()},
	} {
		rdb := redis.NewClient(&redis.Options{Addr: server.addr, Protocol: 2, DisableIdentity: true})
		defer rdb.Close()
		pipe := rdb.Pipeline()
		for i := 0; i < n; i++ {
			pipe.HSet(ctx, "big:h", fmt.Sprint("f", i), i)
			pipe.SAdd(ctx, "big:s", fmt.Sprint("m", i))
			pipe.ZAdd(ctx, "big:z", redis.Z{Score: float64(i), Member: fmt.Sprint("m", i)})
		}
		for i := 0; i < 5; i++ {
			pipe.HSet(ctx, "small:h", fmt.Sprint("f", i), i)
			pipe.ZAdd(ctx, "small:z", redis.Z{Score: float64(i), Member: fmt.Sprint("m", i)})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			key  string
			scan func(cursor uint64) ([]string, uint64, error)
			per  int // reply items per element
			want int
		}{
			{"big:h", func(cur uint64) ([]string, uint64, error) { return rdb.HScan(ctx, "big:h", cur, "", 10).Result() }, 2, n},
			{"big:s", func(cur uint64) ([]string, uint64, error) { return rdb.SScan(ctx, "big:s", cur, "", 10).Result() }, 1, n},
			{"big:z", func(cur uint64) ([]string, uint64, error) { return rdb.ZScan(ctx, "big:z", cur, "", 10).Result() }, 2, n},
		} {
			seen := map[string]bool{}
			var cur uint64
			pages, largest := 0, 0
			for {
				items, next, err := tc.scan(cur)
				if err != nil {
					t.Fatalf("%s %s: %v", server.name, tc.key, err)
				}
				pages++
				largest = max(largest, len(items)/tc.per)
				for i := 0; i < len(items); i += tc.per {
					seen[items[i]] = true
				}
				if cur = next; cur == 0 {
					break
				}
				if pages > 10*n {
					t.Fatalf("%s %s: the scan does not end", server.name, tc.key)
				}
			}
			if len(seen) != tc.want {
				t.Errorf("%s %s: the pages hold %d distinct elements, want %d", server.name, tc.key, len(seen), tc.want)
			}
			if pages < n/100 || largest > 100 {
				t.Errorf("%s %s: %d pages, the largest of %d elements: want pages of about COUNT 10", server.name, tc.key, pages, largest)
			}
		}
		for _, key := range []string{"small:h", "small:z"} {
			var items []string
			var next uint64
			var err error
			if key == "small:h" {
				items, next, err = rdb.HScan(ctx, key, 0, "", 2).Result()
			} else {
				items, next, err = rdb.ZScan(ctx, key, 0, "", 2).Result()
			}
			if err != nil || next != 0 || len(items) != 10 {
				t.Errorf("%s %s COUNT 2: %d items, cursor %d, %v: want the whole compact collection at once", server.name, key, len(items), next, err)
			}
		}
	}
}
