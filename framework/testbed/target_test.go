package testbed

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/validity"
)

func TestCheckEdges(t *testing.T) {
	meshed := []Edge{{Src: "loadgen", Dst: "frontend", Peer: "loadgen", Secured: true, Requests: 120},
		{Src: "frontend", Dst: "backend", Peer: "frontend", Secured: true, Requests: 120}}
	assert.Empty(t, CheckEdges(Meshed, TwoHop, meshed, 100))
	assert.Equal(t, validity.Reasons{
		{Kind: validity.BaselineMeshed, Detail: "baseline is meshed: 120 requests loadgen → frontend went through a proxy (verified peer \"loadgen\")"},
		{Kind: validity.BaselineMeshed, Detail: "baseline is meshed: 120 requests frontend → backend went through a proxy (verified peer \"frontend\")"},
		{Kind: validity.PathNotVerified, Detail: "path not verified: loadgen → frontend served 0 baseline requests, want at least 100"},
		{Kind: validity.PathNotVerified, Detail: "path not verified: frontend → backend served 0 baseline requests, want at least 100"}},
		CheckEdges(Baseline, TwoHop, meshed, 100))
	plain := []Edge{{Src: "loadgen", Dst: "backend", Requests: 50}}
	assert.Empty(t, CheckEdges(Baseline, OneHop, plain, 50))
	assert.Equal(t, validity.Reasons{
		{Kind: validity.MeshNotOn, Detail: "mesh not really on: 50 requests loadgen → backend were not mTLS-verified as loadgen (verified peer \"\")"},
		{Kind: validity.PathNotVerified, Detail: "path not verified: loadgen → backend served 0 meshed requests, want at least 50"}}, CheckEdges(Meshed, OneHop, plain, 50))
	stray := append(plain, Edge{Src: "loadgen", Dst: "frontend", Requests: 7})
	assert.Equal(t, validity.Reasons{{Kind: validity.UnexpectedRoute, Detail: "requests took an unexpected route: loadgen → frontend (7 requests, verified peer \"\")"}}, CheckEdges(Baseline, OneHop, stray, 50))
	// An out-of-mesh loadgen's first hop is plain by design.
	assert.Empty(t, CheckEdges(Meshed, OneHop, plain, 50, Hop{"loadgen", "backend"}))
	spoofed := []Edge{{Src: "loadgen", Dst: "backend", Peer: "frontend", Requests: 50}}
	assert.Contains(t, CheckEdges(Meshed, OneHop, spoofed, 50)[0].Detail, "not mTLS-verified as loadgen (verified peer \"frontend\")")
}

func TestPrintEdges(t *testing.T) {
	var b bytes.Buffer
	PrintEdges(&b, []Edge{{Src: "loadgen", Dst: "backend", Peer: "loadgen", Secured: true, Requests: 3}, {Src: "loadgen", Dst: "backend", Requests: 2}})
	assert.Equal(t, "SRC      DST      SECURED     VERIFIED PEER  REQUESTS\nloadgen  backend  yes (mTLS)  loadgen        3\nloadgen  backend  no          -              2\n", b.String())
	b.Reset()
	PrintEdges(&b, []Edge{{Src: "loadgen", Dst: "backend", Peer: "loadgen", Secured: true, Proto: "HTTP/2.0", Requests: 3}, {Src: "loadgen", Dst: "backend", Requests: 2}})
	assert.Equal(t, "SRC      DST      SECURED     VERIFIED PEER  PROTO     REQUESTS\nloadgen  backend  yes (mTLS)  loadgen        HTTP/2.0  3\nloadgen  backend  no          -              -         2\n", b.String())
	b.Reset()
	PrintEdges(&b, []Edge{{Src: "loadgen", Dst: "backend", Requests: 2000, Connections: 2000}, {Src: "frontend", Dst: "backend", Requests: 2000, Connections: 8}})
	assert.Equal(t, "SRC       DST      SECURED  REQUESTS  CONNECTIONS\nloadgen   backend  no       2000      2000 (1 per request)\nfrontend  backend  no       2000      8 (0.004 per request)\n", b.String())
}

