package suite

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/gate"
	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/testbed"
)

// pointRun stands for one sweep point of a stored-reference run: round(rep)
// adds a baseline and a meshed record whose sidecar CPU is cpu(rep) (as an
// overhead ratio, cpu(rep)/200 over the baseline app's 200 millicores);
// throughput and RSS are the stored run's, so that CPU alone decides.
type pointRun struct {
	runs  map[testbed.Arm][]report.Record
	cpu   func(rep int) float64
	calls []int
}

func newPointRun(cpu func(rep int) float64) *pointRun {
	return &pointRun{runs: map[testbed.Arm][]report.Record{}, cpu: cpu}
}

func (p *pointRun) round(rep int) {
	p.calls = append(p.calls, rep)
	p.runs[testbed.Baseline] = append(p.runs[testbed.Baseline], syntheticRecord(testbed.Baseline, rep, figures{appMC: 200, qps: 10000}))
	p.runs[testbed.Meshed] = append(p.runs[testbed.Meshed], syntheticRecord(testbed.Meshed, rep, figures{sidecarMC: p.cpu(rep), appMC: 200, qps: 2000, rssMiB: 60}))
}

// storedPoint is a stored run of one point: sidecar CPU cpu[i] in repeat i,
// the same baseline, throughput and RSS as pointRun's.
func storedPoint(cpu ...float64) []report.Record {
	p := newPointRun(func(rep int) float64 { return cpu[rep] })
	for rep := range cpu {
		p.round(rep)
	}
	return append(p.runs[testbed.Baseline], p.runs[testbed.Meshed]...)
}

// maxCountSuite is a stored-reference Suite with -count and -max-count,
// logging into log.
func maxCountSuite(t *testing.T, stored []report.Record, count, maxCount int, log *bytes.Buffer) *Suite {
	t.Helper()
	s := storedSuite(t, stored)
	s.Config.Repeats, s.Config.MaxCount, s.Log = count, maxCount, log
	return s
}

// addRoundsAt runs -count rounds of p, then what -max-count adds, as Sweep
// does at one point.
func addRoundsAt(s *Suite, p *pointRun) {
	for rep := range s.reps() {
		p.round(rep)
	}
	p.calls = nil
	s.addRounds(context.Background(), "BenchmarkOneHop/c=4", p.runs, p.round)
}

// records are the point's runs, as the results file holds them.
func (p *pointRun) records() []report.Record {
	return append(p.runs[testbed.Baseline], p.runs[testbed.Meshed]...)
}

