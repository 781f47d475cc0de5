package gate

import (
	"fmt"
	"math"
	"strings"

	"github.com/meshbench/meshbench/framework/stats"
)

// Noise is what an A/A run (the candidate identical to the reference) says
// about one gated metric of one scenario: the smallest change a run of this
// many pairs can tell from no change.
type Noise struct {
	// Scenario is the scenario's labels.
	Scenario Labels
	// Metric is the figure the A/A run measured.
	Metric Metric
	// Rule is the fixture's rule for the metric.
	Rule Rule
	// Interval is the A/A ratio; it should contain 1.
	Interval stats.RatioInterval
	// Detectable is the smallest relative change, in the metric's worse
	// direction, that this run's interval could tell from no change: its
	// half-width on the log scale h = t·s/√n, as e^h - 1 for an increase
	// and 1 - e^-h for a decrease (0.14 is 14 %). It is also the limit an
	// unchanged candidate needs to pass: its interval reaches 1 ± that.
	Detectable float64
	// CanPass is false when Detectable exceeds the rule's limit: even an
	// unchanged candidate would be inconclusive, never a pass.
	CanPass bool
	// PairsToPass is how many pairs in all an unchanged candidate needs for
	// its interval to fit inside the limit at this spread (-1 beyond
	// MaxPairsEstimate); the -count a gate run should use.
	PairsToPass int
	// Biased is true when the A/A interval excludes 1: the two arms differ
	// even with the same build (order, placement), and the gate would judge
	// that difference as the candidate's.
	Biased bool
	// Message is the one-line summary.
	Message string
	// Unestimated, when set, says why the run's repeats of the metric made
	// no interval (too few valid ones: a stored reference whose CPU
	// figures were all diluted); the other fields but Scenario, Metric
	// and Rule are then unset.
	Unestimated string
}

// Calibrate reads an A/A run: for every measurement the fixture gates it
// returns the smallest change the run could detect, at [Confidence], and
// says when the gate cannot pass honestly. It fails as Decide does.
func (g *Gate) Calibrate(aa []Measurement) ([]Noise, error) {
	return g.CalibrateAt(aa, Confidence, nil)
}

