package suite

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/gate"
	"github.com/meshbench/meshbench/framework/labels"
	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/validity"
)

// figures are one synthetic run's: 1000 requests in a 1 s window, so that
// CPU per 1k requests equals millicores.
type figures struct {
	sidecarMC, appMC, qps float64
	rssMiB                int64
}

func syntheticRecord(arm testbed.Arm, rep int, f figures) report.Record {
	usage := []measure.Usage{{Name: "backend", Role: measure.RoleApp, MilliCores: f.appMC}}
	if arm != testbed.Baseline {
		usage = append(usage, measure.Usage{Name: "sidecar", Role: measure.RoleSidecar, MilliCores: f.sidecarMC, LoadRSS: f.rssMiB << 20})
	}
	ls := labels.Set{{Key: labels.Benchmark, Value: "BenchmarkOneHop"}, {Key: labels.Concurrency, Value: "4"}}
	return report.Record{Benchmark: "BenchmarkOneHop", Labels: ls, Concurrency: 4, Repeat: rep, Run: &testbed.Run{
		Arm: arm, Path: testbed.OneHop,
		Load:      &load.Result{Options: load.Options{Concurrency: 4, Duration: time.Second}, Requests: 1000, AchievedQPS: f.qps},
		Resources: measure.Window{Elapsed: time.Second, Usage: usage},
	}}
}

// syntheticRun returns len(sidecarMC) repeats of baseline and meshed
// (unless meshedOnly); the meshed sidecar's CPU is sidecarMC[i] in repeat i, and
// every CPU figure is scaled by slow (a slower machine), every rate
// divided by it.
func syntheticRun(meshedArm testbed.Arm, sidecarMC []float64, slow float64, meshedOnly bool) []report.Record {
	var recs []report.Record
	for i, mc := range sidecarMC {
		if !meshedOnly {
			recs = append(recs, syntheticRecord(testbed.Baseline, i, figures{appMC: 200 * slow, qps: 10000 / slow}))
		}
		recs = append(recs, syntheticRecord(meshedArm, i, figures{sidecarMC: mc * slow, appMC: 200 * slow, qps: []float64{2000, 2010, 1990, 2005}[i%4] / slow, rssMiB: 60}))
	}
	return recs
}

func testGateFixture(t *testing.T) *gate.Gate {
	t.Helper()
	g, err := gate.Load("../../fixtures/gates/local.yaml")
	require.NoError(t, err)
	return g
}

// judgeSynthetic gates this run's records against the stored ones as
// judgeStored does at the end of a run, and returns the verdict, what was
// printed and the results' record of the reference.
func judgeSynthetic(t *testing.T, stored, run []report.Record) (*gate.Verdict, string, *report.StoredReference, error) {
	t.Helper()
	return judgeSuite(storedSuite(t, stored), run)
}

// judgeSuite gates the records run of s as judge does at the end of a run.
func judgeSuite(s *Suite, run []report.Record) (*gate.Verdict, string, *report.StoredReference, error) {
	res := &report.Results{Schema: report.Schema, Settings: s.Config, Environment: s.ref.results.Environment, Records: run}
	var out bytes.Buffer
	err := s.judge(&out, res)
	return s.gateVerdict, out.String(), res.Reference, err
}

// storedSuite is a Suite gated against a stored run of the records stored,
// as loadReference leaves it: nothing is measured.
func storedSuite(t *testing.T, stored []report.Record) *Suite {
	t.Helper()
	cfg := &Config{Target: "local", Concurrency: []int{4}, Duration: time.Second, Protocol: load.HTTP1, ResponseSize: 128, Placement: "in-mesh", Loadgens: 1}
	env := testbed.Environment{Target: "local", Cores: 2, Nodes: 1, CPUModel: "Intel(R) Xeon(R) Processor", Mesh: testbed.MeshInfo{Name: "sidecar/caddy", Version: "v2.11.9"}}
	started := time.Date(2026, 11, 30, 17, 12, 26, 0, time.UTC)
	ref := &report.Results{Schema: report.Schema, Started: started, Settings: cfg, Environment: env, Records: stored}
	s := NewWithConfig(cfg)
	s.gate = testGateFixture(t)
	s.ref = &storedRef{file: "results/20261130T171226Z-local.json", results: ref, sha256: strings.Repeat("ab", 32), arm: referenceArm(stored)}
	return s
}

