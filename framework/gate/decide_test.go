package gate

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testFixture = `target: local
rules:
  - metric: sidecarCPUPer1kReq
    match: {}
    maxIncreasePct: 10
  - metric: throughput
    match: {loop: closed}
    maxDecreasePct: 5
`

func testGate(t *testing.T) *Gate {
	t.Helper()
	g, err := Parse("g.yaml", []byte(testFixture))
	require.NoError(t, err)
	return g
}

// logPairs returns paired repeats whose ln(candidate/reference) are
// exactly x: reference 100 (or 40 on odd pairs, since only ratios count)
// and candidate reference·e^x.
func logPairs(x ...float64) (ref, cand []float64) {
	for i, v := range x {
		r := 100.0
		if i%2 == 1 {
			r = 40
		}
		ref = append(ref, r)
		cand = append(cand, r*math.Exp(v))
	}
	return ref, cand
}

func measure(l Labels, m Metric, x ...float64) Measurement {
	ref, cand := logPairs(x...)
	return Measurement{Scenario: l, Metric: m, Reference: ref, Candidate: cand}
}

var (
	closed8 = Labels{"path": "one-hop", "c": "8", "loop": "closed"}
	open8   = Labels{"path": "one-hop", "c": "8", "loop": "open"}
	// Hand-computed with t(0.975, 5) = 2.570582, √6 = 2.449490:
	//   upBy42:  x = 0.1…0.6, mean 0.35, sd 0.187083, h 0.196331
	//            → 1.419068 (1.166104–1.726906)
	//   same:    mean 0, sd 0.028284, h 0.029683 → 1 (0.970754–1.030127)
	//   upBy20:  mean 0.18, sd 0.113137, h 0.118730
	//            → 1.197217 (1.063186–1.348146)
	//   downBy10: mean -0.1, sd 0.056569, h 0.059365
	//            → 0.904837 (0.852685–0.960180)
	upBy42   = []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6}
	same     = []float64{-0.04, -0.02, 0, 0.02, 0.04, 0}
	upBy20   = []float64{0.02, 0.10, 0.18, 0.26, 0.34, 0.18}
	downBy10 = []float64{-0.02, -0.06, -0.10, -0.14, -0.18, -0.10}
)

func negate(x []float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = -v
	}
	return out
}

