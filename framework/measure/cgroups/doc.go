// Package cgroups finds a Kubernetes container's cgroup on its node by the
// kubelet's own layout, and reads its CPU, CFS throttling and memory
// (working set and RSS) counters at the instant of the read.
//
// The kubelet names a container's cgroup from the pod's QoS class, the
// pod's UID and the runtime's container ID, under its pods cgroup
// ("kubepods"), in one of two ways: the cgroupfs driver's plain
// directories (kubepods/burstable/pod<uid>/<id>) and the systemd
// driver's slices and scopes (kubepods.slice/kubepods-burstable.slice/
// kubepods-burstable-pod<uid with _>.slice/cri-containerd-<id>.scope).
// Layout holds which one a node uses, and which cgroup version (v1: one
// hierarchy per controller; v2: one unified tree); Detect reads it from
// the tree itself. A container whose cgroup is not where the layout puts
// it is an error naming what was found instead.
//
// Every read is through an fs.FS rooted at the host's cgroup mount (a
// read-only hostPath in the node agent, cmd/mbnodecpu), so the mapping
// and the parsing are tested on fstest.MapFS trees. Handler serves the
// reads over HTTP with the node's monotonic clock.
package cgroups