var (
	storedCPU = []float64{400, 410, 390}
	// tripled is the same spread at three times the sidecar CPU: the log
	// ratio is ln 3 exactly, and each run's log values have variance
	// 0.00062531 (of ln 2, ln 2.05, ln 1.95 as overhead ratios over the
	// baseline app's 200), so Welch's ν = 4, t = 2.776445, se = 0.020418,
	// h = 0.056689: 3 (2.834664–3.174980).
	tripled = []float64{1200, 1230, 1170}
)

func decisionOf(t *testing.T, v *gate.Verdict, m gate.Metric) gate.Decision {
	t.Helper()
	for _, d := range v.Decisions {
		if d.Metric == m {
			return d
		}
	}
	require.Failf(t, "no decision", "%s", m)
	return gate.Decision{}
}

func TestStoredReferenceFailsAGrossRegression(t *testing.T) {
	v, out, ref, err := judgeSynthetic(t, syntheticRun(testbed.Meshed, storedCPU, 1, false), syntheticRun(testbed.Meshed, tripled, 1, false))
	require.NotNil(t, v)
	assert.Equal(t, gate.Fail, v.Outcome)
	cpu := decisionOf(t, v, gate.SidecarCPUPer1kReq)
	assert.Equal(t, "../../fixtures/gates/local.yaml:21: benchmark=BenchmarkOneHop/c=4/loop=closed/path=one-hop: too high sidecar CPU per 1k req: candidate/reference 3.00 (2.81–3.20, n=3 unpaired) expected ≤ 1.10", cpu.Reason)
	var d *gate.Decision
	require.True(t, errors.As(err, &d), "the failing decision travels in the error: %v", err)
	assert.Equal(t, gate.SidecarCPUPer1kReq, d.Metric)
	assert.Equal(t, gate.Pass, decisionOf(t, v, gate.Throughput).Outcome, "the same throughput ratios")
	assert.Equal(t, &report.StoredReference{File: "results/20261130T171226Z-local.json", RunID: "20261130T171226Z-local", SHA256: strings.Repeat("ab", 32),
		Arm: testbed.Meshed, Overhead: []string{"BenchmarkOneHop/c=4/path=one-hop"}}, ref)
	assert.Contains(t, out, "# meshbench: gate: ../../fixtures/gates/local.yaml, this run's sidecar/caddy v2.11.9 against the stored run 20261130T171226Z-local (results/20261130T171226Z-local.json, sha256 abababababab, its meshed arm): fail\n")
	assert.Contains(t, out, "# meshbench: gate: compared as overhead ratios (each run's meshed arm over its own baseline arm of the same repeat")
	assert.Contains(t, out, "unpaired: the stored repeats were not measured back to back with this run's, so each run's repeats are an independent sample, judged on Welch's interval of the log values\n")
	assert.NotContains(t, out, "repeats per point")
	assert.NotContains(t, out, "-max-count", "one look at 95 %")
}

// More repeats in this run than in the stored one (-count, or rounds
// -max-count added): nothing pairs repeats across the runs, so all of each
// run's are used, and the summary says so.
func TestStoredReferenceUsesAllRepeatsOfEachRun(t *testing.T) {
	v, out, _, err := judgeSynthetic(t, syntheticRun(testbed.Meshed, storedCPU, 1, false), syntheticRun(testbed.Meshed, append(storedCPU, 405), 1, false))
	require.NoError(t, err)
	for _, d := range v.Decisions {
		assert.Equal(t, 3, d.Interval.NReference, d.Reason)
		assert.Equal(t, 4, d.Interval.NCandidate, d.Reason)
		assert.Contains(t, d.Reason, "n=3 stored, 4 this run, unpaired")
	}
	assert.Contains(t, out, "# meshbench: gate: the stored run has 3 repeats per point and this run 4: all of each are used\n")
}

func TestStoredReferenceIdenticalRunDoesNotFail(t *testing.T) {
	v, _, _, err := judgeSynthetic(t, syntheticRun(testbed.Meshed, storedCPU, 1, false), syntheticRun(testbed.Meshed, []float64{405, 395, 400}, 1, false))
	require.NotNil(t, v)
	require.NoError(t, err)
	assert.Equal(t, gate.Pass, v.Outcome)
	for _, d := range v.Decisions {
		assert.True(t, d.Interval.Unpaired, d.Reason)
	}
	assert.Len(t, v.Decisions, 3, "CPU, throughput and RSS at maximum rate")
}