func TestConnectionsPerRequest(t *testing.T) {
	for want, e := range map[string]Edge{
		"-":                       {Requests: 5},
		"3":                       {Connections: 3},
		"1000 (1 per request)":    {Requests: 1000, Connections: 1000},
		"997 (0.997 per request)": {Requests: 1000, Connections: 997},
		"4 (0.004 per request)":   {Requests: 1000, Connections: 4},
	} {
		assert.Equal(t, want, e.ConnectionsPerRequest(), "%+v", e)
	}
}

func TestJudge(t *testing.T) {
	r := &Run{Resources: measure.Window{
		Usage: []measure.Usage{
			{Name: "loadgen", Role: measure.RoleLoadgen, MilliCores: 1850, MaxThreadMilliCores: 400},
			{Name: "sidecar", Role: measure.RoleSidecar, MilliCores: 990, MaxThreadMilliCores: 950},
		},
		NodeUtilisation: map[string]float64{"local": 97},
		Cores:           map[string]int{"local": 2},
		Restarts:        []string{"meshed/backend (pid 7) exited or restarted during the window"},
	}}
	Judge(r, 2000)
	assert.Equal(t, validity.Reasons{
		{Kind: validity.Restart, Detail: "restart during the window: meshed/backend (pid 7) exited or restarted during the window"},
		{Kind: validity.SaturatedLoadgen, Detail: "loadgen saturated: 1850m of its 2000m budget; add loadgen shards or cores"}}, r.Invalid)
	assert.Equal(t, []validity.Kind{validity.Restart, validity.SaturatedLoadgen}, r.InvalidKinds())
	assert.False(t, r.InvalidOnly(validity.Restart))
	assert.Equal(t, validity.Reasons{
		{Kind: validity.NodeSaturated, Detail: "node local CPU at 97% of 2 cores: the machine, not only the mesh, is the ceiling"},
		{Kind: validity.PinnedThread, Detail: "pinned thread: sidecar (sidecar): one thread at 950m of 1000m"}}, r.Warnings)
	assert.False(t, r.Valid())
}

