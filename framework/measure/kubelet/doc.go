// Package kubelet reads per-container CPU, memory and CFS throttling counters
// from the kubelet, through the API server's node proxy, and turns two reads
// into usage over the measured window.
//
// CPU comes from the kubelet's /metrics/resource endpoint
// (container_cpu_usage_seconds_total, a cumulative counter), and throttling
// and each container's RSS from /metrics/cadvisor (container_cpu_cfs_*,
// container_memory_rss). Memory is reported as the RSS when the reads have
// it, the working set only when they do not: the working set holds the
// page cache of the files a container writes. Usage is always a counter
// delta divided by the distance between the samples' own timestamps: the
// kubelet refreshes its stats every few seconds, so the wall-clock time of the
// read says nothing about the window the counter covers. metrics-server and
// `kubectl top` are never consulted.
//
// A counter that goes backwards, a container that disappears or restarts
// during the window, or a window the kubelet has not refreshed, is a typed
// error returned together with everything that could still be computed, so a
// caller can mark the run invalid without losing the data.
package kubelet
