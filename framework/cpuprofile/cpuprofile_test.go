package cpuprofile_test

import (
	"bytes"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/cpuprofile"
)

// synthetic builds a CPU profile whose samples are stacks of function
// names, leaf first, each worth its CPU nanoseconds.
func synthetic(stacks map[string][]string, cpu map[string]int64) *profile.Profile {
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 10_000_000,
	}
	fns := map[string]*profile.Function{}
	locs := map[string]*profile.Location{}
	for _, key := range []string{"a", "b", "c", "d"} {
		stack, ok := stacks[key]
		if !ok {
			continue
		}
		s := &profile.Sample{Value: []int64{cpu[key] / p.Period, cpu[key]}}
		for _, name := range stack {
			if fns[name] == nil {
				fns[name] = &profile.Function{ID: uint64(len(fns) + 1), Name: name}
				p.Function = append(p.Function, fns[name])
				locs[name] = &profile.Location{ID: uint64(len(locs) + 1), Line: []profile.Line{{Function: fns[name]}}}
				p.Location = append(p.Location, locs[name])
			}
			s.Location = append(s.Location, locs[name])
		}
		p.Sample = append(p.Sample, s)
	}
	return p
}

func reference() *profile.Profile {
	return synthetic(map[string][]string{
		"a": {"syscall.write", "net.(*conn).Write", "main.serve"},
		"b": {"crypto/aes.encrypt", "main.serve"},
	}, map[string]int64{"a": 600_000_000, "b": 400_000_000})
}

func candidate() *profile.Profile {
	return synthetic(map[string][]string{
		"a": {"syscall.write", "net.(*conn).Write", "main.serve"},
		"b": {"crypto/aes.encrypt", "main.serve"},
		"c": {"zapcore.(*jsonEncoder).AppendString", "main.log", "main.serve"},
		"d": {"syscall.write", "main.log", "main.serve"},
	}, map[string]int64{"a": 500_000_000, "b": 200_000_000, "c": 200_000_000, "d": 100_000_000})
}

func TestSharesFlatAndCumulative(t *testing.T) {
	assert.InDeltaMapValues(t, map[string]float64{
		"syscall.write": 0.6, "zapcore.(*jsonEncoder).AppendString": 0.2, "crypto/aes.encrypt": 0.2,
	}, cpuprofile.Shares(candidate(), cpuprofile.Flat), 1e-12)
	assert.InDeltaMapValues(t, map[string]float64{
		"syscall.write": 0.6, "net.(*conn).Write": 0.5, "main.serve": 1, "crypto/aes.encrypt": 0.2,
		"zapcore.(*jsonEncoder).AppendString": 0.2, "main.log": 0.3,
	}, cpuprofile.Shares(candidate(), cpuprofile.Cumulative), 1e-12)
}

func TestDiffFlatSortsByAbsoluteDifference(t *testing.T) {
	rows := cpuprofile.Diff(reference(), candidate(), cpuprofile.Flat, 10)
	want := []cpuprofile.Row{
		{Function: "crypto/aes.encrypt", Reference: 0.4, Candidate: 0.2, Difference: -0.2},
		{Function: "zapcore.(*jsonEncoder).AppendString", Reference: 0, Candidate: 0.2, Difference: 0.2},
		{Function: "syscall.write", Reference: 0.6, Candidate: 0.6, Difference: 0},
	}
	require.Len(t, rows, len(want))
	for i := range want {
		assert.Equal(t, want[i].Function, rows[i].Function, "row %d", i)
		assert.InDelta(t, want[i].Reference, rows[i].Reference, 1e-12, "row %d", i)
		assert.InDelta(t, want[i].Candidate, rows[i].Candidate, 1e-12, "row %d", i)
		assert.InDelta(t, want[i].Difference, rows[i].Difference, 1e-12, "row %d", i)
	}
}

func TestDiffCumulativePointsAtTheNewCaller(t *testing.T) {
	rows := cpuprofile.Diff(reference(), candidate(), cpuprofile.Cumulative, 2)
	require.Len(t, rows, 2)
	assert.Equal(t, "main.log", rows[0].Function)
	assert.InDelta(t, 0.3, rows[0].Difference, 1e-12)
	assert.Equal(t, "crypto/aes.encrypt", rows[1].Function)
	assert.InDelta(t, -0.2, rows[1].Difference, 1e-12)
}