// A machine 30 % slower costs 30 % more CPU per request in both arms, and
// loses 30 % of the rate in both: overhead ratios cancel it, where a
// direct comparison would call it a regression.
func TestStoredReferenceOverheadRatiosCancelASlowerMachine(t *testing.T) {
	stored := syntheticRun(testbed.Meshed, storedCPU, 1, false)
	v, _, _, err := judgeSynthetic(t, stored, syntheticRun(testbed.Meshed, storedCPU, 1.3, false))
	require.NoError(t, err)
	assert.Equal(t, gate.Pass, v.Outcome)

	v, _, ref, _ := judgeSynthetic(t, syntheticRun(testbed.Meshed, storedCPU, 1, true), syntheticRun(testbed.Meshed, storedCPU, 1.3, true))
	assert.Equal(t, []string{"BenchmarkOneHop/c=4/path=one-hop"}, ref.Direct, "no baseline arm: compared directly")
	assert.Empty(t, ref.Overhead)
	assert.Equal(t, gate.Fail, decisionOf(t, v, gate.SidecarCPUPer1kReq).Outcome)
	assert.Equal(t, gate.Fail, decisionOf(t, v, gate.Throughput).Outcome)
}

// A stored upgrade gate's candidate arm stands for the reference.
func TestStoredReferenceOfAnUpgradeGateIsItsCandidate(t *testing.T) {
	stored := append(syntheticRun(testbed.Reference, tripled, 1, true), syntheticRun(testbed.Candidate, storedCPU, 1, false)...)
	assert.Equal(t, testbed.Candidate, referenceArm(stored))
	assert.Equal(t, testbed.Meshed, referenceArm(syntheticRun(testbed.Meshed, storedCPU, 1, false)))
	assert.Equal(t, testbed.Arm(""), referenceArm(syntheticRun(testbed.Baseline, storedCPU, 1, true)))
	v, _, ref, err := judgeSynthetic(t, stored, syntheticRun(testbed.Meshed, storedCPU, 1, false))
	require.NoError(t, err)
	assert.Equal(t, gate.Pass, v.Outcome)
	assert.Equal(t, testbed.Candidate, ref.Arm)
}

// Scenarios are checked once this run has records, before deciding: a
// scenario only one run has refuses the comparison, naming the field, and
// the run exits with gate.ExitError.
func TestStoredReferenceRefusesAnotherScenarioSet(t *testing.T) {
	run := syntheticRun(testbed.Meshed, storedCPU, 1, false)
	for i := range run {
		run[i].Labels = run[i].Labels.With(labels.Payload, "16KiB")
	}
	v, _, ref, err := judgeSynthetic(t, syntheticRun(testbed.Meshed, storedCPU, 1, false), run)
	assert.Nil(t, v)
	assert.EqualError(t, err, "-reference: results/20261130T171226Z-local.json: not comparable with this run:\n"+
		"scenarios differ: only the reference has BenchmarkOneHop/c=4/path=one-hop; only this run has BenchmarkOneHop/c=4/payload=16KiB/path=one-hop")
	var ie *gate.IncomparableError
	assert.True(t, errors.As(err, &ie))
	assert.Equal(t, "results/20261130T171226Z-local.json", ref.File, "the results still say what they were compared with")
}

// A gated scenario with no valid repeat in this run is refused, no
// verdict (exit code 2), rather than dropped from a verdict that would
// then pass on the scenarios left.
func TestStoredReferenceRefusesAScenarioWithNoValidRepeat(t *testing.T) {
	run := syntheticRun(testbed.Meshed, storedCPU, 1, false)
	for i := range run {
		if run[i].Arm == testbed.Meshed {
			run[i].Run.Invalid = validity.Reasons{validity.New(validity.Errors, "errors: 40 of 100 requests failed")}
		}
	}
	s := storedSuite(t, syntheticRun(testbed.Meshed, storedCPU, 1, false))
	v, _, _, err := judgeSuite(s, run)
	assert.Nil(t, v)
	assert.EqualError(t, err, "gate ../../fixtures/gates/local.yaml: -reference results/20261130T171226Z-local.json: no verdict: "+
		"BenchmarkOneHop/c=4/path=one-hop has no valid repeat in one run or the other to judge, and a gated scenario is not dropped; see the runs' invalid reasons")
	var re *refusedError
	assert.ErrorAs(t, err, &re, "a refusal: exit code 2")
	assert.Equal(t, err, s.refusal)
}
