package gate

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/meshbench/meshbench/framework/stats"
)

// RunRatio is one whole gate run's figure for one decision: the run's mean
// ratio and the interval the gate itself decided with.
type RunRatio struct {
	// Run names the run (its results file).
	Run string
	// Interval is the decision's interval as the run stored it.
	Interval stats.RatioInterval
}

// ExcludesOne says whether the run's interval excludes 1: the run would
// call an A/A different.
func (r RunRatio) ExcludesOne() bool {
	iv := r.Interval
	return iv.N > 0 && (iv.Lo > 1 || iv.Hi < 1)
}

// StandardError is LogSD/√N, of the run's mean log ratio; NaN without
// two pairs.
func (r RunRatio) StandardError() float64 {
	if !r.usableForSpread() {
		return math.NaN()
	}
	return r.Interval.LogSD / math.Sqrt(float64(r.Interval.N))
}

// usableForSpread: with two pairs or more, the run's SD counts in the
// spread within runs.
func (r RunRatio) usableForSpread() bool {
	return r.Interval.N >= 2 && !math.IsNaN(r.Interval.LogSD)
}

// Offsets is what a set of A/A gate runs say about one decision (a
// scenario and metric): whether each run's arms carried an offset that
// the run's own interval does not cover (issue 31: run-level offsets).
//
// The runs are the units: if each run's interval is honest, the runs'
// mean log ratios scatter around one common value by no more than their
// pairs' spread allows, and a one-way analysis of variance of the runs
// (their means, pair counts and per-pair SDs) finds no between-run
// variance beyond it. The F test uses the per-pair SD pooled over the
// runs, not each run's own: a sequential decision stops early when its
// pairs happen to agree, so a run's own SD at its stop is biased low, and
// inverse-variance weights (Cochran's Q) would then make that run's mean
// look far off. An unchanged candidate's intervals should also exclude 1
// in no more of the runs than the gate's error rate allows.
type Offsets struct {
	Scenario Labels
	Metric   Metric
	Runs     []RunRatio
	// Excluding counts the runs whose own interval excludes 1.
	Excluding int
	// Mean is exp of the mean of the runs' mean log ratios (each run
	// counted once), and MeanLo–MeanHi its 95 % t-interval over the runs:
	// the offset the gate would carry on average.
	Mean, MeanLo, MeanHi float64
	// PairSD is the per-pair standard deviation of ln(candidate/reference)
	// as the intervals estimate it (stats.RatioInterval.LogSD: with a
	// trimmed mean, the SD that makes its standard error SD/√n), pooled
	// over the runs (each weighed by its n−1): the day's noise for this
	// metric, which the error rates must be reported with.
	PairSD float64
	// Spread is the one-way analysis of variance of the runs with at
	// least two pairs: between-run against within-run variance.
	Spread ANOVA
	// RunSD is the run-level SD of the log ratio, the random-effects
	// estimate from Spread: √((MSB − MSW)/n₀), with n₀ the runs' effective
	// pairs each, (N − Σnᵢ²/N)/(k − 1); 0 when the runs spread no more
	// than their pairs (MSB ≤ MSW), NaN without the test. A gate rule's
	// runSDPct takes it, so that its intervals cover the offset.
	RunSD float64
}

// RunOffsets groups the decisions of many A/A runs by scenario and metric
// and says, for each, how far the runs' offsets spread (Offsets). The
// runs map a run's name to its verdict's decisions; a decision without
// an interval (too few pairs) is left out. The result is sorted by
// scenario, then metric.
func RunOffsets(runs map[string][]Decision) []Offsets {
	byKey := map[string]*Offsets{}
	for _, name := range slices.Sorted(maps.Keys(runs)) {
		for _, d := range runs[name] {
			iv := d.Interval
			if iv.N == 0 {
				continue
			}
			key := d.Scenario.String() + "\x00" + string(d.Metric)
			o := byKey[key]
			if o == nil {
				o = &Offsets{Scenario: d.Scenario, Metric: d.Metric}
				byKey[key] = o
			}
			o.Runs = append(o.Runs, RunRatio{Run: name, Interval: iv})
		}
	}
	out := make([]Offsets, 0, len(byKey))
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		o := byKey[k]
		o.summarize()
		out = append(out, *o)
	}
	return out
}

