package gate

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeRun measures one more pair per scenario asked for: reference 100 and
// candidate 100·e^next(), for every metric a scenario gates in testGate.
type fakeRun struct {
	calls int
	asked [][]string
	next  func(call int) float64
}

func (f *fakeRun) measure(_ context.Context, scenarios []Labels) ([]Pair, error) {
	f.calls++
	var names []string
	var out []Pair
	for _, s := range scenarios {
		names = append(names, s.String())
		x := f.next(f.calls)
		out = append(out, Pair{Scenario: s, Metric: SidecarCPUPer1kReq, Reference: 100, Candidate: 100 * math.Exp(x)})
		if s["loop"] == "closed" {
			out = append(out, Pair{Scenario: s, Metric: Throughput, Reference: 100, Candidate: 100})
		}
	}
	f.asked = append(f.asked, names)
	return out, nil
}

func TestUntilConclusiveAddsPairsToTheInconclusiveOnly(t *testing.T) {
	g := testGate(t)
	ms := []Measurement{
		measure(closed8, SidecarCPUPer1kReq, same...),
		measure(closed8, Throughput, same...),
		measure(open8, SidecarCPUPer1kReq, upBy20...), // inconclusive at n=6
	}
	run := &fakeRun{next: func(int) float64 { return 0.18 }}
	v, got, err := g.UntilConclusive(context.Background(), ms, 12, run.measure)
	require.NoError(t, err)
	// Budget 12 from 6: three looks at 1 - 0.05/3 each. After the first,
	// open8's estimate (t(0.99167, N-1)/√N < 0.748559 first at N=14) is
	// capped at the budget, so it gets 6 more pairs at once; with them
	// (mean 0.18, sd √(0.064/11) = 0.076277, t(0.99167, 11) = 2.820034,
	// h = 0.062095) the interval e^(0.18 ∓ h) = 1.125137–1.273915 clears 1.10.
	assert.InDelta(t, 1-0.05/3, v.Confidence, 1e-15)
	assert.Equal(t, 6, run.calls)
	for _, a := range run.asked {
		assert.Equal(t, []string{"c=8/loop=open/path=one-hop"}, a)
	}
	assert.Len(t, got[2].Reference, 12)
	assert.Len(t, got[0].Reference, 6, "a conclusive scenario is not measured again")
	assert.Len(t, ms[2].Reference, 6, "the caller's measurements are not modified")
	assert.Equal(t, Fail, v.Outcome)
	assert.Equal(t, "g.yaml:3: c=8/loop=open/path=one-hop: too high sidecar CPU per 1k req: candidate/reference 1.20 (1.13–1.27, n=12) expected ≤ 1.10", v.Decisions[2].Reason)
}

func TestUntilConclusiveStopsAtTheBudget(t *testing.T) {
	g := testGate(t)
	ms := []Measurement{measure(open8, SidecarCPUPer1kReq, upBy20...)}
	// Pairs right on the limit never settle it.
	run := &fakeRun{next: func(call int) float64 { return math.Log(1.1) + 0.1*float64(call%2*2-1) }}
	v, got, err := g.UntilConclusive(context.Background(), ms, 9, run.measure)
	require.NoError(t, err)
	assert.Equal(t, Inconclusive, v.Outcome)
	assert.Equal(t, 3, run.calls)
	assert.Len(t, got[0].Reference, 9)
	assert.Equal(t, 3, v.ExitCode())
}

func TestUntilConclusiveWithNoBudgetIsDecide(t *testing.T) {
	g := testGate(t)
	ms := []Measurement{measure(open8, SidecarCPUPer1kReq, upBy20...)}
	run := &fakeRun{next: func(int) float64 { return 0 }}
	v, _, err := g.UntilConclusive(context.Background(), ms, 6, run.measure)
	require.NoError(t, err)
	want, err := g.Decide(ms)
	require.NoError(t, err)
	assert.Equal(t, want, v)
	assert.Equal(t, 0, run.calls)
}

