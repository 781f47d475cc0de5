package target

import (
	"fmt"
	"os"
	"runtime"
	"strings"
)

// Environment is everything about the setup that a comparison needs.
type Environment struct {
	Target     string `json:"target"`
	GoVersion  string `json:"goVersion"`
	Kernel     string `json:"kernel"`
	OSImage    string `json:"osImage,omitempty"`
	CPUModel   string `json:"cpuModel"`
	Cores      int    `json:"cores"`
	MemoryMiB  int64  `json:"memoryMiB"`
	Nodes      int    `json:"nodes"`
	Kubernetes string `json:"kubernetes,omitempty"`
	Runtime    string `json:"containerRuntime,omitempty"`
	MTU        int    `json:"mtu,omitempty"`
	// CPUCounters says where the CPU and memory counters came from and
	// when they were read: on a cluster, the kubelet's cached stats or an
	// on-demand read on each node. "" for the local target's /proc.
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
	Name    string `json:"name"`
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
