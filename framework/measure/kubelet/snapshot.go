package kubelet

import (
	"fmt"
	"io"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metric names read from the kubelet. The resource names are stable since
// Kubernetes 1.29 (KEP-727); the cAdvisor names follow cAdvisor's exporter.
const (
	MetricContainerCPU        = "container_cpu_usage_seconds_total"
	MetricContainerWorkingSet = "container_memory_working_set_bytes"
	MetricContainerStartTime  = "container_start_time_seconds"
	MetricNodeCPU             = "node_cpu_usage_seconds_total"
	MetricNodeWorkingSet      = "node_memory_working_set_bytes"
	MetricPodCPU              = "pod_cpu_usage_seconds_total"
	MetricPodWorkingSet       = "pod_memory_working_set_bytes"
	MetricScrapeError         = "resource_scrape_error"
	MetricScrapeErrorOld      = "scrape_error" // deprecated name, kubelet < 1.29

	MetricContainerRSS        = "container_memory_rss"
	MetricCFSPeriods          = "container_cpu_cfs_periods_total"
	MetricCFSThrottledPeriods = "container_cpu_cfs_throttled_periods_total"
	MetricCFSThrottledSeconds = "container_cpu_cfs_throttled_seconds_total"
	MetricCPUQuota            = "container_spec_cpu_quota"
	MetricCPUPeriod           = "container_spec_cpu_period"
)

// ContainerKey names one container the way both kubelet endpoints label it.
type ContainerKey struct {
	// Namespace is the pod's namespace.
	Namespace string `json:"namespace"`
	// Pod is the pod's name.
	Pod string `json:"pod"`
	// Container is the container's name.
	Container string `json:"container"`
}

// String is "namespace/pod/container".
func (k ContainerKey) String() string { return k.Namespace + "/" + k.Pod + "/" + k.Container }

// PodKey names one pod.
type PodKey struct {
	// Namespace is the pod's namespace.
	Namespace string `json:"namespace"`
	// Pod is the pod's name.
	Pod string `json:"pod"`
}

// String is "namespace/pod".
func (k PodKey) String() string { return k.Namespace + "/" + k.Pod }

// Sample is one value with the timestamp the kubelet attached to it. The
// timestamp is the time the kubelet's stats were collected, not the time of
// the HTTP read; it is zero when the exposition carried none.
type Sample struct {
	// Value is the sample's value, in its series' unit.
	Value float64 `json:"value"`
	// Time is when the kubelet collected it; zero when unknown.
	Time time.Time `json:"time"`
}

// Container holds one container's counters from one read.
type Container struct {
	// ID is the runtime's container ID, when the read knows it (the
	// kubelet's endpoints do not say it; a read on the node does). A
	// change between two reads means a restart.
	ID string `json:"id,omitempty"`
	// CPUSeconds is container_cpu_usage_seconds_total (core-seconds, cumulative).
	CPUSeconds Sample `json:"cpuSeconds"`
	// WorkingSetBytes is container_memory_working_set_bytes (bytes, gauge):
	// memory usage less inactive file pages, so it holds the active page
	// cache.
	WorkingSetBytes Sample `json:"workingSetBytes"`
	// RSSBytes is the container's anonymous memory (bytes, gauge): cAdvisor's
	// container_memory_rss, the CRI's rssBytes, or the cgroup's own
	// (v1 total_rss, v2 anon). Nil when the read had none.
	RSSBytes *Sample `json:"rssBytes,omitempty"`
	// StartTime is container_start_time_seconds; zero when not reported
	// (kubelet < 1.23). A change between two reads means a restart.
	StartTime time.Time `json:"startTime,omitzero"`
	// Throttling holds the cAdvisor CFS counters; nil when the container has
	// no CFS quota (no CPU limit) or /metrics/cadvisor was not read.
	Throttling *Throttling `json:"throttling,omitempty"`
}

// Memory is the container's memory to report, and whether it is its RSS:
// RSSBytes when the read had it, else WorkingSetBytes. The RSS is
// preferred because the working set grows with the page cache of the
// files the container writes (a sidecar's access log), which is not the
// memory its processes hold.
func (c Container) Memory() (s Sample, rss bool) {
	if c.RSSBytes != nil {
		return *c.RSSBytes, true
	}
	return c.WorkingSetBytes, false
}

// Throttling holds a container's CFS counters from /metrics/cadvisor.
type Throttling struct {
	// Periods is container_cpu_cfs_periods_total (enforcement periods elapsed).
	Periods Sample `json:"periods"`
	// ThrottledPeriods is container_cpu_cfs_throttled_periods_total.
	ThrottledPeriods Sample `json:"throttledPeriods"`
	// ThrottledSeconds is container_cpu_cfs_throttled_seconds_total; nil when
	// the node does not export it (seen on some cgroup v2 nodes).
	ThrottledSeconds *Sample `json:"throttledSeconds,omitempty"`
	// LimitCores is container_spec_cpu_quota / container_spec_cpu_period, the
	// CPU limit in cores; 0 when cAdvisor did not report both.
	LimitCores float64 `json:"limitCores,omitempty"`
}

// Pod holds one pod's totals as the kubelet reports them (pod cgroup, which
// includes the pause container and any sidecars).
type Pod struct {
	// CPUSeconds is pod_cpu_usage_seconds_total (core-seconds, cumulative).
	CPUSeconds Sample `json:"cpuSeconds"`
	// WorkingSetBytes is pod_memory_working_set_bytes (bytes, gauge).
	WorkingSetBytes Sample `json:"workingSetBytes"`
}

// Snapshot is one read of one node's kubelet.
type Snapshot struct {
	// Node is the node's name.
	Node string `json:"node"`
	// ReadAt is the wall-clock time of the read. It is recorded for the
	// report only and is never used to compute a rate.
	ReadAt time.Time `json:"readAt"`
	// NodeCPUSeconds is node_cpu_usage_seconds_total (core-seconds, cumulative).
	NodeCPUSeconds Sample `json:"nodeCpuSeconds"`
	// NodeWorkingSetBytes is node_memory_working_set_bytes.
	NodeWorkingSetBytes Sample `json:"nodeWorkingSetBytes"`
	// ScrapeError is true when the kubelet reported resource_scrape_error 1:
	// its stats provider failed and the counters may be incomplete.
	ScrapeError bool `json:"scrapeError,omitempty"`
	// Containers are the containers' counters, by container.
	Containers map[ContainerKey]Container `json:"-"`
	// Pods are the pods' totals, by pod.
	Pods map[PodKey]Pod `json:"-"`
}

// each applies set to the entry of every series of fam in into, keyed by key.
func each[K comparable, V any](fam *dto.MetricFamily, key func(*dto.Metric) K, into map[K]V, set func(*V, *dto.Metric)) {
	for _, m := range fam.GetMetric() {
		k := key(m)
		v := into[k]
		set(&v, m)
		into[k] = v
	}
}

// ParseResource parses a kubelet /metrics/resource exposition into a
// Snapshot. Families it does not use are ignored.
func ParseResource(r io.Reader) (Snapshot, error) {
	fams, err := parseText(r)
	if err != nil {
		return Snapshot{}, fmt.Errorf("parse /metrics/resource: %w", err)
	}
	s := Snapshot{Containers: map[ContainerKey]Container{}, Pods: map[PodKey]Pod{}}
	each(fams[MetricContainerCPU], containerKey, s.Containers, func(c *Container, m *dto.Metric) { c.CPUSeconds = sampleOf(m) })
	each(fams[MetricContainerWorkingSet], containerKey, s.Containers, func(c *Container, m *dto.Metric) { c.WorkingSetBytes = sampleOf(m) })
	for _, m := range fams[MetricContainerStartTime].GetMetric() {
		k := containerKey(m)
		c, ok := s.Containers[k]
		if !ok {
			continue // start time alone (no CPU, no memory) is of no use
		}
		c.StartTime = secondsToTime(valueOf(m))
		s.Containers[k] = c
	}
	each(fams[MetricPodCPU], podKey, s.Pods, func(p *Pod, m *dto.Metric) { p.CPUSeconds = sampleOf(m) })
	each(fams[MetricPodWorkingSet], podKey, s.Pods, func(p *Pod, m *dto.Metric) { p.WorkingSetBytes = sampleOf(m) })
	if ms := fams[MetricNodeCPU].GetMetric(); len(ms) > 0 {
		s.NodeCPUSeconds = sampleOf(ms[0])
	}
	if ms := fams[MetricNodeWorkingSet].GetMetric(); len(ms) > 0 {
		s.NodeWorkingSetBytes = sampleOf(ms[0])
	}
	for _, name := range []string{MetricScrapeError, MetricScrapeErrorOld} {
		if ms := fams[name].GetMetric(); len(ms) > 0 && valueOf(ms[0]) != 0 {
			s.ScrapeError = true
		}
	}
	return s, nil
}

// Cadvisor is what /metrics/cadvisor adds to a container's counters.
type Cadvisor struct {
	// Throttling holds the CFS counters; nil when the container has none
	// (no CPU limit).
	Throttling *Throttling
	// RSSBytes is container_memory_rss; nil when not reported.
	RSSBytes *Sample
}

// ParseCadvisor parses a kubelet /metrics/cadvisor exposition and returns,
// by container, the CFS counters and the RSS of every container that has
// either. Series with an empty container label (pod and QoS cgroups, and
// the pause container under containerd) and the pause container ("POD",
// under dockershim) are skipped: they aggregate or duplicate the
// containers below them.
func ParseCadvisor(r io.Reader) (map[ContainerKey]Cadvisor, error) {
	fams, err := parseText(r)
	if err != nil {
		return nil, fmt.Errorf("parse /metrics/cadvisor: %w", err)
	}
	out := map[ContainerKey]Cadvisor{}
	for k, t := range throttlingOf(fams) {
		out[k] = Cadvisor{Throttling: &t}
	}
	for _, m := range fams[MetricContainerRSS].GetMetric() {
		k := containerKey(m)
		if !isContainer(k) {
			continue
		}
		c, s := out[k], sampleOf(m)
		c.RSSBytes = &s
		out[k] = c
	}
	return out, nil
}

// isContainer is false for the series of a pod or QoS cgroup (no container
// label) and of the pause container.
func isContainer(k ContainerKey) bool { return k.Container != "" && k.Container != "POD" }

// throttlingOf is the CFS counters of every container in the cAdvisor
// families fams that has any.
func throttlingOf(fams map[string]*dto.MetricFamily) map[ContainerKey]Throttling {
	out := map[ContainerKey]Throttling{}
	each := func(name string, f func(t *Throttling, m *dto.Metric)) {
		for _, m := range fams[name].GetMetric() {
			k := containerKey(m)
			if !isContainer(k) {
				continue
			}
			t := out[k]
			f(&t, m)
			out[k] = t
		}
	}
	each(MetricCFSPeriods, func(t *Throttling, m *dto.Metric) { t.Periods = sampleOf(m) })
	each(MetricCFSThrottledPeriods, func(t *Throttling, m *dto.Metric) { t.ThrottledPeriods = sampleOf(m) })
	each(MetricCFSThrottledSeconds, func(t *Throttling, m *dto.Metric) {
		s := sampleOf(m)
		t.ThrottledSeconds = &s
	})
	quota := map[ContainerKey]float64{}
	for _, m := range fams[MetricCPUQuota].GetMetric() {
		quota[containerKey(m)] = valueOf(m)
	}
	for _, m := range fams[MetricCPUPeriod].GetMetric() {
		k := containerKey(m)
		t, ok := out[k]
		if !ok || valueOf(m) <= 0 || quota[k] <= 0 {
			continue
		}
		t.LimitCores = quota[k] / valueOf(m)
		out[k] = t
	}
	return out
}

// WithCadvisor returns a copy of s whose containers carry the CFS counters
// and the RSS in cad. Containers that cAdvisor reports but
// /metrics/resource does not are ignored: without a CPU counter they
// cannot be measured.
func (s Snapshot) WithCadvisor(cad map[ContainerKey]Cadvisor) Snapshot {
	out := s
	out.Containers = make(map[ContainerKey]Container, len(s.Containers))
	for k, c := range s.Containers {
		if ca, ok := cad[k]; ok {
			c.Throttling, c.RSSBytes = ca.Throttling, ca.RSSBytes
		}
		out.Containers[k] = c
	}
	return out
}

func parseText(r io.Reader) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(r)
}

func containerKey(m *dto.Metric) ContainerKey {
	return ContainerKey{Namespace: label(m, "namespace"), Pod: label(m, "pod"), Container: label(m, "container")}
}

func podKey(m *dto.Metric) PodKey {
	return PodKey{Namespace: label(m, "namespace"), Pod: label(m, "pod")}
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func valueOf(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	default:
		return m.GetUntyped().GetValue()
	}
}

func sampleOf(m *dto.Metric) Sample {
	s := Sample{Value: valueOf(m)}
	if m.TimestampMs != nil {
		s.Time = time.UnixMilli(m.GetTimestampMs()).UTC()
	}
	return s
}

func secondsToTime(sec float64) time.Time {
	if sec <= 0 {
		return time.Time{}
	}
	whole := int64(sec)
	return time.Unix(whole, int64((sec-float64(whole))*1e9)).UTC()
}
