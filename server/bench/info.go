package bench

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"
)

// This file asks the server for INFO threads and INFO cpu and parses them, so a result shows how
// the server spread the work over its I/O threads. Redis 7 has no threads section (the reply is
// empty and Threads stays nil); Redis 8 and iocache-server print io_thread_N lines:
//
//	io_thread_0:clients=25,reads=1234,writes=1234,cpus=0,tid=4242,cpu_busy=0.93,batches=..
//
// where iocache-server adds the fields after writes.

// control is the extra connection the benchmark uses for INFO, outside the measured ones.
type control struct {
	nc net.Conn
	rd replyReader
}

// call sends one command and returns its reply: the payload of a bulk string, the text of a
// status or error reply.
func (c *control) call(timeout time.Duration, args ...string) (string, error) {
	_ = c.nc.SetDeadline(time.Now().Add(timeout))
	defer func() { _ = c.nc.SetDeadline(time.Time{}) }()
	if _, err := c.nc.Write(encodeCommand(args...)); err != nil {
		return "", err
	}
	kind, reply, err := c.rd.next(c.nc)
	if err != nil {
		return "", err
	}
	switch {
	case kind == replyError:
		return "", errors.New(errorText(reply))
	case kind == replyNil:
		return "", nil
	case reply[0] == '$':
		return string(reply[bytes.IndexByte(reply, '\n')+1 : len(reply)-2]), nil
	}
	return string(bytes.TrimRight(reply[1:], "\r\n")), nil
}

// fetchInfo reads and parses INFO threads and INFO cpu (two commands: Redis before 7 took one
// section per INFO).
func (c *control) fetchInfo(timeout time.Duration) (*Info, error) {
	threads, err := c.call(timeout, "INFO", "threads")
	if err != nil {
		return nil, fmt.Errorf("INFO threads: %w", err)
	}
	cpu, err := c.call(timeout, "INFO", "cpu")
	if err != nil {
		return nil, fmt.Errorf("INFO cpu: %w", err)
	}
	return parseInfo(threads + cpu), nil
}

// parseInfo parses the fields it knows out of INFO text and keeps the text as Raw.
func parseInfo(text string) *Info {
	in := &Info{Raw: text}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r")
		key, val, ok := strings.Cut(line, ":")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		switch {
		case key == "io_threads_active":
			if v, err := strconv.Atoi(val); err == nil {
				in.IOThreadsActive = &v
			}
		case strings.HasPrefix(key, "io_thread_"):
			id, err := strconv.Atoi(strings.TrimPrefix(key, "io_thread_"))
			if err == nil {
				in.Threads = append(in.Threads, parseThread(id, val))
			}
		case strings.HasPrefix(key, "used_cpu_"):
			parseCPUField(in, key, val)
		}
	}
	sort.Slice(in.Threads, func(i, j int) bool { return in.Threads[i].ID < in.Threads[j].ID })
	return in
}

// parseThread parses "clients=1,reads=2,writes=3,cpus=0-3,..."; the cpus value may hold commas
// itself (0,2-3), so a piece without '=' belongs to the value before it.
func parseThread(id int, val string) IOThread {
	t := IOThread{ID: id}
	var last string
	for _, kv := range strings.Split(val, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			if last == "cpus" {
				t.CPUs += "," + kv
			}
			continue
		}
		last = k
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "clients":
			t.Clients = n
		case "reads":
			t.Reads = n
		case "writes":
			t.Writes = n
		case "cpus":
			t.CPUs = v
		case "tid":
			t.TID = n
		case "cpu_busy":
			t.CPUBusy, _ = strconv.ParseFloat(v, 64)
		case "batches":
			t.Batches = n
		case "batched_commands":
			t.BatchedCommands = n
		}
	}
	return t
}

func parseCPUField(in *Info, key, val string) {
	v, err := strconv.ParseFloat(val, 64)
	if err != nil {
		return
	}
	if in.CPU == nil {
		in.CPU = &ServerCPU{}
	}
	switch key {
	case "used_cpu_sys":
		in.CPU.Sys = v
	case "used_cpu_user":
		in.CPU.User = v
	case "used_cpu_sys_main_thread":
		in.CPU.SysMainThread = v
	case "used_cpu_user_main_thread":
		in.CPU.UserMainThread = v
	}
}

// infoDelta is after minus before: counters and CPU seconds grow, while clients, cpus, tid and
// cpu_busy are taken from after (they are states, not counters).
func infoDelta(before, after *Info) *Info {
	if before == nil || after == nil {
		return nil
	}
	d := &Info{IOThreadsActive: after.IOThreadsActive}
	prev := map[int]IOThread{}
	for _, t := range before.Threads {
		prev[t.ID] = t
	}
	for _, t := range after.Threads {
		p := prev[t.ID]
		t.Reads -= p.Reads
		t.Writes -= p.Writes
		t.Batches -= p.Batches
		t.BatchedCommands -= p.BatchedCommands
		d.Threads = append(d.Threads, t)
	}
	if before.CPU != nil && after.CPU != nil {
		d.CPU = &ServerCPU{
			Sys:            round3(after.CPU.Sys - before.CPU.Sys),
			User:           round3(after.CPU.User - before.CPU.User),
			SysMainThread:  round3(after.CPU.SysMainThread - before.CPU.SysMainThread),
			UserMainThread: round3(after.CPU.UserMainThread - before.CPU.UserMainThread),
		}
	}
	return d
}

// fetchBenchSpace reads BENCHSPACE STATS; a failure is reported in the result, not fatal.
func (c *control) fetchBenchSpace(timeout time.Duration) *BenchSpace {
	text, err := c.call(timeout, "BENCHSPACE", "STATS")
	if err != nil {
		return &BenchSpace{Error: err.Error()}
	}
	b := &BenchSpace{}
	for _, line := range strings.Split(text, "\n") {
		key, val, ok := strings.Cut(strings.TrimRight(line, "\r"), ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(val, 10, 64)
		switch key {
		case "benchspace_keys":
			b.Keys = n
		case "benchspace_used_memory":
			b.UsedMemory = n
		case "benchspace_peak_memory":
			b.PeakMemory = n
		case "benchspace_maxmemory":
			b.MaxMemory = n
		case "benchspace_hits":
			b.Hits = n
		case "benchspace_misses":
			b.Misses = n
		case "benchspace_evicted_keys":
			b.EvictedKeys = n
		}
	}
	return b
}
