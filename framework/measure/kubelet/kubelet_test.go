package kubelet

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func open(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

func parseResource(t *testing.T, name string) Snapshot {
	t.Helper()
	s, err := ParseResource(open(t, name))
	require.NoError(t, err)
	return s
}

func ms(v int64) time.Time { return time.UnixMilli(v).UTC() }

func TestParseResourceKind(t *testing.T) {
	s := parseResource(t, "resource_kind_v1.21.txt")

	assert.Len(t, s.Containers, 70)
	assert.Len(t, s.Pods, 70)
	assert.Equal(t, Sample{Value: 357.35491, Time: ms(1633253809720)}, s.NodeCPUSeconds)
	assert.Equal(t, Sample{Value: 1616273408, Time: ms(1633253809720)}, s.NodeWorkingSetBytes)
	assert.False(t, s.ScrapeError)

	c := s.Containers[ContainerKey{"kube-system", "coredns-558bd4d5db-4dpjz", "coredns"}]
	assert.Equal(t, Sample{Value: 4.710169, Time: ms(1633253812125)}, c.CPUSeconds)
	assert.Equal(t, Sample{Value: 12533760, Time: ms(1633253812125)}, c.WorkingSetBytes)
	assert.True(t, c.StartTime.IsZero(), "this kubelet predates container_start_time_seconds")
	assert.Nil(t, c.Throttling)

	p := s.Pods[PodKey{"kube-system", "coredns-558bd4d5db-4dpjz"}]
	assert.Equal(t, Sample{Value: 4.67812, Time: ms(1633253803935)}, p.CPUSeconds)
	assert.Equal(t, Sample{Value: 12627968, Time: ms(1633253803935)}, p.WorkingSetBytes)
}

func TestParseResourceStable(t *testing.T) {
	s := parseResource(t, "resource_eks_stable.txt")

	assert.Len(t, s.Containers, 12)
	assert.Len(t, s.Pods, 9)
	assert.Equal(t, Sample{Value: 6197.005020909, Time: ms(1750705774670)}, s.NodeCPUSeconds)
	assert.Equal(t, Sample{Value: 1137475584, Time: ms(1750705774670)}, s.NodeWorkingSetBytes)

	c := s.Containers[ContainerKey{"kube-system", "aws-node-7k649", "aws-node"}]
	assert.Equal(t, Sample{Value: 293.769327238, Time: ms(1750705767923)}, c.CPUSeconds)
	assert.Equal(t, Sample{Value: 50237440, Time: ms(1750705767923)}, c.WorkingSetBytes)
	assert.Equal(t, int64(1750607840), c.StartTime.Unix())
}

func TestParseCadvisorThrottling(t *testing.T) {
	cad, err := ParseCadvisor(open(t, "cadvisor_throttling.txt"))
	require.NoError(t, err)

	// The two pod-level series (container="") are not containers.
	require.Len(t, cad, 2)
	mc := cad[ContainerKey{"ccp", "metallb-speaker-m29mf", "metallb-speaker"}]
	assert.Nil(t, mc.RSSBytes, "this payload holds the CFS families only")
	require.NotNil(t, mc.Throttling)
	m := mc.Throttling
	assert.Equal(t, Sample{Value: 10, Time: ms(1616975907597)}, m.Periods)
	assert.Equal(t, Sample{Value: 5, Time: ms(1616976197080)}, m.ThrottledPeriods)
	assert.Nil(t, m.ThrottledSeconds)
	assert.InDelta(t, 0.1, m.LimitCores, 1e-12)

	n := cad[ContainerKey{"lens-metrics", "node-exporter-pmngv", "node-exporter"}].Throttling
	require.NotNil(t, n)
	assert.Equal(t, 20.0, n.Periods.Value)
	assert.Equal(t, 15.0, n.ThrottledPeriods.Value)
	assert.InDelta(t, 0.2, n.LimitCores, 1e-12)
}

// advance returns a copy of s whose every sample is d later, with the CPU
// counters of the named containers increased by add (core-seconds). It
// stands in for the second read of a window: see testdata/README.md.
func advance(s Snapshot, d time.Duration, nodeAdd float64, add map[ContainerKey]float64) Snapshot {
	out := s
	out.NodeCPUSeconds = Sample{Value: s.NodeCPUSeconds.Value + nodeAdd, Time: s.NodeCPUSeconds.Time.Add(d)}
	out.Containers = map[ContainerKey]Container{}
	for k, c := range s.Containers {
		c.CPUSeconds = Sample{Value: c.CPUSeconds.Value + add[k], Time: c.CPUSeconds.Time.Add(d)}
		c.WorkingSetBytes.Time = c.WorkingSetBytes.Time.Add(d)
		out.Containers[k] = c
	}
	return out
}

var (
	coredns = ContainerKey{"kube-system", "coredns-558bd4d5db-4dpjz", "coredns"}
	etcd    = ContainerKey{"kube-system", "etcd-e2e-control-plane", "etcd"}
	sleeper = ContainerKey{"sleeper-1", "sleeper-1-77f658b69-2msf9", "sleeper"}
)

func TestDeltaUsesSampleTimestamps(t *testing.T) {
	before := parseResource(t, "resource_kind_v1.21.txt")
	after := advance(before, 15*time.Second, 30, map[ContainerKey]float64{coredns: 1.5, etcd: 4.5})
	// The reads themselves were minutes apart; that must not matter.
	before.ReadAt = time.Date(2021, 10, 3, 9, 37, 0, 0, time.UTC)
	after.ReadAt = before.ReadAt.Add(5 * time.Minute)

	u, err := Delta(before, after)
	require.NoError(t, err)
	require.Len(t, u.Containers, 70)
	assert.Empty(t, u.Appeared)

	c, ok := u.Container(coredns)
	require.True(t, ok)
	assert.Equal(t, 15*time.Second, c.Window)
	assert.InDelta(t, 1.5, c.CPUSeconds, 1e-9)
	assert.InDelta(t, 100, c.Millicores, 1e-6)
	assert.Equal(t, 12533760.0, c.WorkingSetBytes)
	assert.False(t, c.HasCFS)

	e, _ := u.Container(etcd)
	assert.InDelta(t, 300, e.Millicores, 1e-6)
	s, _ := u.Container(sleeper)
	assert.Equal(t, 0.0, s.Millicores)

	assert.Equal(t, 15*time.Second, u.NodeWindow)
	assert.InDelta(t, 2.0, u.NodeCores, 1e-9)
	pct, err := u.NodeUtilisation(8)
	require.NoError(t, err)
	assert.InDelta(t, 25.0, pct, 1e-9)
	_, err = u.NodeUtilisation(0)
	assert.Error(t, err)
}

func TestDeltaNotRefreshed(t *testing.T) {
	// Two reads the kubelet served from the same stats: no window at all.
	s := parseResource(t, "resource_kind_v1.21.txt")
	u, err := Delta(s, s)
	require.Error(t, err)
	assert.Empty(t, u.Containers)
	var we *WindowError
	require.True(t, errors.As(err, &we))
	assert.Contains(t, err.Error(), "not refreshed")
}

func TestDeltaCounterReset(t *testing.T) {
	before := parseResource(t, "resource_kind_v1.21.txt")
	after := advance(before, 15*time.Second, 30, nil)
	c := after.Containers[coredns]
	c.CPUSeconds.Value = 0.25 // the container restarted and has used 0.25 s since
	after.Containers[coredns] = c
	delete(after.Containers, etcd)

	u, err := Delta(before, after)
	require.Error(t, err)
	// Everything else is still measured.
	assert.Len(t, u.Containers, 68)
	_, ok := u.Container(coredns)
	assert.False(t, ok)

	var resets []*CounterResetError
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var cr *CounterResetError
		require.True(t, errors.As(e, &cr), "unexpected error %v", e)
		resets = append(resets, cr)
	}
	require.Len(t, resets, 2)
	assert.Equal(t, "decreased", resets[0].Reason)
	assert.Equal(t, coredns, resets[0].Container)
	assert.Equal(t, "container kube-system/coredns-558bd4d5db-4dpjz/coredns: container_cpu_usage_seconds_total "+
		"went from 4.710169 to 0.25 (counter reset: restarted during the window); mark the run invalid",
		resets[0].Error())
	assert.Equal(t, "missing", resets[1].Reason)
	assert.Equal(t, etcd, resets[1].Container)
	assert.Contains(t, resets[1].Error(), "missing from the second")
}

