package kubelet

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/meshbench/meshbench/framework/measure"
)

// CounterResetError reports a container whose counters cannot be differenced
// across the window: its CPU counter went backwards, its start time changed,
// or it is missing from the second read. Each means the container restarted
// (or was replaced) during the measured window, so the run must be marked
// invalid rather than reported with a silently wrong figure.
type CounterResetError struct {
	// Container is the container whose counters reset.
	Container ContainerKey
	// Reason is one of "decreased", "restarted", "missing".
	Reason string
	// Before and After are the CPU counter values (core-seconds); After is 0
	// when Reason is "missing".
	Before, After float64
	// StartBefore and StartAfter are the container start times, when known.
	StartBefore, StartAfter time.Time
	// IDBefore and IDAfter are the runtime's container IDs, when known.
	IDBefore, IDAfter string
}

// Error says how the container's counters reset, and that the run must
// be marked invalid.
func (e *CounterResetError) Error() string {
	switch e.Reason {
	case "missing":
		return fmt.Sprintf("container %s: present in the first read but missing from the second "+
			"(restarted, evicted or deleted during the window); mark the run invalid", e.Container)
	case "restarted":
		if e.StartBefore.IsZero() || e.StartAfter.IsZero() {
			return fmt.Sprintf("container %s: its ID changed from %.12s to %.12s (restarted during the window); mark the run invalid",
				e.Container, e.IDBefore, e.IDAfter)
		}
		return fmt.Sprintf("container %s: start time changed from %s to %s (restarted during the window); mark the run invalid",
			e.Container, e.StartBefore.Format(time.RFC3339), e.StartAfter.Format(time.RFC3339))
	default:
		return fmt.Sprintf("container %s: %s went from %g to %g (counter reset: restarted during the window); mark the run invalid",
			e.Container, MetricContainerCPU, e.Before, e.After)
	}
}

// WindowError reports a sample pair whose own timestamps do not span a
// positive window: the kubelet had not refreshed its stats between the two
// reads (it does so every 10-15 s), or a sample carried no timestamp. The
// caller should read again later, or lengthen the measured window.
type WindowError struct {
	// What names the series: a container key, or "node".
	What string
	// Before and After are the two samples' own timestamps; zero when a
	// sample carried none.
	Before, After time.Time
}

// Error says which samples do not span a window, and why.
func (e *WindowError) Error() string {
	if e.Before.IsZero() || e.After.IsZero() {
		return fmt.Sprintf("%s: %s sample has no timestamp; refusing to fall back to wall-clock time", e.What, MetricContainerCPU)
	}
	return fmt.Sprintf("%s: samples are not in time order or not refreshed (first at %s, second at %s); "+
		"the kubelet had not updated its stats, lengthen the window", e.What,
		e.Before.Format(time.RFC3339Nano), e.After.Format(time.RFC3339Nano))
}

// ContainerUsage is one container's usage over the measured window.
type ContainerUsage struct {
	// Container is the container measured.
	Container ContainerKey `json:"container"`
	// Window is the distance between the two CPU samples' own timestamps.
	Window time.Duration `json:"windowNs"`
	// CPUSeconds is the counter delta, in core-seconds.
	CPUSeconds float64 `json:"cpuSeconds"`
	// Millicores is CPUSeconds / Window × 1000.
	Millicores float64 `json:"millicores"`
	// WorkingSetBytesBefore and WorkingSetBytes are the working sets at the
	// first and second read (idle and loaded, when the window is a load run).
	WorkingSetBytesBefore float64 `json:"workingSetBytesBefore"`
	WorkingSetBytes       float64 `json:"workingSetBytes"`
	// HasRSS is true when both reads had the container's RSS;
	// RSSBytesBefore and RSSBytes are then the RSS at the first and second
	// read.
	HasRSS         bool    `json:"hasRss,omitempty"`
	RSSBytesBefore float64 `json:"rssBytesBefore,omitempty"`
	RSSBytes       float64 `json:"rssBytes,omitempty"`
	// HasCFS is true when the container has CFS counters in both reads
	// (it has a CPU limit and /metrics/cadvisor was read).
	HasCFS bool `json:"hasCfs"`
	// Periods and ThrottledPeriods are the CFS counter deltas.
	Periods          float64 `json:"cfsPeriods,omitempty"`
	ThrottledPeriods float64 `json:"cfsThrottledPeriods,omitempty"`
	// ThrottledRatio is ThrottledPeriods / Periods over the window (0..1).
	ThrottledRatio float64 `json:"cfsThrottledRatio,omitempty"`
	// ThrottledSeconds is the throttled-time delta, when the node reports it.
	ThrottledSeconds float64 `json:"cfsThrottledSeconds,omitempty"`
	// LimitCores is the CPU limit seen in the second read, 0 if none.
	LimitCores float64 `json:"limitCores,omitempty"`
}

