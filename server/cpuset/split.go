package cpuset

// AutoIOThreads is the io-threads setting (main thread included) for a number of cores: about
// three quarters of them, as the seed measurements recommend, and none on 1–2 cores, where an I/O
// thread only competes with the main thread for the same CPUs. Beyond 16 threads the single main
// thread is the bottleneck and more I/O threads stop helping, so the value is capped there.
func AutoIOThreads(cores int) int {
	switch {
	case cores <= 2:
		return 1
	case cores == 3:
		return 2
	}
	n := cores * 3 / 4
	if n > MaxUsefulIOThreads {
		n = MaxUsefulIOThreads
	}
	return n
}

// MaxUsefulIOThreads caps automatic io-threads: the published measurements show 8 I/O threads
// roughly doubling throughput and little gain beyond, because one main thread executes everything.
const MaxUsefulIOThreads = 16

// Layout is how a set of cores is split between kinds of work, as positions 0..cores-1.
type Layout struct {
	IOThreads  int
	Server     []int
	Bio        []int
	AOFRewrite []int
	BGSave     []int
}

// AutoLayout splits cores as the seeds' example does: main and I/O threads on the first cores, one
// core each; background work (bio, AOF rewrite, snapshots) shares the rest. With no core left over,
// background work shares the last server core, which is the least loaded I/O thread's.
func AutoLayout(cores, ioThreads int) Layout {
	if cores < 1 {
		cores = 1
	}
	if ioThreads < 1 {
		ioThreads = AutoIOThreads(cores)
	}
	if ioThreads > cores {
		ioThreads = cores
	}
	l := Layout{IOThreads: ioThreads}
	for i := 0; i < ioThreads; i++ {
		l.Server = append(l.Server, i)
	}
	var rest []int
	for i := ioThreads; i < cores; i++ {
		rest = append(rest, i)
	}
	if len(rest) == 0 {
		if cores == 1 {
			rest = []int{0}
		} else {
			// 2 cores with one server thread: the second core is free for everything else.
			rest = []int{cores - 1}
		}
	}
	l.Bio, l.AOFRewrite, l.BGSave = rest, rest, rest
	return l
}