func TestDeltaRestartSeenByStartTime(t *testing.T) {
	before := parseResource(t, "resource_eks_stable.txt")
	k := ContainerKey{"kube-system", "aws-node-7k649", "aws-node"}
	after := advance(before, 10*time.Second, 5, map[ContainerKey]float64{k: 2})
	c := after.Containers[k]
	c.StartTime = c.StartTime.Add(time.Hour) // counter grew, but it is a new container
	after.Containers[k] = c

	u, err := Delta(before, after)
	var cr *CounterResetError
	require.True(t, errors.As(err, &cr))
	assert.Equal(t, "restarted", cr.Reason)
	assert.Len(t, u.Containers, 11)
}

func TestDeltaRestartSeenByContainerID(t *testing.T) {
	before := parseResource(t, "resource_eks_stable.txt")
	k := ContainerKey{"kube-system", "aws-node-7k649", "aws-node"}
	after := advance(before, 10*time.Second, 5, map[ContainerKey]float64{k: 2})
	b, a := before.Containers[k], after.Containers[k]
	b.ID, a.ID = "0123456789abcdef", "fedcba9876543210" // a read on the node knows the IDs
	b.StartTime, a.StartTime = time.Time{}, time.Time{}
	before.Containers[k], after.Containers[k] = b, a

	u, err := Delta(before, after)
	var cr *CounterResetError
	require.True(t, errors.As(err, &cr))
	assert.Equal(t, &CounterResetError{Container: k, Reason: "restarted", Before: b.CPUSeconds.Value, After: a.CPUSeconds.Value,
		IDBefore: "0123456789abcdef", IDAfter: "fedcba9876543210"}, cr)
	assert.EqualError(t, cr, "container kube-system/aws-node-7k649/aws-node: its ID changed from 0123456789ab to fedcba987654 "+
		"(restarted during the window); mark the run invalid")
	assert.Len(t, u.Containers, 11)
}