// Memory is the container's memory at the first and second read, and what
// it is: its RSS when both reads had it, else its working set (the two are
// never mixed in one window).
func (c ContainerUsage) Memory() (before, after float64, kind measure.MemoryKind) {
	if c.HasRSS {
		return c.RSSBytesBefore, c.RSSBytes, measure.MemoryRSS
	}
	return c.WorkingSetBytesBefore, c.WorkingSetBytes, measure.MemoryWorkingSet
}

// Usage is one node's usage over the measured window.
type Usage struct {
	// Node is the node's name.
	Node string `json:"node"`
	// NodeWindow is the distance between the two node CPU samples.
	NodeWindow time.Duration `json:"nodeWindowNs"`
	// NodeCores is the node's CPU use over NodeWindow, in cores.
	NodeCores float64 `json:"nodeCores"`
	// NodeWorkingSetBytes is the node working set at the second read.
	NodeWorkingSetBytes float64 `json:"nodeWorkingSetBytes"`
	// Containers is sorted by key.
	Containers []ContainerUsage `json:"containers"`
	// Appeared lists containers present only in the second read. They
	// started during the window, so their counters cover part of it only.
	Appeared []ContainerKey `json:"appeared,omitempty"`
}

// NodeUtilisation returns the node's CPU use as a percentage of its
// allocatable cores (from the Node's status.allocatable.cpu).
func (u Usage) NodeUtilisation(allocatableCores float64) (float64, error) {
	if allocatableCores <= 0 {
		return 0, fmt.Errorf("node %s: allocatable cores must be positive, got %g", u.Node, allocatableCores)
	}
	return u.NodeCores / allocatableCores * 100, nil
}

// Container returns the usage of one container.
func (u Usage) Container(k ContainerKey) (ContainerUsage, bool) {
	i := sort.Search(len(u.Containers), func(i int) bool { return !keyLess(u.Containers[i].Container, k) })
	if i < len(u.Containers) && u.Containers[i].Container == k {
		return u.Containers[i], true
	}
	return ContainerUsage{}, false
}

// Delta differences two reads of the same node. Rates use the samples' own
// timestamps, never the wall-clock time of the reads.
//
// Containers that restarted, went backwards or disappeared are left out of
// the result and reported as *CounterResetError; containers whose samples do
// not span a positive window are reported as *WindowError. All such errors
// are joined and returned together with the Usage of every other container,
// so nothing measured is lost; use errors.As to inspect them.
func Delta(before, after Snapshot) (Usage, error) {
	if before.Node != after.Node {
		return Usage{}, fmt.Errorf("delta across different nodes: %q and %q", before.Node, after.Node)
	}
	u := Usage{Node: after.Node, NodeWorkingSetBytes: after.NodeWorkingSetBytes.Value}
	var errs []error
	if err := nodeDelta(before, after, &u); err != nil {
		errs = append(errs, err)
	}
	for _, k := range sortedKeys(before.Containers) {
		b := before.Containers[k]
		a, ok := after.Containers[k]
		if !ok {
			errs = append(errs, &CounterResetError{Container: k, Reason: "missing", Before: b.CPUSeconds.Value})
			continue
		}
		cu, err := containerDelta(k, b, a)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		u.Containers = append(u.Containers, cu)
	}
	for _, k := range sortedKeys(after.Containers) {
		if _, ok := before.Containers[k]; !ok {
			u.Appeared = append(u.Appeared, k)
		}
	}
	return u, errors.Join(errs...)
}

// nodeDelta sets u's node window and cores from the node's CPU counter in
// the two reads, or says why it cannot (a window that is not positive, or a
// counter that went backwards).
func nodeDelta(before, after Snapshot, u *Usage) error {
	nw, err := window("node", before.NodeCPUSeconds, after.NodeCPUSeconds)
	if err != nil {
		return err
	}
	d := after.NodeCPUSeconds.Value - before.NodeCPUSeconds.Value
	if d < 0 {
		return fmt.Errorf("node %s: %s went from %g to %g (the kubelet restarted or the node rebooted); mark the run invalid",
			after.Node, MetricNodeCPU, before.NodeCPUSeconds.Value, after.NodeCPUSeconds.Value)
	}
	u.NodeWindow = nw
	u.NodeCores = d / nw.Seconds()
	return nil
}

