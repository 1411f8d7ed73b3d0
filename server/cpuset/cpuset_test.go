package cpuset

import (
	"strings"
	"testing"
)

func TestParseFormat(t *testing.T) {
	cases := []struct{ in, want, err string }{
		{in: "0-7:2", want: "0,2,4,6"},
		{in: "1,10-11", want: "1,10-11"},
		{in: "3,1,2", want: "1-3"},
		{in: "0", want: "0"},
		{in: "5-3", err: "runs backwards"},
		{in: "a", err: "not a CPU number"},
		{in: "1:2", err: "a stride needs a range"},
		{in: "2000", err: "above the maximum"},
		{in: "", err: "empty"},
	}
	for _, c := range cases {
		got, err := Parse(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Parse(%q) error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || Format(got) != c.want {
			t.Errorf("Parse(%q) = %v (%v), want %s", c.in, Format(got), err, c.want)
		}
	}
}

func TestAutoIOThreads(t *testing.T) {
	// The seeds' rule: about three quarters of the cores, none extra on 1-2 cores.
	want := map[int]int{1: 1, 2: 1, 3: 2, 4: 3, 6: 4, 8: 6, 12: 9, 16: 12, 64: 16}
	for cores, n := range want {
		if got := AutoIOThreads(cores); got != n {
			t.Errorf("AutoIOThreads(%d) = %d, want %d", cores, got, n)
		}
	}
}

func TestBuildPlan(t *testing.T) {
	allowed := []int{4, 5, 6, 7, 8, 9, 10, 11} // a kubelet-assigned cpuset
	p, err := BuildPlan(Request{Server: "auto", Bio: "auto", AOFRewrite: "auto", BGSave: "auto", Mode: Relative}, allowed, 8)
	if err != nil {
		t.Fatal(err)
	}
	if p.IOThreads != 6 || Format(p.Server) != "4-9" || Format(p.Bio) != "10-11" {
		t.Fatalf("auto plan: io-threads %d server %s bio %s", p.IOThreads, Format(p.Server), Format(p.Bio))
	}
	p, err = BuildPlan(Request{IOThreads: 3, Server: "0-2", Bio: "3", Mode: Relative}, allowed, 8)
	if err != nil || Format(p.Server) != "4-6" || Format(p.Bio) != "7" {
		t.Fatalf("relative lists: %v %s %s", err, Format(p.Server), Format(p.Bio))
	}
	if _, err := BuildPlan(Request{Server: "0-2", Bio: "2", Mode: Physical}, []int{0, 1, 2, 3}, 4); err == nil || !strings.Contains(err.Error(), "bio_cpulist \"2\" overlaps server_cpulist on CPU 2") {
		t.Fatalf("overlap: %v", err)
	}
	// With no CPU outside the server list, background work may share one: the operator renders
	// exactly this for a 1-core pod, whose cpuset the kubelet chose (here CPU 5).
	p, err = BuildPlan(Request{IOThreads: 1, Server: "0", Bio: "0", AOFRewrite: "0", BGSave: "0", Mode: Relative}, []int{5}, 1)
	if err != nil || Format(p.Server) != "5" || Format(p.Bio) != "5" || Format(p.BGSave) != "5" {
		t.Fatalf("1 CPU, shared: %v server %s bio %s", err, Format(p.Server), Format(p.Bio))
	}
	p, err = BuildPlan(Request{IOThreads: 2, Server: "0-1", Bio: "1", Mode: Relative}, []int{2, 3}, 2)
	if err != nil || Format(p.Server) != "2-3" || Format(p.Bio) != "3" {
		t.Fatalf("io-threads = cores, shared last core: %v server %s bio %s", err, Format(p.Server), Format(p.Bio))
	}
	if _, err := BuildPlan(Request{Server: "9", Mode: Physical}, []int{0, 1}, 2); err == nil || !strings.Contains(err.Error(), "server_cpulist \"9\": CPU 9 is not among the CPUs this process may use (0-1)") {
		t.Fatalf("unavailable CPU: %v", err)
	}
	// A cgroup quota smaller than the cpuset limits auto io-threads.
	p, _ = BuildPlan(Request{}, allowed, 2)
	if p.IOThreads != 1 {
		t.Fatalf("2 effective cores: io-threads %d", p.IOThreads)
	}
}
