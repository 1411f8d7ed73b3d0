package engine

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestSortLimitMatchesRedis: SORT with LIMIT (which now selects the first start+count elements
// instead of sorting all) answers exactly as redis-server, numeric and ALPHA, ASC and DESC, with
// ties, BY patterns and GET, windows at the start, in the middle, past the end.
func TestSortLimitMatchesRedis(t *testing.T) {
	redisAddr := startRedisPeer(t)
	_, ioAddr := startServer(t, nil)
	r, io := dialPeer(t, redisAddr), dialPeer(t, ioAddr)
	rng := rand.New(rand.NewPCG(5, 5))
	var load [][]string
	for i := 0; i < 5000; i++ {
		v := fmt.Sprint(rng.IntN(800)) // many ties
		load = append(load, []string{"RPUSH", "l", v}, []string{"SET", "w_" + v, fmt.Sprint(rng.IntN(50))})
	}
	r.pipeline(load)
	io.pipeline(load)
	// Not BY ... ALPHA: Redis leaves its ties (equal weights) in whatever order its qsort
	// makes, which iocache's sort does not imitate.
	for _, opts := range []string{"", "DESC", "ALPHA", "ALPHA DESC", "BY w_*", "BY w_* DESC", "BY w_* GET # GET w_*"} {
		for _, lim := range []string{"0 10", "0 1", "5 20", "100 50", "2400 10", "4990 20", "0 2499", "7000 5"} {
			args := append([]string{"SORT", "l"}, strings.Fields(opts)...)
			args = append(args, "LIMIT")
			args = append(args, strings.Fields(lim)...)
			if want, got := r.do(args...), io.do(args...); want != got {
				t.Errorf("%s:\n redis   %.200q\n iocache %.200q", strings.Join(args, " "), want, got)
			}
		}
	}
}