// TestJudgeFault: the recovery is measured on the timeline; a fault that
// failed, did not happen, or was not recovered from within the window
// invalidates the run; one that failed nothing is a warning.
func TestJudgeFault(t *testing.T) {
	start := time.Unix(1000, 0)
	tl := &load.Timeline{Start: start, Bucket: 100 * time.Millisecond,
		OK:         []int64{10, 10, 0, 0, 10, 10, 10, 10},
		Failed:     []int64{0, 0, 7, 3, 0, 0, 0, 0},
		LatencySum: make([]float64, 8), LatencyMax: make([]float64, 8)}
	f := &Fault{Action: Kill, Workload: "backend", Sidecar: true, After: 200 * time.Millisecond}
	newRun := func(tl *load.Timeline) *Run {
		return &Run{Fault: f, Load: &load.Result{Options: load.Options{Duration: 800 * time.Millisecond}, Timeline: tl}}
	}
	run := newRun(tl)
	JudgeFault(run, FaultOutcome{Fired: true, At: start.Add(200 * time.Millisecond)}, nil)
	assert.Empty(t, run.Invalid)
	assert.Empty(t, run.Warnings)
	require.NotNil(t, run.Recovery)
	assert.Equal(t, load.Recovery{At: 200 * time.Millisecond, Failed: 10, PreRate: 100, FirstFailure: 0, FirstSuccess: 200 * time.Millisecond,
		Recovered: 200 * time.Millisecond, SettledRate: 100}, *run.Recovery)

	run = newRun(tl)
	JudgeFault(run, FaultOutcome{Fired: true, Err: errors.New("exec: no sh")}, nil)
	assert.Equal(t, validity.Reasons{{Kind: validity.FaultFailed, Detail: "fault failed: exec: no sh"}}, run.Invalid)
	assert.Nil(t, run.Recovery)

	run = newRun(tl)
	JudgeFault(run, FaultOutcome{}, nil)
	assert.Equal(t, validity.Reasons{{Kind: validity.FaultFailed, Detail: "fault did not happen: kill backend's sidecar after 200ms is not within the 800ms window"}}, run.Invalid)

	run = newRun(nil)
	JudgeFault(run, FaultOutcome{Fired: true, At: start}, nil)
	assert.Equal(t, validity.Reasons{{Kind: validity.FaultFailed, Detail: "fault run without a timeline"}}, run.Invalid)

	down := &load.Timeline{Start: start, Bucket: 100 * time.Millisecond, OK: []int64{10, 10, 0, 0}, Failed: []int64{0, 0, 7, 3},
		LatencySum: make([]float64, 4), LatencyMax: make([]float64, 4)}
	run = newRun(down)
	JudgeFault(run, FaultOutcome{Fired: true, At: start.Add(200 * time.Millisecond)}, nil)
	assert.Equal(t, validity.Reasons{{Kind: validity.FaultNotRecovered, Detail: "no recovery within the window (200ms after the fault); lengthen Duration"}}, run.Invalid)
	assert.True(t, run.InvalidOnly(validity.FaultNotRecovered))
	run = newRun(down)
	JudgeFault(run, FaultOutcome{Fired: true, At: start.Add(200 * time.Millisecond)}, func(s Setting) string { return "the " + s.Name })
	assert.Equal(t, validity.Reasons{{Kind: validity.FaultNotRecovered, Detail: "no recovery within the window (200ms after the fault); lengthen the Duration"}}, run.Invalid)

	// Settled at 70 % of the rate before the fault: recovered against the
	// settled rate, and said; at 30 %, under the floor: not recovered.
	settled := func(ok int64) *load.Timeline {
		return &load.Timeline{Start: start, Bucket: 100 * time.Millisecond,
			OK: []int64{10, 10, 0, 0, ok, ok, ok, ok, ok, 1}, Failed: []int64{0, 0, 7, 3, 0, 0, 0, 0, 0, 0},
			LatencySum: make([]float64, 10), LatencyMax: make([]float64, 10)}
	}
	run = newRun(settled(7))
	JudgeFault(run, FaultOutcome{Fired: true, At: start.Add(200 * time.Millisecond)}, nil)
	assert.Empty(t, run.Invalid)
	assert.Equal(t, load.Recovery{At: 200 * time.Millisecond, Failed: 10, PreRate: 100, FirstFailure: 0, FirstSuccess: 200 * time.Millisecond,
		Recovered: 200 * time.Millisecond, SettledRate: 70}, *run.Recovery)
	assert.Equal(t, "10 failed requests; first failure after 0s, first success after 200ms, recovered (within 10% of 70 req/s, where the load settled, 70% of the 100 before) after 200ms; latency meanwhile mean 0s max 0s",
		run.Recovery.String())
	assert.Equal(t, validity.Reasons{{Kind: validity.FaultSettledLower, Detail: "the load settled at 70% of the 100 req/s before the fault (70 req/s over the window's last third), and recovery is judged against that: a machine that slowed down or a restarted proxy that is slower, which this run cannot tell apart"}}, run.Warnings)
	run = newRun(settled(3))
	JudgeFault(run, FaultOutcome{Fired: true, At: start.Add(200 * time.Millisecond)}, nil)
	assert.Equal(t, validity.Reasons{{Kind: validity.FaultNotRecovered, Detail: "no recovery within the window (800ms after the fault): the load settled at 30% of the 100 req/s before it, under the 50% a slower machine could explain; lengthen Duration"}}, run.Invalid)
	assert.Equal(t, 30.0, run.Recovery.SettledRate)

	calm := &load.Timeline{Start: start, Bucket: 100 * time.Millisecond, OK: []int64{10, 10, 10, 10}, Failed: make([]int64, 4),
		LatencySum: make([]float64, 4), LatencyMax: make([]float64, 4)}
	run = newRun(calm)
	JudgeFault(run, FaultOutcome{Fired: true, At: start.Add(200 * time.Millisecond)}, nil)
	assert.Empty(t, run.Invalid)
	assert.Equal(t, validity.Reasons{{Kind: validity.FaultNoFailures, Detail: "the fault failed no request"}}, run.Warnings)
	assert.True(t, run.Warnings.Has(validity.FaultNoFailures))
}

