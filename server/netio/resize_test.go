package netio

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestResizeWhileBusy changes the number of I/O threads while clients keep sending pipelines:
// conns move between threads (and to and from the main thread) between their batches, and no
// request or reply is lost, repeated or reordered, and no conn is closed. Each pipeline is larger
// than a read's budget, so moves also find conns with input left to read.
func TestResizeWhileBusy(t *testing.T) {
	const nclients, perPipeline = 6, 8
	pad := strings.Repeat("p", 4<<10)
	for _, tr := range transports(t) {
		t.Run(tr.name, func(t *testing.T) {
			s := startServer(t, tr, 1)
			var stop atomic.Bool
			var wg sync.WaitGroup
			var rounds [nclients]atomic.Int64
			failures := make(chan error, nclients)
			for i := range nclients {
				c := s.dial(t)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for r := 0; !stop.Load(); r++ {
						if err := c.echoPipeline(fmt.Sprintf("%d:%d:", i, r), pad, perPipeline); err != nil {
							failures <- fmt.Errorf("client %d, round %d: %w", i, r, err)
							return
						}
						rounds[i].Add(1)
					}
				}()
			}
			// The clients stop before the test's cleanups close their conns.
			defer func() {
				stop.Store(true)
				wg.Wait()
			}()

			// Some resizes follow the last at once, while its conns are still moving.
			for _, step := range []struct {
				size   int
				settle bool
			}{{3, true}, {2, true}, {4, false}, {1, false}, {3, true}, {4, false}, {2, true}, {1, true}} {
				size := step.size
				s.do(t, func(g *Group) {
					if err := g.Resize(size, noPinning, nil); err != nil {
						t.Errorf("Resize(%d): %v", size, err)
					}
				})
				if !step.settle {
					continue
				}
				waitUntil(t, fmt.Sprintf("the conns to settle on %d threads", size), func() bool {
					return settled(s.threads(t), size, nclients)
				})
				// Every client goes on being served after the move.
				var from [nclients]int64
				for i := range rounds {
					from[i] = rounds[i].Load()
				}
				waitUntil(t, fmt.Sprintf("every client to make progress on %d threads", size), func() bool {
					select {
					case err := <-failures:
						t.Fatal(err)
					default:
					}
					for i := range rounds {
						if rounds[i].Load() < from[i]+3 {
							return false
						}
					}
					return true
				})
			}
			select {
			case err := <-failures:
				t.Fatal(err)
			default:
			}
			var total int64
			for i := range rounds {
				total += rounds[i].Load()
			}
			t.Logf("%d pipelines served", total)
			s.eng.mu.Lock()
			defer s.eng.mu.Unlock()
			if len(s.eng.closed) != 0 {
				t.Fatalf("%d conns were closed while the group was resized", len(s.eng.closed))
			}
		})
	}
}

// settled says whether the group has size threads, the serving ones sharing all n conns (the
// main thread alone serves when size is 1, and none once I/O threads serve).
func settled(ts []ThreadStats, size, n int) bool {
	if len(ts) != size {
		return false
	}
	if size == 1 {
		return ts[0].Clients == n
	}
	total := 0
	for _, th := range ts[1:] {
		if th.Clients == 0 {
			return false
		}
		total += th.Clients
	}
	return ts[0].Clients == 0 && total == n
}

// echoPipeline sends count ECHO requests in one write and checks their replies come back in
// order. It reports failures instead of failing the test, for a client's own goroutine.
func (c *client) echoPipeline(prefix, pad string, count int) error {
	var req []byte
	for j := range count {
		req = append(req, multibulk("ECHO", fmt.Sprint(prefix, j, pad))...)
	}
	if err := c.conn.SetWriteDeadline(time.Now().Add(waitLimit)); err != nil {
		return err
	}
	if _, err := c.conn.Write(req); err != nil {
		return err
	}
	for j := range count {
		got, err := c.reply()
		if err != nil {
			return err
		}
		if want := fmt.Sprint("$", prefix, j, pad); got != want {
			return fmt.Errorf("reply %.30q, want %.30q", got, want)
		}
	}
	return nil
}
