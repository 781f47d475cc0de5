package verdict

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/meshbench/meshbench/framework/labels"
	"github.com/meshbench/meshbench/framework/stats"
)

// Observation is what one scenario measured: the meshed arm compared with the
// baseline arm, each metric summarised over repeats.
type Observation struct {
	Scenario string // as printed, e.g. "BenchmarkOneHop/c=32"
	// Labels are the scenario's (benchmark, c and its axes); rules with
	// match: are checked against them.
	Labels      labels.Set
	Path        Path // OneHop or TwoHop
	Concurrency int  // load-generator concurrency (connections), ≥ 1
	// Values holds each measured metric, in the metric's unit, as a median
	// with its interval over repeats. A metric absent here is not checked.
	Values map[Metric]stats.Summary
	// Unjudged holds, per metric, why its figure cannot be judged at all
	// (the CPU of a run whose CPU counters were diluted by idle time): a
	// rule that limits it counts it as undecided with that reason, never
	// as a pass or a breach, whether or not Values holds it.
	Unjudged map[Metric]string
	// PastKnee, when set, says why the rung is past a rate ladder's knee
	// (the meshed arm missed its rate or broke the SLO there): Check
	// leaves its latency limits unjudged, since its latency is a queue's
	// and where the knee falls moves with the machine's speed; its
	// throughput, CPU and memory are judged. Calibrate leaves its latency
	// out likewise where another run held the rung (CalibratedPoint's
	// PastKnee): a meshed arm that misses its rate no longer queues
	// what it cannot send, and reads a lower p99 than one that just holds
	// the rung (2026-12-02's runs read a p99 increase of 274–290 % at
	// 4000 req/s past the knee, 2026-12-07's 399–641 % holding it), so
	// counted as a quiet low end it left no room for a limit that fails a
	// doubling where the rung is held.
	PastKnee string
	// Window is the meshed arm's measured window (the shortest of its
	// runs'). Calibrate counts a run that measured a point in shorter
	// windows than another run by its medians alone.
	Window time.Duration
}

// MediansAlone is o with each figure's interval narrowed to its median:
// how Calibrate counts a run measured in shorter windows than the
// point's longest (see Calibrate).
func (o Observation) MediansAlone() Observation {
	values := make(map[Metric]stats.Summary, len(o.Values))
	for m, s := range o.Values {
		s.Lo, s.Hi = s.Median, s.Median
		values[m] = s
	}
	o.Values = values
	return o
}

// Unjudgeable is why o's metric m cannot be judged, if it cannot: its
// Unjudged reason, or the latency of a rung past the knee (PastKnee).
func (o Observation) Unjudgeable(m Metric) (string, bool) {
	if why, ok := o.Unjudged[m]; ok {
		return why, true
	}
	if o.PastKnee != "" && IsLatency(m) {
		return "the rung is past the rate ladder's knee (the meshed arm " + o.PastKnee + "): its latency is a queue's, and the knee is the finding, not a limit", true
	}
	return "", false
}

// Breach is a measured metric whose whole interval lies above the limit of
// the rule that applied (or whose median is not a number). It is an error
// that carries the measurement, so nothing measured is lost when a gate
// fails; find it in a joined error with errors.As.
type Breach struct {
	File     string        // fixture the rule came from
	Line     int           // line in File where the applied rule starts
	Scenario string        // Observation.Scenario
	Metric   Metric        // the metric over its limit
	Got      stats.Summary // the measurement, in Metric's unit
	Limit    float64       // the rule's limit, in Metric's unit
	// Why, set on an Undecided only, is why the metric was not judged
	// (Observation.Unjudged); Got is then what was measured, if anything.
	Why string
}

// Error returns one line, e.g.
//
//	fixtures/thresholds/local.yaml:4: BenchmarkOneHop/c=32: too high p50 delta: got 3.21ms (2.90–3.62, n=3) expected ≤ 1.50ms
//
// Every figure of the interval is above the limit.
func (b *Breach) Error() string {
	what := "too high " + b.Metric.info().Label
	if math.IsNaN(b.Got.Median) {
		what = b.Metric.info().Label + " is not a number"
	}
	return fmt.Sprintf("%s:%d: %s: %s: got %s %s expected ≤ %s",
		b.File, b.Line, b.Scenario, what, b.Metric.format(b.Got.Median), b.interval(), b.Metric.format(b.Limit))
}

// interval prints "(lo–hi, n=N)", with the confidence level when it has one,
// or "(n=N)" when there is no spread to show.
func (b *Breach) interval() string {
	g := b.Got
	if g.N <= 1 {
		return fmt.Sprintf("(n=%d)", g.N)
	}
	level := ""
	if g.Confidence > 0 {
		level = fmt.Sprintf(" at %g%%", math.Round(g.Confidence*1000)/10)
	}
	return fmt.Sprintf("(%s–%s%s, n=%d)", b.Metric.number(g.Lo), b.Metric.number(g.Hi), level, g.N)
}

// Undecided is a measured metric whose interval holds the limit: its
// median may sit on either side, but the repeats cannot tell whether the
// limit held. It does not fail a verdict; it says that more repeats
// (-count) would decide, and a point that stays undecided is a limit this
// machine cannot judge at that many repeats. A metric the observation
// could not judge at all (Observation.Unjudged) is undecided too, with
// Why set: more repeats do not decide it, valid figures do.
type Undecided Breach