// summarize fills the counts, the mean and the analysis of variance
// from o.Runs.
func (o *Offsets) summarize() {
	var logs []float64
	var n []int
	var means, sds []float64
	o.Excluding = 0
	for _, r := range o.Runs {
		logs = append(logs, r.Interval.LogMean)
		if r.ExcludesOne() {
			o.Excluding++
		}
		if r.usableForSpread() {
			n = append(n, r.Interval.N)
			means = append(means, r.Interval.LogMean)
			sds = append(sds, r.Interval.LogSD)
		}
	}
	o.Mean, o.MeanLo, o.MeanHi = math.NaN(), math.NaN(), math.NaN()
	if k := len(logs); k > 0 {
		m, sd := stat.MeanStdDev(logs, nil)
		o.Mean = math.Exp(m)
		if k > 1 {
			h := stats.TQuantile(0.95, k-1) * sd / math.Sqrt(float64(k))
			o.MeanLo, o.MeanHi = math.Exp(m-h), math.Exp(m+h)
		}
	}
	o.Spread = OneWayANOVA(n, means, sds)
	o.PairSD = math.Sqrt(o.Spread.MSW)
	o.RunSD = runLevelSD(n, o.Spread)
}

// runLevelSD is the between-group SD of a one-way random-effects model
// from its analysis of variance a of groups of sizes n: √((MSB − MSW)/n₀),
// n₀ = (N − Σnᵢ²/N)/(k − 1), or 0 when MSB ≤ MSW; NaN without an F test.
func runLevelSD(n []int, a ANOVA) float64 {
	if math.IsNaN(a.F) {
		return math.NaN()
	}
	var total, squares float64
	for _, ni := range n {
		total += float64(ni)
		squares += float64(ni * ni)
	}
	n0 := (total - squares/total) / float64(len(n)-1)
	return math.Sqrt(max(0, (a.MSB-a.MSW)/n0))
}

// ANOVA is a one-way analysis of variance from each group's size, mean
// and sample standard deviation: the between-group and within-group sums
// of squares and mean squares, and the F test of equal group means on
// (DF1, DF2) degrees of freedom, with P its upper tail. F and P are NaN
// when there are fewer than two groups or no within-group degrees of
// freedom; MSW is NaN without within-group degrees of freedom.
type ANOVA struct {
	SSB, SSW, MSB, MSW float64
	DF1, DF2           int
	F, P               float64
}

// OneWayANOVA is R's summary(aov(y ~ group)) from group summaries: n[i]
// values with mean[i] and sample SD sd[i] in group i.
func OneWayANOVA(n []int, mean, sd []float64) ANOVA {
	a := ANOVA{MSB: math.NaN(), MSW: math.NaN(), F: math.NaN(), P: math.NaN()}
	var total int
	var sum float64
	for i := range n {
		total += n[i]
		sum += float64(n[i]) * mean[i]
		a.SSW += float64(n[i]-1) * sd[i] * sd[i]
	}
	a.DF1, a.DF2 = max(len(n)-1, 0), total-len(n)
	if total == 0 {
		return a
	}
	grand := sum / float64(total)
	for i := range n {
		d := mean[i] - grand
		a.SSB += float64(n[i]) * d * d
	}
	if a.DF2 > 0 {
		a.MSW = a.SSW / float64(a.DF2)
	}
	if a.DF1 == 0 || a.DF2 == 0 {
		return a
	}
	a.MSB = a.SSB / float64(a.DF1)
	a.F = a.MSB / a.MSW
	a.P = distuv.F{D1: float64(a.DF1), D2: float64(a.DF2)}.Survival(a.F)
	return a
}

// String is the one-line summary, e.g. "throughput load=max: 20 runs,
// 0 of whose intervals exclude 1; per-pair SD 7.6 %; mean ratio 1.0060
// (0.9921–1.0201 over the runs); between runs F 1.21 on 19 and 260 df,
// p=0.25; run-level SD 0.43 %".
func (o Offsets) String() string {
	s := fmt.Sprintf("%s %s: %d runs, %d of whose intervals exclude 1; per-pair SD %.1f %%; mean ratio %.4f",
		o.Metric, o.Scenario, len(o.Runs), o.Excluding, 100*o.PairSD, o.Mean)
	if len(o.Runs) > 1 {
		s += fmt.Sprintf(" (%.4f–%.4f over the runs)", o.MeanLo, o.MeanHi)
	}
	switch {
	case o.Spread.MSW == 0:
		return s + "; no spread within the runs' pairs to compare their means against"
	case math.IsNaN(o.Spread.F):
		return s + "; too few runs with two pairs or more to compare their means"
	}
	return s + fmt.Sprintf("; between runs F %.2f on %d and %d df, p=%.3g; run-level SD %.2f %%", o.Spread.F, o.Spread.DF1, o.Spread.DF2, o.Spread.P, 100*o.RunSD)
}
