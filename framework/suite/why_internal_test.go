package suite

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/cpuprofile"
	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/testbed"
)

// fakeTarget runs nothing: each Run returns, when asked for profiles, one
// synthetic CPU profile per sidecar, the candidate's with an access log.
type fakeTarget struct {
	mesh  string
	specs []testbed.Spec
}

func (f *fakeTarget) Name() string { return "fake" }
func (f *fakeTarget) Environment() testbed.Environment {
	return testbed.Environment{Target: "fake", Mesh: testbed.MeshInfo{Name: f.mesh}}
}
func (f *fakeTarget) Close(context.Context) error { return nil }
func (f *fakeTarget) Run(_ context.Context, s testbed.Spec) (*testbed.Run, error) {
	f.specs = append(f.specs, s)
	run := &testbed.Run{Arm: s.Arm, Load: &load.Result{Requests: 1000}}
	if !s.CPUProfile {
		return run, nil
	}
	for _, name := range []string{"loadgen-sidecar", "backend-sidecar"} {
		leaves := map[string]int64{"crypto/aes.gcmAesEnc": 4, "syscall.Syscall6": 6}
		if s.Arm == testbed.Candidate {
			leaves = map[string]int64{"crypto/aes.gcmAesEnc": 3, "syscall.Syscall6": 5, "go.uber.org/zap/zapcore.(*jsonEncoder).AppendString": 2}
		}
		var buf bytes.Buffer
		if err := cpuprofile.Write(&buf, leafProfile(leaves)); err != nil {
			return nil, err
		}
		run.CPUProfiles = append(run.CPUProfiles, testbed.CPUProfile{Process: string(s.Arm) + "/" + name, Data: buf.Bytes()})
	}
	return run, nil
}

// profilingTarget can profile.
type profilingTarget struct{ fakeTarget }

func (profilingTarget) CanProfile() error { return nil }

// leafProfile is a 3 s CPU profile with samples[fn] 10 ms samples whose
// leaf is fn, called from main.serve.
func leafProfile(samples map[string]int64) *profile.Profile {
	serve := &profile.Function{ID: 1, Name: "main.serve"}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 10_000_000, DurationNanos: int64(3 * time.Second),
		Function: []*profile.Function{serve}, Location: []*profile.Location{{ID: 1, Line: []profile.Line{{Function: serve}}}},
	}
	for _, name := range []string{"crypto/aes.gcmAesEnc", "go.uber.org/zap/zapcore.(*jsonEncoder).AppendString", "syscall.Syscall6"} {
		n, ok := samples[name]
		if !ok {
			continue
		}
		fn := &profile.Function{ID: uint64(len(p.Function) + 1), Name: name}
		loc := &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: fn}}}
		p.Function, p.Location = append(p.Function, fn), append(p.Location, loc)
		p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{loc, p.Location[0]}, Value: []int64{n, n * p.Period}})
	}
	return p
}

// whySuite is a suite gating caddy+access-log against caddy in this run,
// and a point whose sidecar CPU per request is ×cand/400 the reference's.
func whySuite(t *testing.T, cand float64) (*Suite, map[testbed.Arm][]report.Record) {
	t.Helper()
	s := NewWithConfig(&Config{Target: "local", Sidecar: "caddy", Candidate: "caddy+access-log", Duration: 3 * time.Second, Repeats: 3, MaxCount: 3, ResultsDir: t.TempDir()})
	s.gate, s.ctx, s.Log = testGateFixture(t), context.Background(), &bytes.Buffer{}
	s.started = time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)
	runs := map[testbed.Arm][]report.Record{}
	for rep, jitter := range []float64{0, 4, -4} {
		runs[testbed.Reference] = append(runs[testbed.Reference], syntheticRecord(testbed.Reference, rep, figures{sidecarMC: 400 + jitter, appMC: 200, qps: 2000, rssMiB: 60}))
		runs[testbed.Candidate] = append(runs[testbed.Candidate], syntheticRecord(testbed.Candidate, rep, figures{sidecarMC: cand + jitter, appMC: 200, qps: 2000, rssMiB: 60}))
	}
	return s, runs
}

