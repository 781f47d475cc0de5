// Package nodestats reads per-container CPU, memory and CFS throttling
// counters on a node itself, at the moment of the read, for clusters whose
// nodes the harness can run a command on (kind: docker exec into the node
// container).
//
// The kubelet's /metrics/resource serves cAdvisor's cached stats, which it
// refreshes every 10-15 s: a 10 s window read from it is shifted and
// diluted by idle time. Here one shell script per node (Script) reads the
// node's own cgroup (node CPU and working set), the CFS counters of every
// pod container's cgroup (cpu.stat, the CPU quota), and then asks the
// container runtime for every container's CPU, working set and RSS
// (`crictl stats -o json`: containerd reads the cgroups on request and
// stamps each sample with the time it read it). The result is a
// kubelet.Snapshot whose samples carry the read's own timestamps, so
// kubelet.Delta, the coverage check and the throttling checks work on it
// unchanged. cgroup v1 and v2 are both read.
package nodestats
