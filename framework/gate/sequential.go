package gate

import (
	"fmt"
	"math"

	"github.com/meshbench/meshbench/framework/stats"
)

// VerdictAlpha bounds how often a verdict is wrong: a fail of a candidate
// that is within every limit, or a pass of one that is beyond a limit,
// however many rounds the gate looked at before it stopped.
const VerdictAlpha = 0.05

// DefaultMaxPairs is the default budget of pairs per point of a
// sequential gate on a cluster (the run's MaxCount): what a point may grow
// to while its decisions are undecided. A round on kind is two 10 s
// windows and their warm-ups, so it allows more than 10 minutes a point.
const DefaultMaxPairs = 30

// DefaultLocalMaxPairs is the default budget on the local target, where a
// duet pair takes about 4.5 s (at most about 4.5 minutes a point). It is
// larger than a cluster's because the open-loop p99's pairs are noisy: an
// A/A p99 against its 15 % limit at the per-pair SD of 16 % measured on an
// emulated bad day (docs/gate.md, "A noisy day, emulated") passes 86 % of
// gates within 30 pairs, and 17 of 20 did; within 60 it passes them all
// but about 1 in 1000 (TestLocalBudgetDecidesANoisyAAGate). The gates
// that pass or fail early stop as early: the budget is spent only while
// a decision is undecided and its outlook is not futile.
const DefaultLocalMaxPairs = 60

// Trim is the fraction of a decision's log ratios trimmed from each end
// before their mean (Yuen's trimmed t, stats.TrimmedMean), so that one
// round disturbed by the machine does not decide alone. In a default A/A
// gate on the 2-core machine one open-loop pair of 30 had a p99 3.4× its
// partner's (13.06 ms against 3.79 ms): on the mean, the interval at 30
// pairs was 1.036 (0.895–1.198), inconclusive against the 15 % limit;
// trimmed by 10 %, the same pairs pass at 12, 1.009 (0.891–1.144). A tenth
// trims nothing below 10 pairs, so a clean gate decides as early as on
// the mean (a fifth trimmed one of 5 and made the boundary at 5 pairs 44,
// not 8); the boundaries are simulated for the trimmed statistic itself.
const Trim = 0.1

// Sequential is how a gate keeps measuring while it is undecided: it looks
// after every pair, from MinPairsToDecide to Max pairs, at the repeated
// confidence intervals of a group-sequential plan (Jennison and Turnbull,
// Group Sequential Methods with Applications to Clinical Trials, 2000,
// ch. 9) whose boundaries spend the error with Lan and DeMets' Pocock-type
// function (stats.PocockSpending). Every interval of the sequence, at every
// look, covers the true ratio at once with probability 1 - Alpha(), so a
// decision may stop at its first conclusive look and stays valid however
// often it was looked at.
//
// The verdict's error is bounded across its decisions as well: each of
// the Decisions decisions it can make gets a two-sided Alpha of
// 2·VerdictAlpha/Decisions. A decision errs only one way (a candidate
// within its limit can only be failed wrongly, by an interval wholly
// above its true ratio; one beyond it only passed wrongly, by an interval
// wholly below), each at most Alpha()/2, so the verdict errs at most
// VerdictAlpha (Bonferroni over the decisions).
type Sequential struct {
	// Max is the most pairs a point is measured for (the run's MaxCount).
	Max int
	// Decisions is how many decisions the verdict can make: an upper bound
	// is enough (a larger one only widens the intervals).
	Decisions int
}

// Alpha is the two-sided error of one decision's repeated intervals.
func (q Sequential) Alpha() float64 {
	return 2 * VerdictAlpha / float64(max(q.Decisions, 1))
}

// Bounds are the plan's boundaries, computed once per plan (a fixed
// seed: the same plan always gives the same boundaries).
func (q Sequential) Bounds() (stats.SequentialBounds, error) {
	if q.Max < MinPairsToDecide {
		return stats.SequentialBounds{}, fmt.Errorf("gate: a budget of %d pairs: a decision needs at least %d", q.Max, MinPairsToDecide)
	}
	return stats.SequentialPlan{First: MinPairsToDecide, Max: q.Max, Alpha: q.Alpha(), Spend: stats.PocockSpending, Trim: Trim, Seed: 1}.Bounds()
}

// DecideSequential judges every gated measurement as Decide does, but on
// the plan's repeated intervals, looking at its pairs in the order they
// were measured: after MinPairsToDecide pairs, then after each more, the
// first conclusive look decides it and later pairs do not change that. A
// measurement with no conclusive look is inconclusive at its last.
// Unpaired measurements (a stored reference) are decided once, on all
// their repeats, at Alpha(). It fails as Decide does, and on a
// measurement with more pairs than the plan's Max.
func (g *Gate) DecideSequential(ms []Measurement, q Sequential) (Verdict, error) {
	if err := g.checkMeasurements(ms); err != nil {
		return Verdict{}, err
	}
	b, err := q.Bounds()
	if err != nil {
		return Verdict{}, err
	}
	return g.decideEach(ms, Verdict{Confidence: 1 - q.Alpha(), Sequential: &q}, func(r Rule, m Measurement) (Decision, error) { return decideLooks(r, m, b) })
}

