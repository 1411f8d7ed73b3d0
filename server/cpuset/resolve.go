package cpuset

import (
	"fmt"
	"strings"
)

// Mode says how a configured list is read.
type Mode string

const (
	// Physical reads a list as CPU ids, Redis's meaning.
	Physical Mode = "physical"
	// Relative reads a list as positions within the allowed CPUs: "0-2" is the first three CPUs
	// the kubelet gave the pod, whatever their ids. The operator uses this mode.
	Relative Mode = "relative"
)

// Resolve turns a configured list into physical CPU ids within allowed. It fails, naming the CPU,
// when a list asks for a CPU the process may not use.
func Resolve(list string, mode Mode, allowed []int) ([]int, error) {
	cpus, err := Parse(list)
	if err != nil {
		return nil, err
	}
	if mode == Relative {
		out := make([]int, 0, len(cpus))
		for _, pos := range cpus {
			if pos >= len(allowed) {
				return nil, fmt.Errorf("position %d is outside the %d CPUs this process may use (%s)", pos, len(allowed), Format(allowed))
			}
			out = append(out, allowed[pos])
		}
		return out, nil
	}
	ok := map[int]bool{}
	for _, c := range allowed {
		ok[c] = true
	}
	var bad []int
	for _, c := range cpus {
		if !ok[c] {
			bad = append(bad, c)
		}
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("CPU %s is not among the CPUs this process may use (%s)", Format(bad), Format(allowed))
	}
	return cpus, nil
}

// Plan is the resolved placement of every kind of work, in physical CPU ids.
type Plan struct {
	IOThreads  int
	Server     []int
	Bio        []int
	AOFRewrite []int
	BGSave     []int
	// Allowed is what the process may use; Cores is the effective core count (quota included).
	Allowed []int
	Cores   int
}

// Request is what the configuration asks for: io-threads (0 = auto) and the four lists ("" = no
// pinning, "auto" = computed).
type Request struct {
	IOThreads                       int
	Server, Bio, AOFRewrite, BGSave string
	Mode                            Mode
}

// BuildPlan resolves a Request against the allowed CPUs. Errors name the directive at fault.
func BuildPlan(req Request, allowed []int, cores int) (Plan, error) {
	p := Plan{Allowed: allowed, Cores: cores, IOThreads: req.IOThreads}
	if p.IOThreads == 0 {
		p.IOThreads = AutoIOThreads(cores)
	}
	auto := AutoLayout(cores, p.IOThreads)
	// Auto positions are relative to the allowed CPUs whatever the mode.
	toPhysical := func(pos []int) []int {
		out := make([]int, 0, len(pos))
		for _, i := range pos {
			if i < len(allowed) {
				out = append(out, allowed[i])
			}
		}
		return out
	}
	resolve := func(name, list string, autoPos []int) ([]int, error) {
		switch strings.ToLower(strings.TrimSpace(list)) {
		case "":
			return nil, nil
		case "auto":
			return toPhysical(autoPos), nil
		}
		cpus, err := Resolve(list, req.Mode, allowed)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w", name, list, err)
		}
		return cpus, nil
	}
	var err error
	if p.Server, err = resolve("server_cpulist", req.Server, auto.Server); err != nil {
		return p, err
	}
	if p.Bio, err = resolve("bio_cpulist", req.Bio, auto.Bio); err != nil {
		return p, err
	}
	if p.AOFRewrite, err = resolve("aof_rewrite_cpulist", req.AOFRewrite, auto.AOFRewrite); err != nil {
		return p, err
	}
	if p.BGSave, err = resolve("bgsave_cpulist", req.BGSave, auto.BGSave); err != nil {
		return p, err
	}
	// Explicit lists must keep background work off the server's CPUs, or it steals time from the
	// threads that serve clients; "auto" may share a core when there is no other. So may explicit
	// lists when the server list takes every CPU the process may use: there is no other place for
	// background work, and it is what the operator renders for a 1-core pod (and for io-threads
	// equal to cores), sharing the last server core as AutoLayout does.
	explicit := func(l string) bool { l = strings.ToLower(strings.TrimSpace(l)); return l != "" && l != "auto" }
	noneLeft := len(Overlap(p.Server, allowed)) == len(allowed)
	for _, bg := range []struct {
		name, list string
		cpus       []int
	}{{"bio_cpulist", req.Bio, p.Bio}, {"aof_rewrite_cpulist", req.AOFRewrite, p.AOFRewrite}, {"bgsave_cpulist", req.BGSave, p.BGSave}} {
		if explicit(req.Server) && explicit(bg.list) && !noneLeft {
			if o := Overlap(p.Server, bg.cpus); len(o) > 0 {
				return p, fmt.Errorf("%s %q overlaps server_cpulist on CPU %s", bg.name, bg.list, Format(o))
			}
		}
	}
	return p, nil
}