func TestDecideEachOutcome(t *testing.T) {
	g := testGate(t)
	for _, tc := range []struct {
		name        string
		m           Measurement
		outcome     Outcome
		ratio       [3]float64 // ratio, lo, hi
		pairsNeeded int
		reason      string
	}{
		{"cpu fail", measure(closed8, SidecarCPUPer1kReq, upBy42...), Fail, [3]float64{1.419068, 1.166104, 1.726906}, 0,
			"g.yaml:3: c=8/loop=closed/path=one-hop: too high sidecar CPU per 1k req: candidate/reference 1.42 (1.17–1.73, n=6) expected ≤ 1.10"},
		{"cpu pass", measure(closed8, SidecarCPUPer1kReq, same...), Pass, [3]float64{1, 0.970754, 1.030127}, 0,
			"g.yaml:3: c=8/loop=closed/path=one-hop: sidecar CPU per 1k req within limit: candidate/reference 1.00 (0.97–1.03, n=6) expected ≤ 1.10"},
		// Needs t(N-1)/√N < (0.18 - ln 1.1)/0.113137 = 0.748559:
		// N=9: 2.306004/3 = 0.768668 (no); N=10: 2.262157/√10 = 0.715357 (yes).
		{"cpu inconclusive", measure(closed8, SidecarCPUPer1kReq, upBy20...), Inconclusive, [3]float64{1.197217, 1.063186, 1.348146}, 4,
			"g.yaml:3: c=8/loop=closed/path=one-hop: inconclusive sidecar CPU per 1k req: candidate/reference 1.20 (1.06–1.35, n=6) straddles ≤ 1.10; about 4 more pairs would settle it if the spread holds"},
		{"throughput fail", measure(closed8, Throughput, negate(upBy42)...), Fail, [3]float64{0.704688, 0.579070, 0.857556}, 0,
			"g.yaml:6: c=8/loop=closed/path=one-hop: too low max throughput: candidate/reference 0.70 (0.58–0.86, n=6) expected ≥ 0.95"},
		{"throughput pass", measure(closed8, Throughput, same...), Pass, [3]float64{1, 0.970754, 1.030127}, 0,
			"g.yaml:6: c=8/loop=closed/path=one-hop: max throughput within limit: candidate/reference 1.00 (0.97–1.03, n=6) expected ≥ 0.95"},
		// Needs t(N-1)/√N < (ln 0.95 + 0.1)/0.056569 = 0.861016:
		// N=7: 2.446912/√7 = 0.924846 (no); N=8: 2.364624/√8 = 0.836020 (yes).
		{"throughput inconclusive", measure(closed8, Throughput, downBy10...), Inconclusive, [3]float64{0.904837, 0.852685, 0.960180}, 2,
			"g.yaml:6: c=8/loop=closed/path=one-hop: inconclusive max throughput: candidate/reference 0.90 (0.85–0.96, n=6) straddles ≥ 0.95; about 2 more pairs would settle it if the spread holds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// closed8 gates both metrics: the other one passes.
			other := measure(closed8, Throughput, same...)
			if tc.m.Metric == Throughput {
				other = measure(closed8, SidecarCPUPer1kReq, same...)
			}
			v, err := g.Decide([]Measurement{tc.m, other})
			require.NoError(t, err)
			require.Len(t, v.Decisions, 2)
			d := v.Decisions[0]
			assert.Equal(t, Pass, v.Decisions[1].Outcome)
			assert.Equal(t, tc.outcome, d.Outcome)
			assert.Equal(t, tc.outcome, v.Outcome)
			assert.InDelta(t, tc.ratio[0], d.Interval.Ratio, 1e-6)
			assert.InDelta(t, tc.ratio[1], d.Interval.Lo, 1e-6)
			assert.InDelta(t, tc.ratio[2], d.Interval.Hi, 1e-6)
			assert.Equal(t, 6, d.Interval.N)
			assert.Equal(t, tc.pairsNeeded, d.PairsNeeded)
			assert.Equal(t, tc.reason, d.Reason)
			assert.Equal(t, tc.reason, d.Error())
		})
	}
}

func TestDecideTooFewPairsAndALimitItCannotLeave(t *testing.T) {
	g := testGate(t)
	v, err := g.Decide([]Measurement{measure(open8, SidecarCPUPer1kReq, 0.5)})
	require.NoError(t, err)
	d := v.Decisions[0]
	assert.Equal(t, Inconclusive, d.Outcome)
	assert.Equal(t, 2, d.PairsNeeded)
	assert.Equal(t, "g.yaml:3: c=8/loop=open/path=one-hop: inconclusive sidecar CPU per 1k req: n=1, and an interval needs at least 3 pairs", d.Reason)

	// Two pairs that agree far past the limit (×1.65 and ×1.66) make a
	// narrow interval on one degree of freedom; the gate wants a third.
	v, err = g.Decide([]Measurement{measure(open8, SidecarCPUPer1kReq, 0.5, 0.51)})
	require.NoError(t, err)
	d = v.Decisions[0]
	assert.Equal(t, Inconclusive, d.Outcome)
	assert.Equal(t, 1, d.PairsNeeded)
	assert.Equal(t, "g.yaml:3: c=8/loop=open/path=one-hop: inconclusive sidecar CPU per 1k req: n=2, and an interval needs at least 3 pairs", d.Reason)

	// Ratios around 1.10 itself: no number of pairs moves the interval off
	// it. sd = √(6·0.05²/5) = 0.054772, h = 2.570582·0.054772/√6 = 0.057480,
	// 1.1·e^∓h = 1.038555–1.165080.
	l := math.Log(1.1)
	v, err = g.Decide([]Measurement{measure(open8, SidecarCPUPer1kReq, l-0.05, l+0.05, l-0.05, l+0.05, l-0.05, l+0.05)})
	require.NoError(t, err)
	d = v.Decisions[0]
	assert.Equal(t, Inconclusive, d.Outcome)
	assert.Equal(t, -1, d.PairsNeeded)
	assert.Equal(t, "g.yaml:3: c=8/loop=open/path=one-hop: inconclusive sidecar CPU per 1k req: candidate/reference 1.10 (1.04–1.17, n=6) straddles ≤ 1.10; more than 1000 pairs would be needed: the ratio sits on the limit", d.Reason)
}