// decideLooks is one measurement's sequential decision: its first
// conclusive look, or its last look.
func decideLooks(r Rule, m Measurement, b stats.SequentialBounds) (Decision, error) {
	if m.Unpaired || m.Repeats() < MinPairsToDecide {
		return decideOne(r, m, 1-b.Plan.Alpha)
	}
	if m.Repeats() > b.Plan.Max {
		return Decision{}, fmt.Errorf("gate: %s: %s: %d pairs, beyond the plan's %d", m.Scenario, m.Metric, m.Repeats(), b.Plan.Max)
	}
	var d Decision
	for n := MinPairsToDecide; n <= m.Repeats(); n++ {
		iv, err := stats.RepeatedLogRatio(m.Reference[:n], m.Candidate[:n], b)
		if err != nil {
			return Decision{}, fmt.Errorf("gate: %s: %s: %w", m.Scenario, m.Metric, err)
		}
		d = judge(r, m, iv.WithRunSD(r.RunSD))
		if d.Outcome != Inconclusive {
			break
		}
	}
	if d.Outcome == Inconclusive && !d.ZeroSpread {
		d.PairsNeeded = sequentialPairsNeeded(d.Interval, d.Limit, b)
		d.Outlook = outlook(d.Interval, d.Limit, b)
	}
	d.Reason = fmt.Sprintf("%s:%d: %s: %s%s", r.File, r.Line, m.Scenario, d.sentence(), m.leftOut())
	return d, nil
}

// judge places iv against r's limit.
func judge(r Rule, m Measurement, iv stats.RatioInterval) Decision {
	d := Decision{Scenario: m.Scenario, Metric: m.Metric, Rule: r, Limit: r.Limit(), Interval: iv, Outcome: Inconclusive,
		Reference: m.Reference, Candidate: m.Candidate}
	worseOutside, betterInside := iv.Lo > d.Limit, iv.Hi <= d.Limit
	if r.Worse == LowerIsWorse {
		worseOutside, betterInside = iv.Hi < d.Limit, iv.Lo >= d.Limit
	}
	switch {
	case worseOutside:
		d.Outcome = Fail
	case betterInside:
		d.Outcome = Pass
	}
	if need := SignTestPairs(iv.Confidence); d.Outcome != Inconclusive && !iv.Unpaired && iv.LogSD == 0 && iv.RunSD == 0 && iv.N < need {
		d.Outcome, d.ZeroSpread, d.PairsNeeded = Inconclusive, true, need-iv.N
	}
	return d
}

// SignTestPairs is the fewest pairs whose ratios, all equal (zero
// spread), decide at the two-sided level conf: the n with 2^-n at most
// the one-sided error (1-conf)/2; 6 at 95 %, 5 at 90 %. It holds paired
// decisions only: against a stored reference the two runs' repeats are
// not pairs.
//
// Why. Measured figures are continuous, so a sample spread of exactly 0
// says they are quantised (RSS in whole pages, a counter at its
// resolution, a figure copied from one read), not that they do not vary:
// the t interval then has width 0 at any n, a certainty that 2 degrees of
// freedom cannot give. With no spread to go on, what remains is the
// distribution-free sign test: if the true median ratio sat on the limit,
// all n pairs would fall on one side of it with probability 2^-n. At n=3
// that is 1/8, far above any decision's error, so zero spread never
// decides at 3 pairs.
func SignTestPairs(conf float64) int {
	return int(math.Ceil(math.Log2(2 / (1 - conf))))
}

// sequentialPairsNeeded is how many more pairs would settle a straddling
// repeated interval if its ratio and spread held: the smallest n up to the
// plan's Max with Crit(n)·sd/√n below the distance to the limit, minus the
// pairs there are; past Max, the pairs a fixed-sample interval at the
// plan's level would need (a lower bound: a longer plan's boundaries are
// wider), at least Max+1 in all since no look of the plan resolves it (a
// fixed-sample interval is narrower than the last look's, and once said
// "about 1 more pair" of a gate that had stopped at 7 of 8 as futile), and
// -1 when even that is beyond MaxPairsEstimate.
func sequentialPairsNeeded(iv stats.RatioInterval, limit float64, b stats.SequentialBounds) int {
	dist := math.Abs(iv.LogMean - math.Log(limit))
	for n := iv.N + 1; n <= b.Plan.Max; n++ {
		if stats.HalfWidth(b.At(n), iv.LogSD, n, iv.RunSD) < dist {
			return n - iv.N
		}
	}
	total := stats.PairsToResolveRun(iv.LogSD, iv.RunSD, dist, 1-b.Plan.Alpha, MaxPairsEstimate)
	if total < 0 {
		return -1
	}
	return max(total, b.Plan.Max+1) - iv.N
}
