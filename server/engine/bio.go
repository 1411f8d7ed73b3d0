package engine

import (
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"

	"github.com/iocache/iocache/server/cpuset"
)

// bio is the background thread (Redis's bio.c): lazy freeing of large values and other slow work
// that must not stall the main thread. It runs pinned to bio_cpulist. At start it also moves every
// other thread of the process (the Go runtime's garbage collector and scheduler threads among
// them) to bio_cpulist, so that the server's CPUs run only the main and I/O threads.
type bio struct {
	s    *Server
	cpus []int
	mu   sync.Mutex
	cond *sync.Cond
	jobs []func()
	done bool
	tid  int
	// freed counts objects released in the background, for INFO.
	freed int64
}

func newBio(s *Server, cpus []int) *bio {
	b := &bio{s: s, cpus: cpus}
	b.cond = sync.NewCond(&b.mu)
	return b
}

func (b *bio) start(wg *sync.WaitGroup) {
	wg.Add(1)
	ready := make(chan struct{})
	go func() {
		defer wg.Done()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		b.tid = cpuset.Gettid()
		if len(b.cpus) > 0 {
			if err := cpuset.PinThread(b.cpus); err != nil {
				b.s.logf(logWarning, "bio thread: pinning to %s failed: %v", cpuset.Format(b.cpus), err)
			}
		}
		close(ready)
		b.loop()
	}()
	<-ready
	b.confineRuntimeThreads()
}

// confineRuntimeThreads pins every thread that is not a server thread to bio_cpulist. Threads the
// runtime creates later normally inherit this mask (Go creates threads for locked goroutines from
// its template thread, which is among those moved here); the cron checks again once a second for
// any that did not.
func (b *bio) confineRuntimeThreads() {
	if len(b.cpus) > 0 {
		b.confineTo(b.cpus)
	}
}

func (b *bio) confineTo(cpus []int) {
	server := map[int]bool{}
	for _, tid := range b.s.io.TIDs() {
		server[tid] = true
	}
	if tid := b.s.bgsaveTID.Load(); tid != 0 {
		server[int(tid)] = true // pinned to bgsave_cpulist
	}
	entries, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return
	}
	for _, e := range entries {
		tid, err := strconv.Atoi(e.Name())
		if err != nil || server[tid] {
			continue
		}
		_ = cpuset.PinTID(tid, cpus)
	}
}

// setCPUs moves the background thread and the runtime's threads to a new bio_cpulist; an empty
// list lets them run on every allowed CPU again.
func (b *bio) setCPUs(cpus, allowed []int) {
	if slices.Equal(cpus, b.cpus) {
		return
	}
	b.cpus = cpus
	target := cpus
	if len(target) == 0 {
		target = allowed
	}
	if err := cpuset.PinTID(b.tid, target); err != nil {
		b.s.logf(logWarning, "bio thread: pinning to %s failed: %v", cpuset.Format(target), err)
	}
	b.confineTo(target)
}

func (b *bio) loop() {
	for {
		b.mu.Lock()
		for len(b.jobs) == 0 && !b.done {
			b.cond.Wait()
		}
		if b.done && len(b.jobs) == 0 {
			b.mu.Unlock()
			return
		}
		jobs := b.jobs
		b.jobs = nil
		b.mu.Unlock()
		for _, j := range jobs {
			j()
		}
	}
}

// submit queues work for the background thread.
func (b *bio) submit(job func()) {
	b.mu.Lock()
	b.jobs = append(b.jobs, job)
	b.mu.Unlock()
	b.cond.Signal()
}

// lazyFree releases a large collection on the background thread.
func (b *bio) lazyFree(obj any) {
	r, ok := obj.(releaser)
	if !ok {
		return
	}
	b.submit(func() {
		r.Release()
		b.mu.Lock()
		b.freed++
		b.mu.Unlock()
	})
}

func (b *bio) stop() {
	b.mu.Lock()
	b.done = true
	b.mu.Unlock()
	b.cond.Broadcast()
}

// releaser is implemented by collections that can drop their contents.
type releaser interface{ Release() }

func (b *bio) freedCount() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.freed
}