func TestVerdictIsTheWorstDecision(t *testing.T) {
	g := testGate(t)
	pass := measure(closed8, SidecarCPUPer1kReq, same...)
	inconclusive := measure(closed8, Throughput, downBy10...)
	fail := measure(open8, SidecarCPUPer1kReq, upBy42...)

	v, err := g.Decide([]Measurement{pass, measure(closed8, Throughput, same...)})
	require.NoError(t, err)
	assert.Equal(t, Pass, v.Outcome)
	assert.Equal(t, 0, v.ExitCode())
	assert.NoError(t, v.Err())
	assert.Equal(t, Confidence, v.Confidence)

	v, err = g.Decide([]Measurement{pass, inconclusive})
	require.NoError(t, err)
	assert.Equal(t, Inconclusive, v.Outcome)
	assert.Equal(t, 3, v.ExitCode())

	// The open-loop scenario gates CPU only: its throughput is not judged.
	v, err = g.Decide([]Measurement{pass, inconclusive, fail, measure(open8, Throughput, upBy42...)})
	require.NoError(t, err)
	assert.Equal(t, Fail, v.Outcome)
	assert.Equal(t, 1, v.ExitCode())
	require.Len(t, v.Decisions, 3)
	assert.Equal(t, []Outcome{Pass, Inconclusive, Fail}, []Outcome{v.Decisions[0].Outcome, v.Decisions[1].Outcome, v.Decisions[2].Outcome})
	err = v.Err()
	var d *Decision
	require.True(t, errors.As(err, &d))
	assert.Equal(t, Inconclusive, d.Outcome, "the first non-pass decision")
	assert.Equal(t, "g.yaml:6: c=8/loop=closed/path=one-hop: inconclusive max throughput: candidate/reference 0.90 (0.85–0.96, n=6) straddles ≥ 0.95; about 2 more pairs would settle it if the spread holds\n"+
		"g.yaml:3: c=8/loop=open/path=one-hop: too high sidecar CPU per 1k req: candidate/reference 1.42 (1.17–1.73, n=6) expected ≤ 1.10", err.Error())
}

func TestExitCodes(t *testing.T) {
	assert.Equal(t, []int{0, 3, 1, 2}, []int{Pass.ExitCode(), Inconclusive.ExitCode(), Fail.ExitCode(), Outcome(7).ExitCode()})
	assert.Equal(t, []string{"pass", "inconclusive", "fail", "Outcome(7)"}, []string{Pass.String(), Inconclusive.String(), Fail.String(), Outcome(7).String()})
}

