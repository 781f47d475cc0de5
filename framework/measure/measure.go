// Package measure reads what a run cost in CPU and memory, per role, as the
// difference of cumulative counters over the measured window: never a
// snapshot rate. This file holds the role model shared by every source; the
// /proc source for local processes is in proc.go, and the kubelet source for
// clusters in measure/kubelet.
package measure

import (
	"fmt"
	"sort"
	"time"
)

// Role is what a process or container is for, in CPU accounting.
type Role string

// Roles meshbench reports separately.
const (
	RoleLoadgen      Role = "loadgen"       // the load generator
	RoleApp          Role = "app"           // backend and frontend apps
	RoleSidecar      Role = "sidecar"       // per-workload proxies
	RoleNodeProxy    Role = "node-proxy"    // per-node proxies: ztunnel, cilium-agent, cilium-envoy
	RoleControlPlane Role = "control-plane" // the mesh control plane
)

// Usage is what one process (or container) used over a window.
type Usage struct {
	// Name is the process's name locally, "namespace/pod/container" on a
	// cluster.
	Name string `json:"name"`
	// Role is what the process is to the run.
	Role Role `json:"role"`
	// Pod is the workload the process or container belongs to ("meshed/backend"
	// locally, "namespace/pod" on a cluster): a sidecar and the app beside it
	// share it, so the sidecar:app ratio can be taken per pod.
	Pod string `json:"pod,omitempty"`
	// PID is the process id; 0 on a cluster.
	PID int `json:"pid,omitempty"`
	// CPUSeconds is the CPU time used in the window (user+system).
	CPUSeconds float64 `json:"cpuSeconds"`
	// MilliCores is CPUSeconds over the window length, times 1000.
	MilliCores float64 `json:"milliCores"`
	// MaxThreadMilliCores is the busiest single thread's share; near 1000
	// means one worker thread is pinned and is the bottleneck.
	MaxThreadMilliCores float64 `json:"maxThreadMilliCores"`
	// IdleRSS is resident memory before load (bytes), LoadRSS at the end
	// of the window (bytes); Memory says what they measure.
	IdleRSS int64 `json:"idleRSSBytes"`
	LoadRSS int64 `json:"loadRSSBytes"`
	// Memory is what IdleRSS and LoadRSS are on a cluster: MemoryRSS or
	// MemoryWorkingSet. It is empty for a process (the local target: its
	// resident set, VmRSS) and in results files written before it existed.
	Memory MemoryKind `json:"memory,omitempty"`
	// Threads is the number of OS threads at the end of the window.
	Threads int `json:"threads"`
}

// MemoryKind is what a container's memory figures measure (Usage.Memory).
type MemoryKind string

// The memory a cluster reports of a container.
const (
	// MemoryRSS is the container's anonymous memory: cgroup v1 total_rss,
	// v2 anon, as cAdvisor's container_memory_rss and the CRI's rssBytes
	// report it. Like a process's resident set, it leaves out the page
	// cache, so it does not grow with the files the container writes.
	MemoryRSS MemoryKind = "rss"
	// MemoryWorkingSet is the container's working set: its cgroup's memory
	// usage less its inactive file pages. It holds the active page cache
	// (a sidecar's access log grows it with every request), so it is
	// reported only when the counters read have no RSS.
	MemoryWorkingSet MemoryKind = "working-set"
)

