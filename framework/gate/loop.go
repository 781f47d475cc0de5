package gate

import (
	"context"
	"fmt"
	"slices"
)

// MaxLooks is the most times UntilConclusive decides on the same
// measurements as pairs are added. Every look is a chance to stop on a
// wrong answer, so the error rate is split evenly over the looks
// (Bonferroni): with L looks each interval is at 1 - (1-Confidence)/L, and
// a candidate at its limit is still judged wrongly at most 2.5 % of the
// time in all. Three looks (98.3 % each) make the first look's interval
// at n=6 37 % wider than a single decision's (t 3.534 against 2.571).
const MaxLooks = 3

// Pair is one more reference/candidate pair of one metric of one scenario,
// measured back to back. For an Unpaired measurement only Candidate is
// used: the stored reference's repeats are fixed.
type Pair struct {
	// Scenario is the scenario's labels.
	Scenario Labels
	// Metric is the figure measured.
	Metric Metric
	// Reference and Candidate are the pair's values, in the metric's unit.
	Reference, Candidate float64
}

// MeasureFunc measures one more interleaved reference/candidate pair of
// every scenario in scenarios (for unpaired measurements, one more
// candidate repeat) and returns a Pair for each metric that scenario
// measures. It should stop when ctx is done.
type MeasureFunc func(ctx context.Context, scenarios []Labels) ([]Pair, error)

// UntilConclusive decides like Decide and, while some decisions are
// inconclusive, measures more pairs of their scenarios (one pair per call
// of measure) until every decision is conclusive or each such scenario has
// maxCount pairs (the run's MaxCount). It returns the last verdict and the
// measurements with the pairs added; ms is not modified. Unpaired
// measurements (a stored reference) grow by candidate repeats only, and
// their count is what maxCount bounds (Measurement.Repeats).
//
// Pairs are added in batches and decided after each, at most MaxLooks
// times in all: after the first look a scenario gets the pairs its
// decisions' PairsNeeded estimate (capped by the budget), and before the
// last look all the budget left. All looks use the split confidence level
// (see MaxLooks), which the verdict records. With no budget to add pairs
// (maxCount at most the pairs already there) it is Decide.
func (g *Gate) UntilConclusive(ctx context.Context, ms []Measurement, maxCount int, measure MeasureFunc) (Verdict, []Measurement, error) {
	ms = cloneMeasurements(ms)
	looks := Looks(minPairs(ms), maxCount)
	conf := LookConfidence(looks)
	for look := 1; ; look++ {
		v, err := g.decide(ms, conf)
		if err != nil {
			return Verdict{}, ms, err
		}
		targets := Targets(v, ms, maxCount, look == looks-1)
		if look == looks || len(targets) == 0 {
			return v, ms, nil
		}
		if err := g.fill(ctx, ms, targets, measure); err != nil {
			return v, ms, err
		}
	}
}

// Looks is how many times UntilConclusive decides measurements that start
// with have repeats and may grow to maxCount: 1 when there is no budget to
// add any, else up to MaxLooks, one per repeat added at most.
func Looks(have, maxCount int) int {
	if maxCount <= have {
		return 1
	}
	return min(MaxLooks, 1+maxCount-have)
}

// LookConfidence is the level each of looks decisions is made at, so that
// all of them together err at most as one decision at Confidence does
// (Bonferroni): 1 - (1-Confidence)/looks.
func LookConfidence(looks int) float64 {
	return 1 - (1-Confidence)/float64(max(looks, 1))
}

// StoredConfidence is the two-sided level of each decision against a
// stored reference, splitting VerdictAlpha over the verdict's decisions
// and the looks at each, as a sequential verdict splits it over its
// decisions (Sequential.Alpha): each decision errs one way only, so at
// 1 - 2·VerdictAlpha/(decisions·looks) the verdict is wrong at most
// VerdictAlpha of the time.
func StoredConfidence(decisions, looks int) float64 {
	return 1 - 2*VerdictAlpha/float64(max(decisions, 1)*max(looks, 1))
}