func TestDecideRejectsWhatItCannotJudge(t *testing.T) {
	g := testGate(t)
	cpu := measure(closed8, SidecarCPUPer1kReq, same...)
	tput := measure(closed8, Throughput, same...)
	for _, tc := range []struct {
		name string
		ms   []Measurement
		want string
	}{
		{"unknown metric", []Measurement{cpu, tput, {Scenario: closed8, Metric: "p98"}}, `gate: c=8/loop=closed/path=one-hop: unknown metric "p98"`},
		{"twice", []Measurement{cpu, tput, cpu}, "gate: c=8/loop=closed/path=one-hop: sidecarCPUPer1kReq measured twice"},
		{"gated but missing", []Measurement{cpu}, "gate: c=8/loop=closed/path=one-hop: throughput is gated by g.yaml:6 but was not measured"},
		{"unpaired", []Measurement{cpu, {Scenario: closed8, Metric: Throughput, Reference: []float64{1, 2}, Candidate: []float64{1}}},
			"gate: c=8/loop=closed/path=one-hop: throughput: 2 reference repeats but 1 candidate: repeats must come in pairs"},
		{"not gated, and a gated one missing", []Measurement{measure(open8, P99, same...)}, "gate: c=8/loop=open/path=one-hop: sidecarCPUPer1kReq is gated by g.yaml:3 but was not measured"},
		{"nothing", nil, "g.yaml: no measurement is gated by any rule"},
	} {
		_, err := g.Decide(tc.ms)
		assert.EqualError(t, err, tc.want, tc.name)
	}
}

func TestDecimalsWidenNearTheLimit(t *testing.T) {
	assert.Equal(t, 2, decimals(1.063, 1.348, 1.10))
	assert.Equal(t, 3, decimals(1.041, 1.1049, 1.10), "1.10 would hide that 1.1049 is above 1.10")
	assert.Equal(t, 3, decimals(1.0951, 1.2, 1.10), "1.10 would hide that 1.0951 is below 1.10")
	assert.Equal(t, 2, decimals(1.10, 1.2, 1.10), "an end exactly on the limit prints as the limit")
	assert.Equal(t, 4, decimals(1.09999, 1.2, 1.10))
}

// unpaired returns repeats of two runs measured at different times:
// reference 100·e^a[i], candidate 100·e^b[i], matched by index only.
func unpaired(l Labels, m Metric, a, b []float64) Measurement {
	ref, cand := make([]float64, len(a)), make([]float64, len(b))
	for i := range a {
		ref[i] = 100 * math.Exp(a[i])
	}
	for i := range b {
		cand[i] = 100 * math.Exp(b[i])
	}
	return Measurement{Scenario: l, Metric: m, Reference: ref, Candidate: cand, Unpaired: true}
}