// A point that failed on sidecar CPU gets one unscored round of each arm
// with profiles; each arm's sidecars' profiles are merged into one file
// beside the results, named in the report, and diffed: the candidate's
// access log leads the flat table.
func TestExplainCPUProfilesAFailedPoint(t *testing.T) {
	s, runs := whySuite(t, 600)
	tg := &profilingTarget{fakeTarget{mesh: "sidecar/caddy"}}
	s.explainCPU(&testing.B{}, tg, Scenario{Name: "BenchmarkOneHop", Path: testbed.OneHop}, 4, runs, time.Second)
	require.Len(t, tg.specs, 2)
	for i, arm := range []testbed.Arm{testbed.Reference, testbed.Candidate} {
		assert.Equal(t, arm, tg.specs[i].Arm)
		assert.True(t, tg.specs[i].CPUProfile)
		assert.Equal(t, 4, tg.specs[i].Window.Concurrency)
	}
	assert.Len(t, s.Records(), 0, "the profiled round is not scored")
	require.Len(t, s.why.Points, 1)
	assert.Empty(t, s.why.None)
	pt := s.why.Points[0]
	assert.Equal(t, "benchmark=BenchmarkOneHop/c=4/loop=closed/path=one-hop", pt.Scenario)
	assert.Equal(t, "sidecar CPU per 1k req", pt.Metric)
	assert.Equal(t, 3.0, pt.Seconds)
	assert.Equal(t, cpuprofile.Arm{Spec: "caddy", File: "20261201T230000Z-fake.reference.OneHop_c=4.pprof", Sidecars: 2, Samples: 20, Requests: 1000}, pt.Reference)
	assert.Equal(t, cpuprofile.Arm{Spec: "caddy+access-log", File: "20261201T230000Z-fake.candidate.OneHop_c=4.pprof", Sidecars: 2, Samples: 20, Requests: 1000}, pt.Candidate)
	for a, stacks := range map[cpuprofile.Arm]int{pt.Reference: 2, pt.Candidate: 3} {
		data, err := os.ReadFile(filepath.Join(s.Config.ResultsDir, a.File))
		require.NoError(t, err)
		p, err := cpuprofile.Parse(data)
		require.NoError(t, err)
		assert.Len(t, p.Sample, stacks, "%s: the sidecars' samples merged, stack by stack", a.File)
	}
	want := []cpuprofile.Row{
		{Function: "go.uber.org/zap/zapcore.(*jsonEncoder).AppendString", Candidate: 0.2, Difference: 0.2},
		{Function: "crypto/aes.gcmAesEnc", Reference: 0.4, Candidate: 0.3, Difference: -0.1},
		{Function: "syscall.Syscall6", Reference: 0.6, Candidate: 0.5, Difference: -0.1},
	}
	require.Len(t, pt.Flat, len(want))
	for i, w := range want {
		assert.Equal(t, w.Function, pt.Flat[i].Function)
		assert.InDelta(t, w.Reference, pt.Flat[i].Reference, 1e-12, w.Function)
		assert.InDelta(t, w.Candidate, pt.Flat[i].Candidate, 1e-12, w.Function)
		assert.InDelta(t, w.Difference, pt.Flat[i].Difference, 1e-12, w.Function)
	}
	res := &report.Results{}
	var out bytes.Buffer
	require.Error(t, s.judge(&out, res), "the gate fails")
	require.NotNil(t, res.Why)
	assert.Equal(t, s.why, *res.Why)
	assert.Contains(t, out.String(), "### Where the CPU went\n\nbenchmark=BenchmarkOneHop/c=4/loop=closed/path=one-hop failed on sidecar CPU per 1k req.")
}

// A target that cannot profile says why; a point that did not fail on
// CPU takes no profile and says nothing.
func TestExplainCPUSaysWhyNot(t *testing.T) {
	s, runs := whySuite(t, 600)
	tg := &fakeTarget{mesh: "istio"}
	s.explainCPU(&testing.B{}, tg, Scenario{Name: "BenchmarkOneHop", Path: testbed.OneHop}, 4, runs, time.Second)
	assert.Empty(t, tg.specs)
	assert.Equal(t, cpuprofile.Report{None: "no CPU profile: istio on the fake target is not a Go program with a pprof endpoint"}, s.why)

	s, runs = whySuite(t, 400)
	ptg := &profilingTarget{fakeTarget{mesh: "sidecar/caddy"}}
	s.explainCPU(&testing.B{}, ptg, Scenario{Name: "BenchmarkOneHop", Path: testbed.OneHop}, 4, runs, time.Second)
	assert.Empty(t, ptg.specs)
	assert.Equal(t, cpuprofile.Report{}, s.why)

	stored := storedSuite(t, storedPoint(400, 404, 396))
	stored.ctx, stored.Log = context.Background(), &bytes.Buffer{}
	p := newPointRun(func(int) float64 { return 600 })
	for rep := range 3 {
		p.round(rep)
	}
	stored.explainCPU(&testing.B{}, ptg, Scenario{Name: "BenchmarkOneHop", Path: testbed.OneHop}, 4, p.runs, time.Second)
	assert.Empty(t, ptg.specs)
	assert.Equal(t, cpuprofile.Report{None: "no CPU profile: the reference is a stored run, whose sidecars are not running to be profiled"}, stored.why)
}
