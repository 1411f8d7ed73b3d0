package e2eutil

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/iocache/iocache/server/cpuset"
)

// NodeView is what the node — not the pod — says about one container: read from this machine's
// cgroup filesystem and /proc, so it works only when the pod runs here (the local cluster).
type NodeView struct {
	ContainerID string
	CgroupDir   string // the container's cpuset cgroup
	CgroupCPUs  string // its cpuset.cpus: the CPUs the kubelet gave it
	PID         int    // host PID of the container's main process
	Command     string
	ProcCPUs    string // Cpus_allowed_list of that process
	// Threads by their thread id inside the container (what the server reports), with the host
	// thread id and its Cpus_allowed_list.
	Threads map[int]HostThread
}

// HostThread is one thread of the process as the host's /proc shows it.
type HostThread struct {
	HostTID int
	Name    string
	CPUs    string
}

// ReadNode finds the container's cgroup by its container ID and reads its cpuset, its process and
// every thread's affinity.
func ReadNode(pod *corev1.Pod, container string) (*NodeView, error) {
	var id string
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == container {
			_, id, _ = strings.Cut(cs.ContainerID, "://")
		}
	}
	if id == "" {
		return nil, fmt.Errorf("pod %s has no running container %q", pod.Name, container)
	}
	v := &NodeView{ContainerID: id, Threads: map[int]HostThread{}}
	root, file := "/sys/fs/cgroup/cpuset", "cpuset.cpus" // cgroup v1
	if _, err := os.Stat(root); err != nil {
		root, file = "/sys/fs/cgroup", "cpuset.cpus.effective" // cgroup v2
	}
	podDir := "pod" + strings.ReplaceAll(string(pod.UID), "-", "_") // systemd driver's spelling
	errFound := errors.New("found")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if strings.Count(strings.TrimPrefix(p, root), "/") > 5 {
			return fs.SkipDir
		}
		parent := filepath.Base(filepath.Dir(p))
		if strings.Contains(d.Name(), id) && (parent == "pod"+string(pod.UID) || strings.Contains(parent, podDir)) {
			v.CgroupDir = p
			return errFound
		}
		return nil
	})
	if !errors.Is(err, errFound) {
		return nil, fmt.Errorf("no cgroup for container %.12s of pod %s under %s: is the pod on this machine?", id, pod.Name, root)
	}
	b, err := os.ReadFile(filepath.Join(v.CgroupDir, file))
	if err != nil {
		return nil, err
	}
	v.CgroupCPUs = strings.TrimSpace(string(b))
	procs, err := os.ReadFile(filepath.Join(v.CgroupDir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	for _, f := range strings.Fields(string(procs)) {
		pid, _ := strconv.Atoi(f)
		cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(cmd), "\x00"), "\x00")
		if v.PID == 0 || pid < v.PID { // the container's first process is its main one
			v.PID, v.Command = pid, strings.Join(args, " ")
		}
	}
	if v.PID == 0 {
		return nil, fmt.Errorf("no process in %s", v.CgroupDir)
	}
	st, err := procStatus(fmt.Sprintf("/proc/%d/status", v.PID))
	if err != nil {
		return nil, err
	}
	v.ProcCPUs = st["Cpus_allowed_list"]
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", v.PID))
	if err != nil {
		return nil, err
	}
	for _, t := range tasks {
		st, err := procStatus(fmt.Sprintf("/proc/%d/task/%s/status", v.PID, t.Name()))
		if err != nil {
			continue // exited meanwhile
		}
		ns := strings.Fields(st["NSpid"])
		if len(ns) == 0 {
			continue
		}
		inner, _ := strconv.Atoi(ns[len(ns)-1])
		host, _ := strconv.Atoi(t.Name())
		v.Threads[inner] = HostThread{HostTID: host, Name: st["Name"], CPUs: st["Cpus_allowed_list"]}
	}
	return v, nil
}

func procStatus(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m, nil
}

// CPUManagerState is the kubelet's static CPU manager checkpoint (<kubelet root>/cpu_manager_state).
type CPUManagerState struct {
	PolicyName    string                       `json:"policyName"`
	DefaultCPUSet string                       `json:"defaultCpuSet"`
	Entries       map[string]map[string]string `json:"entries"`
	// Data is the same checkpoint as a JSON string, in the layout kubelets since 1.36 write.
	Data string `json:"data"`
}

// ReadCPUManagerState reads the checkpoint from the kubelet's root directory.
func ReadCPUManagerState(kubeletDir string) (*CPUManagerState, error) {
	b, err := os.ReadFile(filepath.Join(kubeletDir, "cpu_manager_state"))
	if err != nil {
		return nil, err
	}
	var s CPUManagerState
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	if s.Data != "" {
		var inner CPUManagerState
		if err := json.Unmarshal([]byte(s.Data), &inner); err != nil {
			return nil, fmt.Errorf("cpu_manager_state data: %w", err)
		}
		return &inner, nil
	}
	return &s, nil
}

// Subset reports whether every CPU of list a is in list b (taskset syntax).
func Subset(a, b string) (bool, error) {
	as, err := cpuset.Parse(a)
	if err != nil {
		return false, err
	}
	bs, err := cpuset.Parse(b)
	if err != nil {
		return false, err
	}
	in := map[int]bool{}
	for _, c := range bs {
		in[c] = true
	}
	for _, c := range as {
		if !in[c] {
			return false, nil
		}
	}
	return true, nil
}

// SameCPUs reports whether two lists name the same CPUs.
func SameCPUs(a, b string) bool {
	x, err1 := Subset(a, b)
	y, err2 := Subset(b, a)
	return err1 == nil && err2 == nil && x && y
}