func TestDeltaThrottling(t *testing.T) {
	cad, err := ParseCadvisor(open(t, "cadvisor_throttling.txt"))
	require.NoError(t, err)
	k := ContainerKey{"ccp", "metallb-speaker-m29mf", "metallb-speaker"}
	base := Snapshot{Node: "n", Containers: map[ContainerKey]Container{
		k: {CPUSeconds: Sample{Value: 100, Time: ms(1616975907597)}},
	}}
	before := base.WithCadvisor(cad)

	after := advance(before, 20*time.Second, 0, map[ContainerKey]float64{k: 2})
	a := after.Containers[k]
	t2 := *a.Throttling
	t2.Periods.Value += 200         // 20 s of 100 ms periods
	t2.ThrottledPeriods.Value += 50 // a quarter of them throttled
	a.Throttling = &t2
	after.Containers[k] = a

	u, err := Delta(before, after)
	var we *WindowError
	require.True(t, errors.As(err, &we), "node samples carry no timestamps here: %v", err)
	c, ok := u.Container(k)
	require.True(t, ok)
	assert.True(t, c.HasCFS)
	assert.InDelta(t, 100, c.Millicores, 1e-9)
	assert.Equal(t, 200.0, c.Periods)
	assert.Equal(t, 50.0, c.ThrottledPeriods)
	assert.InDelta(t, 0.25, c.ThrottledRatio, 1e-12)
	assert.InDelta(t, 0.1, c.LimitCores, 1e-12)
}

func TestDeltaAcrossNodes(t *testing.T) {
	_, err := Delta(Snapshot{Node: "a"}, Snapshot{Node: "b"})
	assert.EqualError(t, err, `delta across different nodes: "a" and "b"`)
}

func TestFlatten(t *testing.T) {
	a, b, c := errors.New("a"), errors.New("b"), errors.New("c")
	assert.Nil(t, Flatten(nil))
	assert.Equal(t, []error{a}, Flatten(a))
	assert.Equal(t, []error{a, b, c}, Flatten(errors.Join(a, errors.Join(b, nil, c))))
}