// CalibrateAt is Calibrate at the level the decisions were made at: conf
// for a fixed number of pairs, or, when q is set, q's repeated intervals
// at the pairs there are (the spread a sequential decision saw at its last
// look), with PairsToPass counted against q's boundaries.
func (g *Gate) CalibrateAt(aa []Measurement, conf float64, q *Sequential) ([]Noise, error) {
	if err := g.checkMeasurements(aa); err != nil {
		return nil, err
	}
	var out []Noise
	for _, m := range aa {
		r, ok := g.Rule(m.Scenario, m.Metric)
		if !ok {
			continue
		}
		m = m.usable()
		if why := tooFewForNoise(m); why != "" {
			n := Noise{Scenario: m.Scenario, Metric: m.Metric, Rule: r, Unestimated: why}
			n.Message = n.message()
			out = append(out, n)
			continue
		}
		iv, err := calibrationInterval(m, conf, q)
		if err != nil {
			return nil, fmt.Errorf("gate: A/A %s: %s: %w", m.Scenario, m.Metric, err)
		}
		iv = iv.WithRunSD(r.RunSD)
		n := noise(r, m, iv)
		if q != nil && !m.Unpaired {
			n.PairsToPass = sequentialPairsToPass(iv, r, q)
			n.Message = n.message()
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no A/A measurement is gated by any rule", g.File)
	}
	return out, nil
}

// tooFewForNoise says why m's valid repeats make no interval, "" when
// they make one (stats.MinPairsForInterval in each arm).
func tooFewForNoise(m Measurement) string {
	least := stats.MinPairsForInterval
	switch {
	case m.Unpaired && (len(m.Reference) < least || len(m.Candidate) < least):
		return fmt.Sprintf("no estimate: the reference has n=%d valid repeats and this run n=%d, and an interval needs at least %d in each%s",
			len(m.Reference), len(m.Candidate), least, m.leftOut())
	case !m.Unpaired && len(m.Reference) < least:
		return fmt.Sprintf("no estimate: n=%d valid pairs, and an interval needs at least %d%s", len(m.Reference), least, m.leftOut())
	}
	return ""
}

// calibrationInterval is m's interval at conf, or q's repeated interval.
func calibrationInterval(m Measurement, conf float64, q *Sequential) (stats.RatioInterval, error) {
	if q == nil || m.Unpaired {
		return m.interval(conf)
	}
	b, err := q.Bounds()
	if err != nil {
		return stats.RatioInterval{}, err
	}
	return stats.RepeatedLogRatio(m.Reference, m.Candidate, b)
}

// sequentialPairsToPass is how many pairs in all an unchanged candidate
// with iv's spread needs for q's repeated interval to fit inside r's
// limit: the first look of q at which it would, at most the pairs there
// are when it fits already; else a fixed-sample lower bound, or -1.
func sequentialPairsToPass(iv stats.RatioInterval, r Rule, q *Sequential) int {
	b, err := q.Bounds()
	if err != nil {
		return -1
	}
	margin := math.Abs(math.Log(r.Limit()))
	for n := MinPairsToDecide; n <= q.Max; n++ {
		if stats.HalfWidth(b.At(n), iv.LogSD, n, iv.RunSD) <= margin {
			return n
		}
	}
	return stats.PairsToResolveRun(iv.LogSD, iv.RunSD, margin, 1-q.Alpha(), MaxPairsEstimate)
}

func noise(r Rule, m Measurement, iv stats.RatioInterval) Noise {
	h := iv.LogHalfWidth
	n := Noise{Scenario: m.Scenario, Metric: m.Metric, Rule: r, Interval: iv,
		Detectable: math.Exp(h) - 1, Biased: iv.Lo > 1 || iv.Hi < 1}
	if r.Worse == LowerIsWorse {
		n.Detectable = 1 - math.Exp(-h)
	}
	margin := math.Abs(math.Log(r.Limit()))
	n.CanPass = h <= margin
	n.PairsToPass = stats.PairsToResolveRun(iv.LogSD, iv.RunSD, margin, Confidence, MaxPairsEstimate)
	if n.CanPass {
		n.PairsToPass = min(n.PairsToPass, iv.N)
	}
	n.Message = n.message()
	return n
}

func (n Noise) message() string {
	where := fmt.Sprintf("%s:%d: %s: %s: ", n.Rule.File, n.Rule.Line, n.Scenario, n.Metric.Label())
	if n.Unestimated != "" {
		return where + n.Unestimated
	}
	det := fmt.Sprintf("detectable change %s at n=%d", pct(n.Detectable), n.Interval.N)
	limit := fmt.Sprintf("limit %s", pct(n.Rule.LimitPct/100))
	msg := where + det + " (" + limit + ")"
	if !n.CanPass {
		need := fmt.Sprintf("about %d %s would let it", n.PairsToPass, n.Unit())
		if n.PairsToPass < 0 {
			need = fmt.Sprintf("not even %d %s would let it", MaxPairsEstimate, n.Unit())
		}
		msg = fmt.Sprintf("%sthis gate cannot pass honestly: %s > %s; %s", where, det, limit, need)
	}
	if n.Biased {
		msg += fmt.Sprintf("; the A/A ratio %.3f (%.3f–%.3f) excludes 1: the arms differ even with the same build", n.Interval.Ratio, n.Interval.Lo, n.Interval.Hi)
	}
	return msg
}

// pct prints a fraction as a percentage, with one decimal below 10 %:
// "4.1 %", "5 %", "14 %".
func pct(f float64) string {
	if f < 0.0995 {
		return strings.TrimSuffix(fmt.Sprintf("%.1f", f*100), ".0") + " %"
	}
	return fmt.Sprintf("%.0f %%", f*100)
}

// Unit is what PairsToPass counts: "pairs", or "repeats in each run" when
// the runs were not paired (a stored reference).
func (n Noise) Unit() string {
	if n.Interval.Unpaired {
		return "repeats in each run"
	}
	return "pairs"
}