// The candidate served 2000 requests with its 1 s of CPU, the reference
// 2500 with its 1 s: per request the candidate costs 1.25 times the
// reference, all of it in main.log (0.3 of the candidate's CPU, 0.375 of
// the reference's per request), and main.serve moves by as much (1 to
// 1.25), as does the zap encoder under main.log (0 to 0.25), while
// crypto/aes.encrypt does less per request (0.4 to 0.25).
func TestDiffPerRequestAddsUpToTheRegression(t *testing.T) {
	rows := cpuprofile.DiffPerRequest(reference(), candidate(), 2500, 2000, cpuprofile.Cumulative, 4)
	want := map[string]cpuprofile.Row{
		"main.log":                            {Reference: 0, Candidate: 0.375, Difference: 0.375},
		"main.serve":                          {Reference: 1, Candidate: 1.25, Difference: 0.25},
		"zapcore.(*jsonEncoder).AppendString": {Reference: 0, Candidate: 0.25, Difference: 0.25},
		"crypto/aes.encrypt":                  {Reference: 0.4, Candidate: 0.25, Difference: -0.15},
	}
	require.Len(t, rows, len(want))
	assert.Equal(t, "main.log", rows[0].Function, "the largest change first")
	assert.Equal(t, "crypto/aes.encrypt", rows[3].Function, "the smallest change last")
	for _, r := range rows {
		w, ok := want[r.Function]
		require.True(t, ok, r.Function)
		assert.InDelta(t, w.Reference, r.Reference, 1e-12, r.Function)
		assert.InDelta(t, w.Candidate, r.Candidate, 1e-12, r.Function)
		assert.InDelta(t, w.Difference, r.Difference, 1e-12, r.Function)
	}
	assert.Nil(t, cpuprofile.DiffPerRequest(reference(), candidate(), 0, 2000, cpuprofile.Flat, 3))
}

func TestMergeAddsTheSidecarsSamples(t *testing.T) {
	m, err := cpuprofile.Merge([]*profile.Profile{reference(), candidate()})
	require.NoError(t, err)
	assert.InDeltaMapValues(t, map[string]float64{
		"syscall.write": 1.2 / 2, "crypto/aes.encrypt": 0.6 / 2, "zapcore.(*jsonEncoder).AppendString": 0.2 / 2,
	}, cpuprofile.Shares(m, cpuprofile.Flat), 1e-12)
	_, err = cpuprofile.Merge(nil)
	assert.EqualError(t, err, "cpuprofile: merge: no profiles")
}

func TestWriteThenParseKeepsTheShares(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, cpuprofile.Write(&buf, candidate()))
	p, err := cpuprofile.Parse(buf.Bytes())
	require.NoError(t, err)
	assert.InDeltaMapValues(t, cpuprofile.Shares(candidate(), cpuprofile.Flat), cpuprofile.Shares(p, cpuprofile.Flat), 1e-12)
	_, err = cpuprofile.Parse([]byte("not a profile"))
	assert.ErrorContains(t, err, "cpuprofile: parse: ")
}

func TestMarkdownTablesAndNone(t *testing.T) {
	r := &cpuprofile.Report{Points: []cpuprofile.Point{{
		Scenario: "benchmark=UpgradeGate/c=8", Metric: "sidecar CPU per 1k requests", Seconds: 3,
		Reference: cpuprofile.Arm{Spec: "caddy", File: "r.reference.p.pprof", Sidecars: 2, Samples: 300, Requests: 6000},
		Candidate: cpuprofile.Arm{Spec: "caddy+access-log", File: "r.candidate.p.pprof", Sidecars: 2, Samples: 350, Requests: 5600},
		Flat:      []cpuprofile.Row{{Function: "zapcore.x", Reference: 0, Candidate: 0.031, Difference: 0.031}},
		Cumulative: []cpuprofile.Row{{Function: "caddyhttp.(*Server).logRequest", Reference: 0.001, Candidate: 0.152,
			Difference: 0.151}},
	}}}
	var b bytes.Buffer
	require.NoError(t, r.Markdown(&b))
	assert.Equal(t, "\n### Where the CPU went\n\n"+
		"benchmark=UpgradeGate/c=8 failed on sidecar CPU per 1k requests. One extra round there, after the decision and not scored, profiled each arm's sidecars over its 3 s window: "+
		"reference caddy, 2 sidecars, 300 samples, 6000 requests (`r.reference.p.pprof`); candidate caddy+access-log, 2 sidecars, 350 samples, 5600 requests (`r.candidate.p.pprof`). "+
		"Shares are of the reference's sidecar CPU per request: code both run alike keeps its share, and the candidate's shares sum to its CPU per request over the reference's. "+
		"Differences are in percentage points.\n\n"+
		"| function (self) | reference | candidate | difference |\n| --- | ---: | ---: | ---: |\n"+
		"| `zapcore.x` | 0.0 % | 3.1 % | +3.1 pp |\n\n"+
		"| function (with what it calls) | reference | candidate | difference |\n| --- | ---: | ---: | ---: |\n"+
		"| `caddyhttp.(*Server).logRequest` | 0.1 % | 15.2 % | +15.1 pp |\n\n", b.String())

	b.Reset()
	require.NoError(t, (&cpuprofile.Report{None: "no CPU profile: nginx is not a Go program with a pprof endpoint"}).Markdown(&b))
	assert.Equal(t, "\n### Where the CPU went\n\nno CPU profile: nginx is not a Go program with a pprof endpoint.\n", b.String())

	b.Reset()
	var none *cpuprofile.Report
	require.NoError(t, none.Markdown(&b))
	assert.Empty(t, b.String())
}