// Window is the resource usage of a whole measured window.
type Window struct {
	// Start is when the window began, wall clock.
	Start time.Time `json:"start"`
	// Elapsed is the span the counters cover (see Aligned).
	Elapsed time.Duration `json:"elapsed"`
	// Usage is per process or container.
	Usage []Usage `json:"usage"`
	// NodeUtilisation is the busy fraction of all the machine's CPUs over
	// the window, in percent, per node (one node for the local target).
	NodeUtilisation map[string]float64 `json:"nodeUtilisation"`
	// NodeSteal is the part of NodeUtilisation that the hypervisor gave
	// to other guests (steal in /proc/stat), in percent, per node: busy
	// to the machine, but used by no process on it. Read by the local
	// target only.
	NodeSteal map[string]float64 `json:"nodeSteal,omitempty"`
	// Cores is the number of CPUs of each node.
	Cores map[string]int `json:"cores"`
	// Restarts names anything that restarted or vanished in the window.
	Restarts []string `json:"restarts,omitempty"`
	// Aligned says that the counters were read as the kubelets refreshed
	// them, under the run's load kept on before and after its window: they
	// span Elapsed, longer than the window, at the window's load, so that
	// their rates stand for the window's. A figure per request then divides
	// a rate by the window's own throughput, not the CPU time of Elapsed by
	// the window's requests.
	Aligned bool `json:"aligned,omitempty"`
	// Check is the same run's counters read a second way, to check these:
	// with the kubelets' aligned counters as the figures, the nodes read
	// at the instant right after each of their reads, under the same load
	// (kube.Options.CheckExec). Its rates are over its own Elapsed. Nil
	// when not asked for.
	Check *Window `json:"check,omitempty"`
}

// RoleTotal sums one role.
type RoleTotal struct {
	// Role is the role summed.
	Role Role `json:"role"`
	// MilliCores is the role's processes' CPU summed, millicores.
	MilliCores float64 `json:"milliCores"`
	// MaxLoadRSS is the largest single process's resident memory under load.
	MaxLoadRSS int64 `json:"maxLoadRSSBytes"`
	// MaxIdleRSS is the largest single process's resident memory before
	// load, bytes.
	MaxIdleRSS int64 `json:"maxIdleRSSBytes"`
	// MaxThreadMilliCores is the busiest thread of any process in the role.
	MaxThreadMilliCores float64 `json:"maxThreadMilliCores"`
	// Count is the number of processes or containers summed.
	Count int `json:"count"`
}

// ByRole sums the window per role, in a stable order.
func (w Window) ByRole() []RoleTotal {
	m := map[Role]*RoleTotal{}
	for _, u := range w.Usage {
		t, ok := m[u.Role]
		if !ok {
			t = &RoleTotal{Role: u.Role}
			m[u.Role] = t
		}
		t.Count++
		t.MilliCores += u.MilliCores
		t.MaxLoadRSS = max(t.MaxLoadRSS, u.LoadRSS)
		t.MaxIdleRSS = max(t.MaxIdleRSS, u.IdleRSS)
		t.MaxThreadMilliCores = max(t.MaxThreadMilliCores, u.MaxThreadMilliCores)
	}
	out := make([]RoleTotal, 0, len(m))
	for _, t := range m {
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool { return roleOrder(out[i].Role) < roleOrder(out[j].Role) })
	return out
}

// Role returns the total for r, and whether any process had that role.
func (w Window) Role(r Role) (RoleTotal, bool) {
	for _, t := range w.ByRole() {
		if t.Role == r {
			return t, true
		}
	}
	return RoleTotal{Role: r}, false
}

func roleOrder(r Role) string {
	for i, k := range []Role{RoleLoadgen, RoleApp, RoleSidecar, RoleNodeProxy, RoleControlPlane} {
		if r == k {
			return fmt.Sprint(i)
		}
	}
	return "9" + string(r)
}

// PinnedThreshold is the per-thread CPU, in millicores, above which a thread
// counts as pinned: a single-threaded bottleneck.
const PinnedThreshold = 900

// Bottlenecks lists processes whose busiest thread is pinned near one core.
func (w Window) Bottlenecks() []string {
	var out []string
	for _, u := range w.Usage {
		if u.MaxThreadMilliCores >= PinnedThreshold {
			out = append(out, fmt.Sprintf("%s (%s): one thread at %.0fm of 1000m", u.Name, u.Role, u.MaxThreadMilliCores))
		}
	}
	return out
}