// containerDelta differences container k's reads b and a: its CPU, working
// set and, when both reads have them, RSS and CFS counters. It fails with a
// *CounterResetError or *WindowError when the reads cannot be differenced.
func containerDelta(k ContainerKey, b, a Container) (ContainerUsage, error) {
	if cr := reset(k, b, a); cr != nil {
		return ContainerUsage{}, cr
	}
	w, err := window(k.String(), b.CPUSeconds, a.CPUSeconds)
	if err != nil {
		return ContainerUsage{}, err
	}
	cu := ContainerUsage{
		Container:             k,
		Window:                w,
		CPUSeconds:            a.CPUSeconds.Value - b.CPUSeconds.Value,
		WorkingSetBytesBefore: b.WorkingSetBytes.Value,
		WorkingSetBytes:       a.WorkingSetBytes.Value,
	}
	cu.Millicores = cu.CPUSeconds / w.Seconds() * 1000
	if b.RSSBytes != nil && a.RSSBytes != nil {
		cu.HasRSS, cu.RSSBytesBefore, cu.RSSBytes = true, b.RSSBytes.Value, a.RSSBytes.Value
	}
	if b.Throttling != nil && a.Throttling != nil {
		if err := throttlingDelta(k, b.Throttling, a.Throttling, &cu); err != nil {
			return ContainerUsage{}, err
		}
	}
	return cu, nil
}

// throttlingDelta sets cu's CFS figures from container k's counters tb and
// ta, or fails with a *CounterResetError when they went backwards.
func throttlingDelta(k ContainerKey, tb, ta *Throttling, cu *ContainerUsage) error {
	if ta.Periods.Value < tb.Periods.Value || ta.ThrottledPeriods.Value < tb.ThrottledPeriods.Value {
		return &CounterResetError{Container: k, Reason: "decreased",
			Before: tb.Periods.Value, After: ta.Periods.Value}
	}
	cu.HasCFS = true
	cu.Periods = ta.Periods.Value - tb.Periods.Value
	cu.ThrottledPeriods = ta.ThrottledPeriods.Value - tb.ThrottledPeriods.Value
	if cu.Periods > 0 {
		cu.ThrottledRatio = cu.ThrottledPeriods / cu.Periods
	}
	if tb.ThrottledSeconds != nil && ta.ThrottledSeconds != nil {
		cu.ThrottledSeconds = ta.ThrottledSeconds.Value - tb.ThrottledSeconds.Value
	}
	cu.LimitCores = ta.LimitCores
	return nil
}

// reset is why container k's counters cannot be differenced from b to a
// (it restarted), or nil.
func reset(k ContainerKey, b, a Container) *CounterResetError {
	switch {
	case !b.StartTime.IsZero() && !a.StartTime.IsZero() && !b.StartTime.Equal(a.StartTime):
		return &CounterResetError{Container: k, Reason: "restarted",
			Before: b.CPUSeconds.Value, After: a.CPUSeconds.Value, StartBefore: b.StartTime, StartAfter: a.StartTime}
	case b.ID != "" && a.ID != "" && b.ID != a.ID:
		return &CounterResetError{Container: k, Reason: "restarted",
			Before: b.CPUSeconds.Value, After: a.CPUSeconds.Value, IDBefore: b.ID, IDAfter: a.ID}
	case a.CPUSeconds.Value < b.CPUSeconds.Value:
		return &CounterResetError{Container: k, Reason: "decreased", Before: b.CPUSeconds.Value, After: a.CPUSeconds.Value}
	}
	return nil
}

func window(what string, b, a Sample) (time.Duration, error) {
	if b.Time.IsZero() || a.Time.IsZero() || !a.Time.After(b.Time) {
		return 0, &WindowError{What: what, Before: b.Time, After: a.Time}
	}
	return a.Time.Sub(b.Time), nil
}

func keyLess(a, b ContainerKey) bool {
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	if a.Pod != b.Pod {
		return a.Pod < b.Pod
	}
	return a.Container < b.Container
}

func sortedKeys(m map[ContainerKey]Container) []ContainerKey {
	ks := make([]ContainerKey, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return keyLess(ks[i], ks[j]) })
	return ks
}

// Flatten is the errors err holds, depth first through errors.Join (any
// error with Unwrap() []error); nil for nil. Delta and the on-node reads
// return joined typed errors that callers sort by kind.
func Flatten(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, Flatten(e)...)
		}
		return out
	}
	return []error{err}
}