// A stored reference's repeats are judged with Welch's interval on the log
// values, and the message says they were unpaired.
func TestDecideUnpairedRepeats(t *testing.T) {
	g := testGate(t)
	flat := []float64{0, 0.02, -0.02, 0.01, -0.01, 0}
	for _, tc := range []struct {
		name    string
		a, b    []float64
		outcome Outcome
		reason  string
		needed  int
	}{
		// ln values 0, .1, .2 against .5, .6, .7: 1.648721 (1.314300–2.068235),
		// ν = 4 (see stats.TestUnpairedLogRatio).
		{"a gross regression fails", []float64{0, 0.1, 0.2}, []float64{0.5, 0.6, 0.7}, Fail,
			"g.yaml:3: c=8/loop=open/path=one-hop: too high sidecar CPU per 1k req: candidate/reference 1.65 (1.31–2.07, n=3 unpaired) expected ≤ 1.10", 0},
		// Identical samples: var 0.0002 each, se = √(0.0004/6) = 0.008165,
		// ν = 10, t = 2.228139, h = 0.018193: 1 (0.981971–1.018360).
		{"identical runs pass", flat, flat, Pass,
			"g.yaml:3: c=8/loop=open/path=one-hop: sidecar CPU per 1k req within limit: candidate/reference 1.00 (0.98–1.02, n=6 unpaired) expected ≤ 1.10", 0},
		// e^0.05 = 1.051271 (0.838 to 1.319 with h = 0.226696) straddles 1.10,
		// 0.045310 from ln 1.1; the stored reference's own half-width,
		// t(2)·√(0.01/3) = 0.248414, is more than that, and no number of
		// this run's repeats up to 1000 brings Welch's below it (it is
		// 0.194616 at its lowest, N = 6; see
		// stats.TestCandidateRepeatsToResolveAgainstAWideReference).
		{"a stored reference too spread for the limit", []float64{0, 0.1, 0.2}, []float64{0.05, 0.15, 0.25}, Inconclusive,
			"g.yaml:3: c=8/loop=open/path=one-hop: inconclusive sidecar CPU per 1k req: candidate/reference 1.05 (0.84–1.32, n=3 unpaired) straddles ≤ 1.10; " +
				"more repeats of this run cannot settle it: the stored reference's own spread at n=3 is wider than the ratio's distance from the limit; rerun the reference with a higher -count", -1},
		// 6 stored repeats (log variance 0.0002) against 3 of this run
		// (0.01), 0.05 above ln 1.1: e^(ln 1.1 + 0.05) = 1.156403, h =
		// 0.245007 at ν = 2.040118 (t = 4.222580): 0.905–1.477. This run's repeats
		// alone clear 0.05 first at N = 19 (stats.TestCandidateRepeatsToResolve),
		// so 16 more.
		{"a ratio near the limit is inconclusive", flat, []float64{math.Log(1.1) - 0.05, math.Log(1.1) + 0.05, math.Log(1.1) + 0.15}, Inconclusive,
			"g.yaml:3: c=8/loop=open/path=one-hop: inconclusive sidecar CPU per 1k req: candidate/reference 1.16 (0.91–1.48, n=6 stored, 3 this run, unpaired) straddles ≤ 1.10; " +
				"about 16 more repeats of this run would settle it if the spread holds", 16},
		{"one stored repeat", flat[:1], flat, Inconclusive,
			"g.yaml:3: c=8/loop=open/path=one-hop: inconclusive sidecar CPU per 1k req: the stored reference has n=1, and an interval needs at least 3 repeats in each run; " +
				"more repeats of this run cannot settle it: rerun the reference with a higher -count", -1},
		{"one repeat of this run", flat, flat[:1], Inconclusive,
			"g.yaml:3: c=8/loop=open/path=one-hop: inconclusive sidecar CPU per 1k req: this run has n=1, and an interval needs at least 3 repeats in each run", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := g.Decide([]Measurement{unpaired(open8, SidecarCPUPer1kReq, tc.a, tc.b)})
			require.NoError(t, err)
			require.Len(t, v.Decisions, 1)
			d := v.Decisions[0]
			assert.Equal(t, tc.outcome, d.Outcome)
			assert.Equal(t, tc.reason, d.Reason)
			assert.Equal(t, tc.needed, d.PairsNeeded)
			assert.Equal(t, strings.Contains(tc.reason, "rerun the reference"), d.ReferenceTooFew)
			if len(tc.a) > 1 && len(tc.b) > 1 {
				assert.True(t, d.Interval.Unpaired)
			}
		})
	}
}

// TestDecideWithRunSD: a rule's runSDPct widens the interval for an
// offset between the arms that lasts a whole run, which pairs cannot
// average away. Three pairs at ln ratios 0.110, 0.112, 0.111 (mean 0.111,
// sd 0.001): alone, h = 4.302653·0.001/√3 = 0.002484 and the low end
// e^0.108516 = 1.114623 fails ≤ 1.10; with runSDPct 1, h =
// 4.302653·√(0.001²/3 + 0.01²) = 0.043098, the low end e^0.067902 =
// 1.070260 holds the limit, and no number of pairs could clear it:
// 1.96·0.01 = 0.0196 is more than the ratio's distance from the limit,
// 0.111 − ln 1.1 = 0.015690.
func TestDecideWithRunSD(t *testing.T) {
	fixture := func(extra string) *Gate {
		g, err := Parse("g.yaml", []byte("target: local\nrules:\n  - metric: sidecarRSS\n    match: {}\n    maxIncreasePct: 10\n"+extra))
		require.NoError(t, err)
		return g
	}
	m := measure(open8, SidecarRSS, 0.110, 0.112, 0.111)
	v, err := fixture("").Decide([]Measurement{m})
	require.NoError(t, err)
	assert.Equal(t, Fail, v.Outcome)
	assert.InDelta(t, 1.114623, v.Decisions[0].Interval.Lo, 1e-6)

	g := fixture("    runSDPct: 1\n")
	assert.Equal(t, 0.01, g.Rules[0].RunSD)
	v, err = g.Decide([]Measurement{m})
	require.NoError(t, err)
	d := v.Decisions[0]
	assert.Equal(t, Inconclusive, d.Outcome)
	assert.InDelta(t, 1.070260, d.Interval.Lo, 1e-6)
	assert.InDelta(t, 0.043098, d.Interval.LogHalfWidth, 1e-6)
	assert.Equal(t, 0.01, d.Interval.RunSD, "the results keep the run-level SD the interval used")
	assert.Equal(t, -1, d.PairsNeeded, "more pairs cannot shrink a run-level offset")
}