// The stored reference has 6 repeats of sidecar CPU overhead ratios 2,
// 2.02, 1.98, 2.01, 1.99, 2 (log variance 0.000050); -count 3 and
// -max-count 10 give 3 looks, and the fixture 3 decisions at the point,
// so each decision is at 1 - 2·0.05/(3·3) = 98.9 % (gate.StoredConfidence).
// This run's first three rounds (ratios 2.35, 2.5, 2.65, log variance
// 0.003610) are 1.25 (0.91–1.72) times the reference: inconclusive, 0.126652
// above ln 1.1, which Welch's half-width first clears at N = 5, so the
// first look asks for 2 more rounds. Every later round is right at the
// limit (ratio 2.2): at 5 rounds 1.19 (1.01–1.40) is still inconclusive,
// and before the last look the point gets the rest of the budget; at 10
// rounds 1.14 (1.07–1.22) is inconclusive still, and the point stops
// there: 7 rounds added, no more.
func TestMaxCountAgainstAStoredReferenceStopsAtTheBudget(t *testing.T) {
	var log bytes.Buffer
	s := maxCountSuite(t, storedPoint(400, 404, 396, 402, 398, 400), 3, 10, &log)
	p := newPointRun(func(rep int) float64 {
		if rep < 3 {
			return []float64{470, 500, 530}[rep]
		}
		return 440 // ratio 2.2, at the limit
	})
	addRoundsAt(s, p)
	assert.Equal(t, []int{3, 4, 5, 6, 7, 8, 9}, p.calls)
	assert.Len(t, p.runs[testbed.Meshed], 10, "-max-count rounds in all")
	assert.Len(t, s.ref.results.Records, 12, "the stored run is not added to")
	lines := strings.Split(strings.TrimSuffix(log.String(), "\n"), "\n")
	require.Len(t, lines, 4, log.String())
	assert.Equal(t, "# meshbench: BenchmarkOneHop/c=4: the gate is inconclusive after 3 rounds (look 1 of at most 3, at 98.9 %): 2 more, of at most 10 in all", lines[0])
	assert.Contains(t, lines[1], "1.25 (0.91–1.72, n=6 stored, 3 this run, unpaired) straddles ≤ 1.10; about 2 more repeats of this run would settle it")
	assert.Equal(t, "# meshbench: BenchmarkOneHop/c=4: the gate is inconclusive after 5 rounds (look 2 of at most 3, at 98.9 %): 5 more, of at most 10 in all", lines[2])
	assert.Contains(t, lines[3], "1.19 (1.01–1.40, n=6 stored, 5 this run, unpaired)")

	// The end of the run decides on the stored repeats and all ten of this
	// run's, at the level of every look; 0.038010 above ln 1.1, Welch's
	// half-width at 98.9 % first clears it at N = 25, 15 more.
	v, out, _, err := judgeSuite(s, p.records())
	require.Error(t, err)
	assert.Equal(t, gate.Inconclusive, v.Outcome)
	assert.InDelta(t, 1-0.1/9, v.Confidence, 1e-15)
	cpu := decisionOf(t, v, gate.SidecarCPUPer1kReq)
	assert.Equal(t, "../../fixtures/gates/local.yaml:21: benchmark=BenchmarkOneHop/c=4/loop=closed/path=one-hop: inconclusive sidecar CPU per 1k req: "+
		"candidate/reference 1.14 (1.07–1.22, n=6 stored, 10 this run, unpaired) straddles ≤ 1.10; about 15 more repeats of this run would settle it if the spread holds", cpu.Reason)
	assert.Equal(t, 15, cpu.PairsNeeded)
	assert.Contains(t, out, "# meshbench: gate: -max-count=10: a point was looked at up to 3 times as rounds were added, so every interval is at 98.89 % (the verdict's 5 % error split over the looks and the decisions)\n")
	assert.Contains(t, out, "# meshbench: gate: the stored run has 6 repeats per point and this run 10: all of each are used\n")
}

// The same stored reference; this run's first three rounds (ratios 2.4,
// 2.5, 2.6) are 1.25 (1.01–1.54) times it at 98.9 %, 0.127320 above ln 1.1,
// which one more repeat clears. A fourth round at 2.5 makes it 1.25
// (1.14–1.36): a fail, and no more rounds, though the budget allows 10.
func TestMaxCountAgainstAStoredReferenceStopsWhenConclusive(t *testing.T) {
	var log bytes.Buffer
	s := maxCountSuite(t, storedPoint(400, 404, 396, 402, 398, 400), 3, 10, &log)
	p := newPointRun(func(rep int) float64 { return []float64{480, 500, 520, 500}[rep] })
	addRoundsAt(s, p)
	assert.Equal(t, []int{3}, p.calls)
	assert.Contains(t, log.String(), "the gate is inconclusive after 3 rounds (look 1 of at most 3, at 98.9 %): 1 more, of at most 10 in all\n")
	v, _, _, err := judgeSuite(s, p.records())
	require.Error(t, err)
	assert.Equal(t, gate.Fail, v.Outcome)
	assert.Contains(t, decisionOf(t, v, gate.SidecarCPUPer1kReq).Reason, "candidate/reference 1.25 (1.14–1.36, n=6 stored, 4 this run, unpaired) expected ≤ 1.10")
}

// Without a budget above -count nothing is added, however inconclusive.
func TestMaxCountWithNoBudgetAddsNoRounds(t *testing.T) {
	for _, maxCount := range []int{0, 3} {
		var log bytes.Buffer
		s := maxCountSuite(t, storedPoint(400, 404, 396, 402, 398, 400), 3, maxCount, &log)
		p := newPointRun(func(rep int) float64 { return []float64{470, 500, 530}[rep] })
		addRoundsAt(s, p)
		assert.Empty(t, p.calls, "-max-count=%d", maxCount)
		assert.Empty(t, log.String())
	}
}

// A cancelled run adds no rounds.
func TestMaxCountStopsWhenCancelled(t *testing.T) {
	var log bytes.Buffer
	s := maxCountSuite(t, storedPoint(400, 404, 396, 402, 398, 400), 3, 10, &log)
	p := newPointRun(func(rep int) float64 { return []float64{470, 500, 530}[rep] })
	for rep := range 3 {
		p.round(rep)
	}
	p.calls = nil
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s.addRounds(ctx, "BenchmarkOneHop/c=4", p.runs, p.round)
	assert.Empty(t, p.calls)
}