// TestMeasured: a measurement's window becomes the run's resources, and
// its reasons and warnings follow the run's own.
func TestMeasured(t *testing.T) {
	r := &Run{}
	r.Invalidate(validity.Errors, "errors: %d of %d requests failed", 3, 1000)
	r.Measured(Measured{
		Window:     measure.Window{Elapsed: time.Second, Usage: []measure.Usage{{Name: "sidecar", Role: measure.RoleSidecar, MilliCores: 500}}},
		Invalid:    validity.Reasons{{Kind: validity.Throttled, Detail: "mb-meshed/backend-0/linkerd-proxy (sidecar) was CPU-throttled"}},
		Warnings:   validity.Reasons{{Kind: validity.PlacedApart, Detail: "backend ran on n2"}},
		CPUInvalid: validity.Reasons{{Kind: validity.CPUDiluted, Detail: "CPU diluted: the kubelet's counters span 20s on node n1 (45% under load)"}},
	})
	assert.Equal(t, measure.Window{Elapsed: time.Second, Usage: []measure.Usage{{Name: "sidecar", Role: measure.RoleSidecar, MilliCores: 500}}}, r.Resources)
	assert.Equal(t, validity.Reasons{
		{Kind: validity.Errors, Detail: "errors: 3 of 1000 requests failed"},
		{Kind: validity.Throttled, Detail: "mb-meshed/backend-0/linkerd-proxy (sidecar) was CPU-throttled"},
	}, r.Invalid)
	assert.Equal(t, validity.Reasons{{Kind: validity.PlacedApart, Detail: "backend ran on n2"}}, r.Warnings)
	assert.Equal(t, validity.Reasons{{Kind: validity.CPUDiluted, Detail: "CPU diluted: the kubelet's counters span 20s on node n1 (45% under load)"}}, r.CPUInvalid)
	assert.False(t, r.Valid())
	assert.False(t, r.CPUValid())
}

// TestCPUValid: a run's CPU figures are valid unless it has a CPU reason
// or, read from an older results file, a cpu-diluted warning; its other
// invalid reasons and warnings do not touch them.
func TestCPUValid(t *testing.T) {
	r := &Run{}
	r.Invalidate(validity.Errors, "errors")
	r.Warn(validity.NodeSaturated, "node at 97%%")
	assert.True(t, r.CPUValid())
	assert.Empty(t, r.CPUReasons())

	r.CPUInvalid.Add(validity.CPUDiluted, "CPU diluted: n1")
	assert.False(t, r.CPUValid())
	assert.Equal(t, validity.Reasons{{Kind: validity.CPUDiluted, Detail: "CPU diluted: n1"}}, r.CPUReasons())

	old := &Run{Warnings: validity.Reasons{{Kind: validity.CPUDiluted, Detail: "node n1: the kubelet's counters span 20s"}}}
	assert.False(t, old.CPUValid(), "an older file's cpu-diluted warning")
	assert.True(t, old.Valid())
	assert.Equal(t, validity.Reasons{{Kind: validity.CPUDiluted, Detail: "node n1: the kubelet's counters span 20s"}}, old.CPUReasons())
}

func TestRoundOrderIsABBA(t *testing.T) {
	arms := []Arm{Baseline, Reference, Candidate}
	assert.Equal(t, arms, RoundOrder(arms, 0))
	assert.Equal(t, []Arm{Candidate, Reference, Baseline}, RoundOrder(arms, 1))
	assert.Equal(t, arms, RoundOrder(arms, 2))
	assert.Equal(t, []Arm{Meshed, Baseline}, RoundOrder(Arms, 3))
	assert.Equal(t, []Arm{Baseline, Meshed}, Arms, "the shared list is not reordered")
}

// CPU per 1k requests: the CPU time of the counters' span over the
// window's requests; for counters aligned to the kubelets' refreshes,
// which span more than the window at its load, their rate over the
// window's throughput.
func TestCPUPer1k(t *testing.T) {
	run := &Run{Load: &load.Result{Requests: 4000, Elapsed: 2 * time.Second},
		Resources: measure.Window{Elapsed: 2500 * time.Millisecond}}
	assert.InDelta(t, 125.0, run.CPUPer1k(200), 1e-9, "200m over 2.5 s is 500 CPU-ms, over 4000 requests")
	run.Resources.Aligned, run.Resources.Elapsed = true, 20*time.Second
	assert.InDelta(t, 100.0, run.CPUPer1k(200), 1e-9, "200m at 2000 req/s")
	assert.Zero(t, (&Run{Load: &load.Result{}}).CPUPer1k(200))
}