// DecideAt is Decide at the confidence level conf, for a caller that runs
// UntilConclusive's looks itself (LookConfidence).
func (g *Gate) DecideAt(ms []Measurement, conf float64) (Verdict, error) {
	return g.decide(ms, conf)
}

// Targets returns, by scenario name, how many repeats
// (Measurement.Repeats) each scenario with an inconclusive decision should
// have before the next look: all of maxCount when last, else its largest
// PairsNeeded more (capped by maxCount). It is UntilConclusive's schedule
// for a caller that measures by itself.
func Targets(v Verdict, ms []Measurement, maxCount int, last bool) map[string]int {
	pairs := map[string]int{}
	for _, m := range ms {
		pairs[m.Scenario.String()] = m.Repeats()
	}
	out := map[string]int{}
	for _, d := range v.Decisions {
		name := d.Scenario.String()
		n := pairs[name]
		if d.Outcome != Inconclusive || n >= maxCount {
			continue
		}
		want := maxCount
		if !last && d.PairsNeeded > 0 {
			want = min(maxCount, n+d.PairsNeeded)
		}
		out[name] = max(out[name], want)
	}
	return out
}

// fill measures pairs until every scenario in targets has its target.
func (g *Gate) fill(ctx context.Context, ms []Measurement, targets map[string]int, measure MeasureFunc) error {
	index := map[string][]int{} // scenario name → its measurements
	labels := map[string]Labels{}
	for i, m := range ms {
		name := m.Scenario.String()
		index[name] = append(index[name], i)
		labels[name] = m.Scenario
	}
	for {
		var need []Labels
		for _, name := range sortedKeys(targets) {
			if ms[index[name][0]].Repeats() < targets[name] {
				need = append(need, labels[name])
			}
		}
		if len(need) == 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("gate: adding pairs: %w", err)
		}
		pairs, err := measure(ctx, need)
		if err != nil {
			return fmt.Errorf("gate: measuring one more pair of %d scenarios: %w", len(need), err)
		}
		if err := addPairs(ms, index, need, pairs); err != nil {
			return err
		}
	}
}

// addPairs appends pairs to ms (only the candidate's value to an unpaired
// measurement), and fails unless every measurement of every scenario in
// need got exactly one, so that repeats stay paired across metrics.
func addPairs(ms []Measurement, index map[string][]int, need []Labels, pairs []Pair) error {
	added := map[int]int{}
	for _, p := range pairs {
		i := slices.IndexFunc(index[p.Scenario.String()], func(i int) bool { return ms[i].Metric == p.Metric })
		if i < 0 {
			return fmt.Errorf("gate: measure returned %s of %s, which was not measured before", p.Metric, p.Scenario)
		}
		j := index[p.Scenario.String()][i]
		if !ms[j].Unpaired {
			ms[j].Reference = append(ms[j].Reference, p.Reference)
		}
		ms[j].Candidate = append(ms[j].Candidate, p.Candidate)
		added[j]++
	}
	for _, l := range need {
		for _, j := range index[l.String()] {
			if added[j] != 1 {
				return fmt.Errorf("gate: measure returned %d pairs of %s for %s, want 1", added[j], ms[j].Metric, l)
			}
		}
	}
	return nil
}

func cloneMeasurements(ms []Measurement) []Measurement {
	out := make([]Measurement, len(ms))
	for i, m := range ms {
		out[i] = Measurement{Scenario: m.Scenario, Metric: m.Metric, Unpaired: m.Unpaired, LeftOut: m.LeftOut,
			Reference: slices.Clone(m.Reference), Candidate: slices.Clone(m.Candidate)}
	}
	return out
}

func minPairs(ms []Measurement) int {
	n := -1
	for _, m := range ms {
		if n < 0 || m.Repeats() < n {
			n = m.Repeats()
		}
	}
	return max(n, 0)
}
