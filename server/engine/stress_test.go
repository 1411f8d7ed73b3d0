package engine

import (
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/iocache/iocache/server/config"
)

// TestConcurrentClientsAcrossIOThreads runs many clients with pipelines over three I/O threads and
// checks that every increment and push is accounted for: no lost, duplicated or misrouted reply.
func TestConcurrentClientsAcrossIOThreads(t *testing.T) {
	_, addr := startServer(t, func(c *config.Config) { c.IOThreads = 4 })
	const workers, rounds, depth = 16, 60, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2 + w%2, PoolSize: 2})
			defer c.Close()
			own := "own:" + strconv.Itoa(w)
			for r := 0; r < rounds; r++ {
				p := c.Pipeline()
				incrs := make([]*redis.IntCmd, depth)
				for i := 0; i < depth; i++ {
					p.Incr(ctx(), "shared")
					incrs[i] = p.Incr(ctx(), own)
					p.RPush(ctx(), "list", w)
				}
				get := p.Get(ctx(), own)
				if _, err := p.Exec(ctx()); err != nil {
					errs <- err
					return
				}
				want := int64((r + 1) * depth)
				if incrs[depth-1].Val() != want || get.Val() != strconv.FormatInt(want, 10) {
					errs <- fmt.Errorf("worker %d round %d: own counter %d/%s, want %d", w, r, incrs[depth-1].Val(), get.Val(), want)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	c := redisClient(t, addr, 2)
	if v := c.Get(ctx(), "shared").Val(); v != strconv.Itoa(workers*rounds*depth) {
		t.Fatalf("shared counter %s, want %d", v, workers*rounds*depth)
	}
	if n := c.LLen(ctx(), "list").Val(); n != workers*rounds*depth {
		t.Fatalf("list length %d, want %d", n, workers*rounds*depth)
	}
}