func TestUntilConclusiveErrors(t *testing.T) {
	g := testGate(t)
	ms := []Measurement{measure(open8, SidecarCPUPer1kReq, upBy20...)}

	boom := errors.New("sidecar crashed")
	_, _, err := g.UntilConclusive(context.Background(), ms, 12, func(context.Context, []Labels) ([]Pair, error) { return nil, boom })
	assert.ErrorIs(t, err, boom)
	assert.EqualError(t, err, "gate: measuring one more pair of 1 scenarios: sidecar crashed")

	_, _, err = g.UntilConclusive(context.Background(), ms, 12, func(context.Context, []Labels) ([]Pair, error) {
		return []Pair{{Scenario: open8, Metric: P99, Reference: 1, Candidate: 1}}, nil
	})
	assert.EqualError(t, err, "gate: measure returned p99 of c=8/loop=open/path=one-hop, which was not measured before")

	_, _, err = g.UntilConclusive(context.Background(), ms, 12, func(context.Context, []Labels) ([]Pair, error) { return nil, nil })
	assert.EqualError(t, err, "gate: measure returned 0 pairs of sidecarCPUPer1kReq for c=8/loop=open/path=one-hop, want 1")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err = g.UntilConclusive(ctx, ms, 12, (&fakeRun{next: func(int) float64 { return 0 }}).measure)
	assert.ErrorIs(t, err, context.Canceled)
}

// Against a stored reference only this run's repeats are added: the
// reference's 6 stay as they are, and the budget counts candidate repeats.
func TestUntilConclusiveAddsCandidateRepeatsOnlyWhenUnpaired(t *testing.T) {
	g := testGate(t)
	flat := []float64{0, 0.02, -0.02, 0.01, -0.01, 0}
	onLimit := []float64{math.Log(1.1) - 0.1, math.Log(1.1) + 0.1, math.Log(1.1)}
	ms := []Measurement{unpaired(open8, SidecarCPUPer1kReq, flat, onLimit)}
	// Repeats right on the limit never settle it.
	run := &fakeRun{next: func(call int) float64 { return math.Log(1.1) + 0.1*float64(call%2*2-1) }}
	v, got, err := g.UntilConclusive(context.Background(), ms, 9, run.measure)
	require.NoError(t, err)
	assert.Equal(t, Inconclusive, v.Outcome)
	assert.InDelta(t, 1-0.05/3, v.Confidence, 1e-15, "3 looks: from 3 repeats, a budget of 9")
	assert.Equal(t, 6, run.calls)
	assert.True(t, got[0].Unpaired)
	assert.Len(t, got[0].Reference, 6, "the stored repeats are fixed")
	assert.Len(t, got[0].Candidate, 9)
	assert.Equal(t, 6, v.Decisions[0].Interval.NReference)
	assert.Equal(t, 9, v.Decisions[0].Interval.NCandidate)
	assert.Len(t, ms[0].Candidate, 3, "the caller's measurements are not modified")
}

// Targets asks for a decision's PairsNeeded more repeats, capped by the
// budget, and all of the budget before the last look. The unpaired
// decision needs 16 more of this run's repeats (TestDecideUnpairedRepeats).
func TestTargetsOfAnUnpairedDecision(t *testing.T) {
	g := testGate(t)
	flat := []float64{0, 0.02, -0.02, 0.01, -0.01, 0}
	ms := []Measurement{unpaired(open8, SidecarCPUPer1kReq, flat, []float64{math.Log(1.1) - 0.05, math.Log(1.1) + 0.05, math.Log(1.1) + 0.15})}
	v, err := g.Decide(ms)
	require.NoError(t, err)
	require.Equal(t, 16, v.Decisions[0].PairsNeeded)
	name := open8.String()
	assert.Equal(t, map[string]int{name: 19}, Targets(v, ms, 30, false))
	assert.Equal(t, map[string]int{name: 12}, Targets(v, ms, 12, false))
	assert.Equal(t, map[string]int{name: 30}, Targets(v, ms, 30, true))
	assert.Empty(t, Targets(v, ms, 3, false), "no budget left")
	assert.Equal(t, 3, ms[0].Repeats(), "this run's repeats, not the stored 6")
}

func TestLooks(t *testing.T) {
	assert.Equal(t, 1, Looks(6, 0))
	assert.Equal(t, 1, Looks(6, 6))
	assert.Equal(t, 2, Looks(6, 7))
	assert.Equal(t, 3, Looks(6, 8))
	assert.Equal(t, 3, Looks(3, 20))
	assert.InDelta(t, 0.95, LookConfidence(1), 1e-15)
	assert.InDelta(t, 0.975, LookConfidence(2), 1e-15)
	assert.InDelta(t, 1-0.05/3, LookConfidence(3), 1e-15)
}
