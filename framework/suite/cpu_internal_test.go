package suite

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/gate"
	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/stats"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/validity"
)

// diluted is the CPU reason of a run whose kubelet counters spanned far
// more than its load.
var diluted = validity.New(validity.CPUDiluted, "CPU diluted: the kubelet's counters span 20s on node n1 (45%% under load), under the 90%% needed")

// openRecord is a run of arm in round rep at the open-loop point
// (1000 req/s asked), every request taking latency seconds, the sidecar
// at sidecarMC millicores.
func openRecord(arm testbed.Arm, rep int, sidecarMC, latency float64) report.Record {
	r := syntheticRecord(arm, rep, figures{sidecarMC: sidecarMC, appMC: 200, qps: 1000, rssMiB: 60})
	h := stats.DefaultResolution.NewHistogram()
	for range 1000 {
		h.Record(latency)
	}
	r.Load.Latency = h.Export()
	r.Load.Options.QPS, r.Load.Options.Resolution = 1000, stats.DefaultResolution
	return r
}

// TestGateLeavesOutDilutedCPU: three rounds of a candidate with 3× the
// reference's sidecar CPU and 2× its p99; the candidate's CPU counters of
// round 1 were diluted. The gate decides p99 on all three pairs (fail),
// and sidecar CPU on the two left, which is too few: inconclusive, saying
// why, never a pass and not a fail on a diluted figure.
func TestGateLeavesOutDilutedCPU(t *testing.T) {
	var log bytes.Buffer
	s := sequentialSuite(t, &log)
	var recs []report.Record
	for rep, jitter := range []float64{1, 1.01, 0.99} {
		recs = append(recs, openRecord(testbed.Reference, rep, 400, 0.001), openRecord(testbed.Candidate, rep, 1200*jitter, 0.002*jitter))
	}
	recs[3].CPUInvalid = validity.Reasons{diluted}
	ms := gateMeasurements(s.gate, recs)
	v, err := s.gate.DecideSequential(ms, s.gateSequential("", ms))
	require.NoError(t, err)

	cpu := decisionOf(t, &v, gate.SidecarCPUPer1kReq)
	assert.Equal(t, gate.Inconclusive, cpu.Outcome)
	assert.Equal(t, []float64{400, 400}, cpu.Reference, "round 1 left out")
	assert.Equal(t, "../../fixtures/gates/local.yaml:21: benchmark=BenchmarkOneHop/c=4/loop=open/path=one-hop: inconclusive sidecar CPU per 1k req: "+
		"n=2, and an interval needs at least 3 pairs; 1 pair left out: its CPU figures are not valid (cpu-diluted)", cpu.Reason)
	p99 := decisionOf(t, &v, gate.P99)
	assert.Equal(t, gate.Fail, p99.Outcome, "latency is decided on every pair")
	assert.Equal(t, 3, p99.Interval.N)
	assert.Len(t, decisionOf(t, &v, gate.SidecarRSS).Reference, 3, "memory keeps the pair too")
	assert.Equal(t, gate.Fail, v.Outcome)

	for i := range recs {
		recs[i].CPUInvalid = nil
	}
	ms = gateMeasurements(s.gate, recs)
	v, err = s.gate.DecideSequential(ms, s.gateSequential("", ms))
	require.NoError(t, err)
	assert.Equal(t, gate.Fail, decisionOf(t, &v, gate.SidecarCPUPer1kReq).Outcome, "with every pair valid, the CPU regression fails")
	assert.NotContains(t, decisionOf(t, &v, gate.SidecarCPUPer1kReq).Reason, "left out")
}

// TestStoredReferenceLeavesOutDilutedCPU: against a stored reference, a
// stored repeat and a repeat of this run whose CPU was diluted (or, in the
// stored run, the baseline its ratio divides by) are left out of sidecar
// CPU alone, and the decision says so.
func TestStoredReferenceLeavesOutDilutedCPU(t *testing.T) {
	stored := syntheticRun(testbed.Meshed, append(storedCPU, 400), 1, false)
	run := syntheticRun(testbed.Meshed, append(tripled, 1200), 1, false)
	// The stored run's baseline of repeat 1, and this run's meshed repeat
	// 3 as an older file says it: a warning.
	stored[2].CPUInvalid = validity.Reasons{diluted}
	run[7].Warnings = validity.Reasons{{Kind: validity.CPUDiluted, Detail: "node n1: the kubelet's counters span 20s"}}
	v, _, _, err := judgeSynthetic(t, stored, run)
	require.Error(t, err)
	cpu := decisionOf(t, v, gate.SidecarCPUPer1kReq)
	assert.Equal(t, 3, cpu.Interval.NReference)
	assert.Equal(t, 3, cpu.Interval.NCandidate)
	assert.True(t, strings.HasSuffix(cpu.Reason, "; 1 stored repeat and 1 repeat of this run left out: their CPU figures are not valid (cpu-diluted)"), cpu.Reason)
	assert.Equal(t, gate.Fail, cpu.Outcome, "three valid repeats on each side still fail a tripled CPU")
	thr := decisionOf(t, v, gate.Throughput)
	assert.Equal(t, 4, thr.Interval.NReference, "throughput keeps every repeat")
	assert.NotContains(t, thr.Reason, "left out")
}

// TestBenchstatLineLeavesOutInvalidCPU: a run whose CPU figures are not
// valid reports no CPU unit on its benchstat line; its latency,
// throughput and memory stay. The first such run of the run set is said
// once, the later ones not.
func TestBenchstatLineLeavesOutInvalidCPU(t *testing.T) {
	rec := openRecord(testbed.Meshed, 0, 400, 0.001)
	cpuUnits := []string{"app-mcpu", "sidecar-mcpu", "sidecar-cpu-ms/kreq", "cpu-ms/kreq"}
	got := testing.Benchmark(func(b *testing.B) { reportMetrics(b, rec.Run) }).Extra
	for _, u := range cpuUnits {
		assert.Contains(t, got, u)
	}
	rec.CPUInvalid = validity.Reasons{diluted}
	got = testing.Benchmark(func(b *testing.B) { reportMetrics(b, rec.Run) }).Extra
	for _, u := range cpuUnits {
		assert.NotContains(t, got, u)
	}
	for _, u := range []string{"p50-ms", "p99-ms", "req/s", "errors", "sidecar-rss-MiB"} {
		assert.Contains(t, got, u)
	}

	var log bytes.Buffer
	s := NewWithConfig(&Config{})
	s.Log = &log
	valid := openRecord(testbed.Baseline, 0, 0, 0.001)
	for i, r := range []report.Record{valid, rec, openRecord(testbed.Meshed, 1, 400, 0.001), rec} {
		if i == 2 {
			r.CPUInvalid = validity.Reasons{diluted}
		}
		s.recs = append(s.recs, r)
		s.noteCPU("BenchmarkOneHop/c=4/arm="+string(r.Arm), r)
	}
	assert.Equal(t, "# meshbench: BenchmarkOneHop/c=4/arm=meshed: CPU figures not valid: CPU diluted: the kubelet's counters span 20s on node n1 (45% under load), under the 90% needed; "+
		"this run's CPU is left out of its benchstat line and of the gate, marked † in the tables and undecided for the thresholds, its latency and throughput stand "+
		"(said for the first such run only: the summary counts them all)\n", log.String())
}