// candidatePoint is one point of a gate with a candidate in the run:
// round(rep) adds a reference at 400 millicores of sidecar CPU and a
// candidate at 400·up(rep), the rest alike; calls lists the rounds run
// after the first 3, which it runs, as Sweep does.
type candidatePoint struct {
	runs  map[testbed.Arm][]report.Record
	up    func(rep int) float64
	calls []int
}

func newCandidatePoint(up func(rep int) float64) *candidatePoint {
	p := &candidatePoint{runs: map[testbed.Arm][]report.Record{}, up: up}
	for rep := range 3 {
		p.round(rep)
	}
	p.calls = nil
	return p
}

func (p *candidatePoint) round(rep int) {
	p.calls = append(p.calls, rep)
	p.runs[testbed.Reference] = append(p.runs[testbed.Reference], syntheticRecord(testbed.Reference, rep, figures{sidecarMC: 400, appMC: 200, qps: 2000, rssMiB: 60}))
	p.runs[testbed.Candidate] = append(p.runs[testbed.Candidate], syntheticRecord(testbed.Candidate, rep, figures{sidecarMC: 400 * p.up(rep), appMC: 200, qps: 2000, rssMiB: 60}))
}

// sequentialSuite is a Suite gating a candidate with -count 3 and
// -max-count 8, logging into log.
func sequentialSuite(t *testing.T, log *bytes.Buffer) *Suite {
	s := NewWithConfig(&Config{Candidate: "caddy+no-keepalive", Repeats: 3, MaxCount: 8})
	s.gate, s.Log = testGateFixture(t), log
	return s
}

// With -candidate the gate adds one interleaved pair at a time and decides
// after each (gate.DecideSequential): a candidate that alternates ±e^0.1
// around e^0.11 times the CPU limit against a steady reference (log
// ratios ln 1.1 + 0.11 ± 0.1) never settles, though the last look could
// have decided it (an 11 % chance at 7 pairs, gate.Outlook), so the point
// grows one round at a time to the budget of 8, saying so before each,
// and stops there, inconclusive on all 8.
func TestMaxCountWithACandidateStopsAtTheBudget(t *testing.T) {
	var log bytes.Buffer
	s := sequentialSuite(t, &log)
	p := newCandidatePoint(func(rep int) float64 { return 1.1 * math.Exp(0.11+0.1*float64(1-rep%2*2)) })
	s.addRounds(context.Background(), "BenchmarkOneHop/c=4", p.runs, p.round)
	assert.Equal(t, []int{3, 4, 5, 6, 7}, p.calls)
	for n := 3; n < 8; n++ {
		assert.Contains(t, log.String(), fmt.Sprintf("gate undecided after %d rounds: sidecarCPUPer1kReq ", n))
		assert.Contains(t, log.String(), fmt.Sprintf("; round %d of at most 8\n", n+1))
	}
	assert.Contains(t, log.String(), "gate undecided after 7 rounds: sidecarCPUPer1kReq 1.246 (1.058–1.466, n=7) [11 % chance to decide by 8; resolves 15.2 % from the limit, is 13.2 % from it]; round 8 of at most 8\n")
	recs := append(p.runs[testbed.Reference], p.runs[testbed.Candidate]...)
	ms := gateMeasurements(s.gate, recs)
	v, err := s.gate.DecideSequential(ms, s.gateSequential("", ms))
	require.NoError(t, err)
	assert.Equal(t, gate.Inconclusive, v.Outcome)
	assert.Equal(t, 8, decisionOf(t, &v, gate.SidecarCPUPer1kReq).Interval.N)
}