// Error returns one line, e.g.
//
//	fixtures/thresholds/local.yaml:4: BenchmarkOneHop/c=32: undecided p50 delta: got 3.21ms (2.90–3.62, n=3), the limit 3.00ms lies inside; more repeats (-count) decide it
//
// or, for a metric that could not be judged (Why), e.g.
//
//	fixtures/thresholds/kind.yaml:4: BenchmarkOneHop/c=32: undecided sidecar CPU per 1k requests: got 812.0 CPU-ms (n=1), not judged: the CPU figures of 1 of the meshed arm's 1 runs are not valid (…)
func (u *Undecided) Error() string {
	b := (*Breach)(u)
	if u.Why != "" {
		got := ""
		if u.Got.N > 0 {
			got = fmt.Sprintf("got %s %s, ", u.Metric.format(u.Got.Median), b.interval())
		}
		return fmt.Sprintf("%s:%d: %s: undecided %s: %snot judged: %s", u.File, u.Line, u.Scenario, u.Metric.info().Label, got, u.Why)
	}
	return fmt.Sprintf("%s:%d: %s: undecided %s: got %s %s, the limit %s lies inside; more repeats (-count) decide it",
		u.File, u.Line, u.Scenario, u.Metric.info().Label, u.Metric.format(u.Got.Median), b.interval(), u.Metric.format(u.Limit))
}

// Uncovered is an observation that no rule of a fixture matches. It fails a
// verdict like a breach does: a fixture that silently leaves a scenario out
// would switch that scenario's gate off.
type Uncovered struct {
	File        string // fixture that has no matching rule
	Scenario    string // Observation.Scenario
	Path        Path   // Observation.Path
	Concurrency int    // Observation.Concurrency
}

// Error returns one line naming the scenario and what a rule must match.
func (u *Uncovered) Error() string {
	return fmt.Sprintf("%s: %s: no rule matches path %s at concurrency %d; add one, or this scenario is not gated",
		u.File, u.Scenario, u.Path, u.Concurrency)
}

// Verdict is the outcome of checking observations against a fixture.
type Verdict struct {
	// Checked counts comparisons: one per metric present in an observation
	// that a rule matched.
	Checked int
	// Breaches are the comparisons that failed, in observation order and
	// then in the order of Metrics.
	Breaches []*Breach
	// Undecided are the comparisons whose interval holds the limit, in
	// the same order. They do not fail the verdict.
	Undecided []*Undecided
	// Uncovered are the observations no rule matched, in observation order.
	Uncovered []*Uncovered
}

// Err returns nil when there is no breach and nothing uncovered, and
// otherwise an errors.Join of every breach, then every uncovered
// observation, one per line.
func (v Verdict) Err() error {
	errs := make([]error, 0, len(v.Breaches)+len(v.Uncovered))
	for _, b := range v.Breaches {
		errs = append(errs, b)
	}
	for _, u := range v.Uncovered {
		errs = append(errs, u)
	}
	return errors.Join(errs...)
}

// Check compares each observation with the first rule, in file order, whose
// path and concurrency match it, deciding on each metric's interval over
// repeats as the upgrade gate does: a metric breaches when the whole
// interval lies above the rule's limit (its low end above it; equal
// passes) or its median is NaN; it passes when the whole interval is at
// or below the limit; otherwise it is undecided. A metric the observation
// says cannot be judged (Unjudged) is undecided, with its reason (Why),
// whatever its figure. A summary of one repeat
// has no spread, so its one value decides. A metric missing from an
// observation's Values is skipped and counted nowhere, and so is one the
// rule does not limit (an optional metric it leaves out); keys other than
// Metrics are ignored. An observation that no rule matches is reported in
// Uncovered.
func (t *Thresholds) Check(obs []Observation) Verdict {
	var v Verdict
	for _, o := range obs {
		rule, ok := t.MatchObservation(o)
		if !ok {
			v.Uncovered = append(v.Uncovered, &Uncovered{File: t.File, Scenario: o.Scenario, Path: o.Path, Concurrency: o.Concurrency})
			continue
		}
		for _, m := range Metrics() {
			got, ok := o.Values[m]
			why, unjudged := o.Unjudgeable(m)
			limit, set := rule.Max(m)
			if (!ok && !unjudged) || !set {
				continue
			}
			v.Checked++
			b := &Breach{File: t.File, Line: rule.Line, Scenario: o.Scenario, Metric: m, Got: got, Limit: limit, Why: why}
			switch lo, hi := bounds(got); {
			case unjudged:
				v.Undecided = append(v.Undecided, (*Undecided)(b))
			case math.IsNaN(got.Median) || lo > limit:
				v.Breaches = append(v.Breaches, b)
			case hi > limit:
				v.Undecided = append(v.Undecided, (*Undecided)(b))
			}
		}
	}
	return v
}

// bounds returns the interval a decision uses: the summary's, widened to
// hold its median (a summary built by hand may leave Lo and Hi unset), and
// the median alone for one repeat.
func bounds(s stats.Summary) (lo, hi float64) {
	if s.N <= 1 {
		return s.Median, s.Median
	}
	return min(s.Lo, s.Median), max(s.Hi, s.Median)
}
