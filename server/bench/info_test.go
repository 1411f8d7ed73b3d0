package bench

import "testing"

const infoSample = "# Threads\r\nio_threads_active:1\r\n" +
	"io_thread_1:clients=3,reads=200,writes=190,cpus=1,tid=11,cpu_busy=0.25,batches=7,batched_commands=70\r\n" +
	"io_thread_0:clients=2,reads=100,writes=90,cpus=0,2-3,tid=10,cpu_busy=0.50,batches=5,batched_commands=50\r\n" +
	"bio_thread:cpus=0-3,tid=12\r\n" +
	"# CPU\r\nused_cpu_sys:1.500000\r\nused_cpu_user:2.250000\r\nused_cpu_sys_children:0.000000\r\n" +
	"used_cpu_user_children:0.000000\r\nused_cpu_sys_main_thread:1.000000\r\nused_cpu_user_main_thread:2.000000\r\n"

func TestParseInfo(t *testing.T) {
	in := parseInfo(infoSample)
	if in.IOThreadsActive == nil || *in.IOThreadsActive != 1 {
		t.Errorf("io_threads_active %v", in.IOThreadsActive)
	}
	if len(in.Threads) != 2 {
		t.Fatalf("threads %+v", in.Threads)
	}
	want0 := IOThread{ID: 0, Clients: 2, Reads: 100, Writes: 90, CPUs: "0,2-3", TID: 10, CPUBusy: 0.5, Batches: 5, BatchedCommands: 50}
	if in.Threads[0] != want0 {
		t.Errorf("thread 0 %+v, want %+v", in.Threads[0], want0)
	}
	if in.Threads[1].ID != 1 || in.Threads[1].Reads != 200 || in.Threads[1].CPUs != "1" {
		t.Errorf("thread 1 %+v", in.Threads[1])
	}
	if in.CPU == nil || *in.CPU != (ServerCPU{Sys: 1.5, User: 2.25, SysMainThread: 1, UserMainThread: 2}) {
		t.Errorf("cpu %+v", in.CPU)
	}
	if in.Raw != infoSample {
		t.Error("raw text not kept")
	}
}

func TestParseInfoRedis7(t *testing.T) {
	// Redis 7 answers INFO threads with nothing; Redis 8 prints io_thread lines without iocache's extras.
	in := parseInfo("# CPU\r\nused_cpu_sys:0.1\r\nused_cpu_user:0.2\r\n")
	if in.Threads != nil || in.IOThreadsActive != nil || in.CPU.User != 0.2 {
		t.Errorf("%+v", in)
	}
	in = parseInfo("# Threads\r\nio_thread_0:clients=5,reads=9,writes=8\r\n")
	if len(in.Threads) != 1 || in.Threads[0] != (IOThread{ID: 0, Clients: 5, Reads: 9, Writes: 8}) {
		t.Errorf("%+v", in.Threads)
	}
}

func TestInfoDelta(t *testing.T) {
	before := parseInfo(infoSample)
	after := parseInfo("io_thread_0:clients=7,reads=150,writes=140,cpus=0,tid=10,cpu_busy=0.9,batches=6,batched_commands=60\r\n" +
		"io_thread_1:clients=1,reads=260,writes=250,cpus=1\r\nused_cpu_sys:2.5\r\nused_cpu_user:3.25\r\n" +
		"used_cpu_sys_main_thread:1.5\r\nused_cpu_user_main_thread:2.5\r\n")
	d := infoDelta(before, after)
	if d.Threads[0].Reads != 50 || d.Threads[0].Writes != 50 || d.Threads[0].Clients != 7 || d.Threads[0].Batches != 1 {
		t.Errorf("thread 0 delta %+v", d.Threads[0])
	}
	if d.Threads[1].Reads != 60 || d.Threads[1].Writes != 60 {
		t.Errorf("thread 1 delta %+v", d.Threads[1])
	}
	if *d.CPU != (ServerCPU{Sys: 1, User: 1, SysMainThread: 0.5, UserMainThread: 0.5}) {
		t.Errorf("cpu delta %+v", d.CPU)
	}
	if infoDelta(nil, after) != nil {
		t.Error("delta without before")
	}
}
