package testbed

import (
	"fmt"
	"os"
	"runtime"
	"strings"
)

// Environment is everything about the setup that a comparison needs.
type Environment struct {
	// Target is the target's name: "local", "kind" or "remote".
	Target string `json:"target"`
	// GoVersion is the harness's Go version (runtime.Version).
	GoVersion string `json:"goVersion"`
	// Kernel is the kernel release; on a cluster, every node's distinct
	// ones, joined by ", ".
	Kernel string `json:"kernel"`
	// OSImage is the operating system's name (PRETTY_NAME, or the nodes'
	// OS images); "" when unknown.
	OSImage string `json:"osImage,omitempty"`
	// CPUModel is the CPU's model name; on a cluster, the nodes' (or their
	// instance type).
	CPUModel string `json:"cpuModel"`
	// Cores is the number of CPUs: the host's, or the smallest node's
	// allocatable cores.
	Cores int `json:"cores"`
	// MemoryMiB is the memory, MiB: the host's MemTotal, or the smallest
	// node's allocatable memory.
	MemoryMiB int64 `json:"memoryMiB"`
	// Nodes is the number of nodes; 1 for the local target.
	Nodes int `json:"nodes"`
	// Kubernetes is the cluster's Kubernetes version; "" locally.
	Kubernetes string `json:"kubernetes,omitempty"`
	// Runtime is the nodes' container runtime and version; "" locally.
	Runtime string `json:"containerRuntime,omitempty"`
	// MTU is the pods' network MTU, bytes; 0 when unknown or local.
	MTU int `json:"mtu,omitempty"`
	// CPUCounters says where the CPU and memory counters came from and
	// when they were read: on a cluster, the kubelet's cached stats or an
	// on-demand read on each node; locally, each thread's run time from
	// /proc in ns (schedstat) or, before 2026-12-07 and on a kernel
	// without schedstat, in 10 ms ticks ("" in results of before).
	CPUCounters string `json:"cpuCounters,omitempty"`
	// Mesh describes the meshed arm's proxies.
	Mesh MeshInfo `json:"mesh"`
	// Loadgen says where the load generator sits and what it is.
	Loadgen string `json:"loadgen"`
	// Baseline says where the baseline arm ran when not next to the
	// meshed arm: a second cluster, for a mesh that is on for a whole
	// cluster. "" when both arms share the target.
	Baseline string `json:"baseline,omitempty"`
}

// MeshInfo names the mesh and how it was configured.
type MeshInfo struct {
	// Name is the mesh: the adapter's name on a cluster, e.g. "istio", or
	// "sidecar/<proxy>" locally.
	Name string `json:"name"`
	// Version is the mesh's (or the local proxy's) version.
	Version string `json:"version"`
	// Threads is the proxy worker threads (0: the proxy's default, all cores).
	Threads int `json:"threads"`
	// Config is the mesh-specific configuration as key/value pairs.
	Config map[string]string `json:"config,omitempty"`
}

// Host fills in what the local machine says about itself.
func Host() Environment {
	e := Environment{GoVersion: runtime.Version(), Cores: runtime.NumCPU(), Nodes: 1}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		e.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				e.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				var kb int64
				_, _ = fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kb)
				e.MemoryMiB = kb / 1024
			}
		}
	}
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
				e.OSImage = strings.Trim(v, `"`)
			}
		}
	}
	return e
}