// TestDecideSequentialWithRunSD: a sequential decision widens every look
// for the run-level offset, and its outlook knows that more pairs cannot
// pass it: the last look resolves no change smaller than c(Max)·runSD.
func TestDecideSequentialWithRunSD(t *testing.T) {
	g, err := Parse("g.yaml", []byte("target: local\nrules:\n  - metric: sidecarRSS\n    match: {}\n    maxIncreasePct: 10\n    runSDPct: 1\n"))
	require.NoError(t, err)
	q := Sequential{Max: 30, Decisions: 1}
	v, err := g.DecideSequential([]Measurement{measure(open8, SidecarRSS, 0.110, 0.112, 0.111, 0.110, 0.112, 0.111)}, q)
	require.NoError(t, err)
	d := v.Decisions[0]
	assert.Equal(t, Inconclusive, d.Outcome)
	b, err := q.Bounds()
	require.NoError(t, err)
	assert.InDelta(t, b.At(6)*math.Sqrt(math.Pow(d.Interval.LogSD, 2)/6+0.0001), d.Interval.LogHalfWidth, 1e-12)
	require.NotNil(t, d.Outlook)
	assert.Greater(t, d.Outlook.Resolvable, math.Expm1(b.At(30)*0.01)-1e-12)
	assert.True(t, d.Outlook.Futile, "no pairs can bring it under the limit: %+v", d.Outlook)
	assert.Equal(t, -1, d.PairsNeeded)
}

// TestDecideUnpairedWithRunSD: against a stored reference, a run-level SD
// as wide as the ratio's distance from the limit means no number of this
// run's repeats settles it (-1, and not the reference's fault); a narrow
// one leaves more repeats to name than without it.
func TestDecideUnpairedWithRunSD(t *testing.T) {
	flat := []float64{0, 0.02, -0.02, 0.01, -0.01, 0}
	near := []float64{math.Log(1.1) - 0.05, math.Log(1.1) + 0.05, math.Log(1.1) + 0.15}
	needed := func(extra string) Decision {
		g, err := Parse("g.yaml", []byte("target: local\nrules:\n  - metric: sidecarCPUPer1kReq\n    match: {}\n    maxIncreasePct: 10\n"+extra))
		require.NoError(t, err)
		v, err := g.Decide([]Measurement{unpaired(open8, SidecarCPUPer1kReq, flat, near)})
		require.NoError(t, err)
		return v.Decisions[0]
	}
	assert.Equal(t, 16, needed("").PairsNeeded, "as TestDecideUnpairedRepeats")
	// 0.05 from the limit: 1.96·0.03 = 0.0588 is more.
	d := needed("    runSDPct: 3\n")
	assert.Equal(t, Inconclusive, d.Outcome)
	assert.Equal(t, -1, d.PairsNeeded)
	assert.False(t, d.ReferenceTooFew, "the run-level offset, not the stored reference, is what no repeats can narrow")
	assert.Greater(t, needed("    runSDPct: 1\n").PairsNeeded, 16)
}