// Right on the limit (log ratios ln 1.1 ± 0.1) the budget of 8 cannot
// decide: after 6 rounds the last look would need the ratio 15.6 % from
// the limit, and 2 more pairs can move it 0.1·√(2/48) = 0.02 in log: the
// gate says so and adds no more rounds (gate.Verdict.Futile). The verdict
// then gives the reason in its own words.
func TestSequentialGateStopsWhenTheBudgetCannotDecide(t *testing.T) {
	var log bytes.Buffer
	s := sequentialSuite(t, &log)
	p := newCandidatePoint(func(rep int) float64 { return 1.1 * math.Exp(0.1*float64(1-rep%2*2)) })
	s.addRounds(context.Background(), "BenchmarkOneHop/c=4", p.runs, p.round)
	assert.Equal(t, []int{3, 4, 5}, p.calls)
	lines := strings.Split(strings.TrimSuffix(log.String(), "\n"), "\n")
	require.Len(t, lines, 4, log.String())
	assert.Equal(t, "# meshbench: BenchmarkOneHop/c=4: gate: no more rounds after 6: the budget of 8 cannot decide "+
		"sidecarCPUPer1kReq 1.100 (0.902–1.341, n=6) [0 % chance to decide by 8; resolves 15.6 % from the limit, is 0.0 % from it]", lines[3])
	recs := append(p.runs[testbed.Reference], p.runs[testbed.Candidate]...)
	ms := gateMeasurements(s.gate, recs)
	v, err := s.gate.DecideSequential(ms, s.gateSequential("", ms))
	require.NoError(t, err)
	assert.True(t, v.Futile())
	cpu := decisionOf(t, &v, gate.SidecarCPUPer1kReq)
	require.NotNil(t, cpu.Outlook)
	assert.Equal(t, 6, cpu.Outlook.Pairs)
	assert.Contains(t, cpu.Reason, "straddles ≤ 1.10; this machine cannot decide it within 8 pairs: at the spread of the first 6, the last look resolves changes of 16 % or more from the limit, "+
		"and the ratio is 0 % from it (a 0 % chance to decide); ")
}

// A clear regression stops the point at its first conclusive look: a
// candidate at 3× the reference's CPU per request (log ratios ln 3 ± 0.01)
// fails at the first look, after the -count rounds, and no round is added.
func TestSequentialGateStopsOnAFail(t *testing.T) {
	var log bytes.Buffer
	s := sequentialSuite(t, &log)
	p := newCandidatePoint(func(rep int) float64 { return 3 * math.Exp(0.01*float64(1-rep%2*2)) })
	s.addRounds(context.Background(), "BenchmarkOneHop/c=4", p.runs, p.round)
	assert.Empty(t, p.calls)
	assert.Empty(t, log.String())
}

// A point after one whose decision failed gets no rounds beyond -count:
// the verdict is a fail whatever it decides. Here the first point's
// candidate used 3× the reference's CPU per request; the second point is
// undecided after its 3 rounds and is left at that.
func TestSequentialGateAddsNoRoundsAfterAFail(t *testing.T) {
	var log bytes.Buffer
	s := NewWithConfig(&Config{Candidate: "caddy+no-keepalive", Repeats: 3, MaxCount: 8})
	s.gate, s.Log = testGateFixture(t), &log
	point := func(load string, up func(rep int) float64) map[testbed.Arm][]report.Record {
		runs := map[testbed.Arm][]report.Record{}
		for rep := range 3 {
			ref := syntheticRecord(testbed.Reference, rep, figures{sidecarMC: 400, appMC: 200, qps: 2000, rssMiB: 60})
			cand := syntheticRecord(testbed.Candidate, rep, figures{sidecarMC: 400 * up(rep), appMC: 200, qps: 2000, rssMiB: 60})
			ref.Labels, cand.Labels = ref.Labels.With("load", load), cand.Labels.With("load", load)
			runs[testbed.Reference] = append(runs[testbed.Reference], ref)
			runs[testbed.Candidate] = append(runs[testbed.Candidate], cand)
		}
		return runs
	}
	first := point("max", func(rep int) float64 { return 3 * (1 + 0.01*float64(rep)) }) // not zero spread: gate.SignTestPairs
	s.recs = append(first[testbed.Reference], first[testbed.Candidate]...)
	second := point("open", func(rep int) float64 { return 1.1 * math.Exp(0.1*float64(1-rep%2*2)) })
	s.recs = append(s.recs, append(second[testbed.Reference], second[testbed.Candidate]...)...)
	var calls []int
	s.addRounds(context.Background(), "BenchmarkOneHop/load=open/c=4", second, func(rep int) { calls = append(calls, rep) })
	assert.Empty(t, calls)
	assert.Equal(t, "# meshbench: BenchmarkOneHop/load=open/c=4: gate: the verdict already failed at an earlier point: no rounds added here\n", log.String())
}
