package gate

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/meshbench/meshbench/framework/stats"
)

// Confidence is the two-sided confidence level of the ratio interval a
// single decision rests on: a candidate exactly at its limit is failed (or
// passed) wrongly at most 2.5 % of the time.
const Confidence = 0.95

// MaxPairsEstimate bounds the pairs-needed estimate: a decision that would
// need more is reported with PairsNeeded -1.
const MaxPairsEstimate = 1000

// Outcome is a gate's answer. Outcomes are ordered: the worst decision
// decides a verdict, Fail over Inconclusive over Pass.
type Outcome int

const (
	// Pass: the whole interval lies inside the limit.
	Pass Outcome = iota
	// Inconclusive: the interval straddles the limit.
	Inconclusive
	// Fail: the whole interval lies beyond the limit.
	Fail
)

// Exit codes of a gated run, one per outcome; ExitError is for a run that
// could not decide at all (bad fixture, runs that are not comparable).
const (
	ExitPass         = 0
	ExitFail         = 1
	ExitError        = 2
	ExitInconclusive = 3
)

// String is the outcome's name: "pass", "inconclusive" or "fail".
func (o Outcome) String() string {
	switch o {
	case Pass:
		return "pass"
	case Inconclusive:
		return "inconclusive"
	case Fail:
		return "fail"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// ExitCode maps an outcome to the process exit code: 0 pass, 1 fail (what
// `go test` uses for a failure), 3 inconclusive (2 is the go command's own
// code for a build or usage error, and ExitError here).
func (o Outcome) ExitCode() int {
	switch o {
	case Pass:
		return ExitPass
	case Fail:
		return ExitFail
	case Inconclusive:
		return ExitInconclusive
	}
	return ExitError
}

// Measurement is one metric of one scenario over paired repeats:
// Reference[i] and Candidate[i] were measured back to back, so drift of the
// machine hits both alike. Values are in the metric's unit and > 0; a
// pair with one that is not (0, NaN) is left out of the decision.
type Measurement struct {
	// Scenario is the scenario's labels.
	Scenario Labels
	// Metric is the figure measured.
	Metric Metric
	// Reference and Candidate are each arm's repeats, in the metric's unit.
	Reference, Candidate []float64
	// Unpaired says the repeats were not measured back to back (a stored
	// reference run against this one): Reference and Candidate are two
	// independent samples, which may differ in size, and the interval is
	// Welch's (stats.UnpairedLogRatio) rather than the paired one. The
	// reference sample is the stored run's, fixed; only the candidate's
	// grows (UntilConclusive), and PairsNeeded counts candidate repeats.
	Unpaired bool
	// LeftOut, when set, says which repeats were left out of this metric
	// alone and why, e.g. "1 pair left out: its CPU figures are not valid
	// (cpu-diluted)"; the decision's reason ends with it. Repeats left out
	// count neither for a pass nor for a fail: too few left make the
	// decision inconclusive.
	LeftOut string
}

// Repeats is how many repeats m has that can still grow: its pairs, or for
// unpaired repeats the candidate's (the reference's are fixed).
func (m Measurement) Repeats() int {
	if m.Unpaired {
		return len(m.Candidate)
	}
	return len(m.Reference)
}

// interval is the candidate/reference ratio of m with its interval at
// level conf: paired, or Welch's for unpaired repeats.
func (m Measurement) interval(conf float64) (stats.RatioInterval, error) {
	if m.Unpaired {
		return stats.UnpairedLogRatio(m.Reference, m.Candidate, conf)
	}
	return stats.PairedLogRatio(m.Reference, m.Candidate, conf)
}

// MinPairsToDecide is the fewest pairs (or, against a stored reference,
// repeats in each run) the gate decides on. Two pairs make an interval
// (stats.MinPairsForInterval), but its spread rests on one degree of
// freedom: two pairs that agree by chance, or share a bias, give a narrow
// interval that a third pair would have widened. Under contention an A/A
// gate with two valid open-loop pairs failed p99 at ×1.31 (1.24–1.39).
const MinPairsToDecide = 3

// Decision is the gate's answer for one metric of one scenario. It is an
// error, so a failing or inconclusive one can travel in a joined error
// while the verdict keeps them all.
type Decision struct {
	// Scenario is the scenario's labels.
	Scenario Labels
	// Metric is the figure decided on.
	Metric Metric
	Rule   Rule    // the rule applied
	Limit  float64 // Rule.Limit(): the limit on candidate/reference
	// Interval is the candidate/reference ratio with its confidence
	// interval; zero when fewer than MinPairsToDecide pairs.
	Interval stats.RatioInterval
	// Outcome is the decision: pass, inconclusive or fail.
	Outcome Outcome
	// PairsNeeded is, for an inconclusive decision, how many more pairs
	// would settle it if the ratio and its spread stay as observed; 0 when
	// conclusive, -1 when no number of pairs up to MaxPairsEstimate would
	// (the estimate sits on the limit). For unpaired repeats it counts this
	// run's (candidate) repeats against the fixed stored reference, and is
	// -1 also when they alone cannot settle it: see ReferenceTooFew.
	PairsNeeded int
	// ReferenceTooFew is set on an inconclusive unpaired decision that more
	// candidate repeats alone cannot settle: the stored reference's own
	// spread, at its number of repeats, is wider than the ratio's distance
	// from the limit (stats.ReferenceHalfWidth), or it has fewer than two
	// valid repeats. The reference must be rerun with a higher -count.
	ReferenceTooFew bool
	// ZeroSpread is set on a decision held inconclusive because its
	// ratios did not vary at all, with fewer pairs than a sign test needs
	// (SignTestPairs); PairsNeeded then counts the pairs it needs.
	ZeroSpread bool `json:",omitempty"`
	// Outlook is, for an inconclusive paired sequential decision short of
	// its budget, whether the budget can still decide it; nil otherwise.
	Outlook *Outlook `json:",omitempty"`
	// Reference and Candidate are every pair measured (the stored run's
	// and this run's repeats, when unpaired), in the metric's unit, in the
	// order measured: a sequential decision rests on the first
	// Interval.N of them.
	Reference []float64 `json:"reference,omitempty"`
	Candidate []float64 `json:"candidate,omitempty"`
	// Reason is the one-line message, e.g. "fixtures/gates/local.yaml:4:
	// c=8/path=one-hop: too high sidecar CPU per 1k req: candidate/reference
	// 1.42 (1.31–1.55, n=6) expected ≤ 1.10".
	Reason string
}

// Error is the decision's Reason.
func (d *Decision) Error() string { return d.Reason }

// Verdict is every decision of a gated run and their overall outcome.
type Verdict struct {
	Decisions []Decision // in the order of the measurements
	Outcome   Outcome    // the worst decision's
	// Confidence is the level each interval was computed at: with
	// Sequential set, the level at which each decision's repeated
	// intervals cover its ratio at every look at once.
	Confidence float64
	// Sequential is the plan of a sequential verdict (DecideSequential).
	Sequential *Sequential `json:",omitempty"`
}

// ExitCode is the overall outcome's exit code.
func (v Verdict) ExitCode() int { return v.Outcome.ExitCode() }

// Err returns the failing and inconclusive decisions joined, as
// [*Decision] errors, or nil when everything passed.
func (v Verdict) Err() error {
	var errs []error
	for i := range v.Decisions {
		if v.Decisions[i].Outcome != Pass {
			errs = append(errs, &v.Decisions[i])
		}
	}
	return errors.Join(errs...)
}

// Decide judges every measurement whose metric the fixture gates on its
// scenario, at [Confidence]. It fails on input that cannot be judged: an
// unknown metric, a measurement given twice, a gated metric missing from a
// scenario that has measurements, unpaired repeats, or nothing gated at
// all. A value that is not a finite number > 0 leaves its pair out of its
// metric's decision, which says so (Measurement.usable).
func (g *Gate) Decide(ms []Measurement) (Verdict, error) {
	return g.decide(ms, Confidence)
}

func (g *Gate) decide(ms []Measurement, conf float64) (Verdict, error) {
	if err := g.checkMeasurements(ms); err != nil {
		return Verdict{}, err
	}
	return g.decideEach(ms, Verdict{Confidence: conf}, func(r Rule, m Measurement) (Decision, error) { return decideOne(r, m, conf) })
}

// decideEach adds to v the decision one makes of each measurement a rule
// gates, and their worst outcome; it fails when one fails or nothing is
// gated.
func (g *Gate) decideEach(ms []Measurement, v Verdict, one func(Rule, Measurement) (Decision, error)) (Verdict, error) {
	for _, m := range ms {
		r, ok := g.Rule(m.Scenario, m.Metric)
		if !ok {
			continue
		}
		d, err := one(r, m.usable())
		if err != nil {
			return Verdict{}, err
		}
		v.Decisions = append(v.Decisions, d)
		v.Outcome = max(v.Outcome, d.Outcome)
	}
	if len(v.Decisions) == 0 {
		return Verdict{}, fmt.Errorf("%s: no measurement is gated by any rule", g.File)
	}
	return v, nil
}

// checkMeasurements rejects input the gate cannot judge.
func (g *Gate) checkMeasurements(ms []Measurement) error {
	type key struct {
		scenario string
		metric   Metric
	}
	seen := map[key]bool{}
	scenarios := map[string]Labels{}
	for _, m := range ms {
		if m.Metric.Worse() == 0 {
			return fmt.Errorf("gate: %s: unknown metric %q", m.Scenario, m.Metric)
		}
		k := key{m.Scenario.String(), m.Metric}
		if seen[k] {
			return fmt.Errorf("gate: %s: %s measured twice", m.Scenario, m.Metric)
		}
		seen[k] = true
		scenarios[k.scenario] = m.Scenario
		if !m.Unpaired && len(m.Reference) != len(m.Candidate) {
			return fmt.Errorf("gate: %s: %s: %d reference repeats but %d candidate: repeats must come in pairs", m.Scenario, m.Metric, len(m.Reference), len(m.Candidate))
		}
	}
	for name, l := range scenarios {
		for _, met := range g.Gated(l) {
			if !seen[key{name, met}] {
				return fmt.Errorf("gate: %s: %s is gated by %s:%d but was not measured", name, met, g.File, g.Rules[g.ruleIndex(l, met)].Line)
			}
		}
	}
	return nil
}

// decideOne judges one measurement against its rule.
func decideOne(r Rule, m Measurement, conf float64) (Decision, error) {
	d := Decision{Scenario: m.Scenario, Metric: m.Metric, Rule: r, Limit: r.Limit(), Outcome: Inconclusive, Reference: m.Reference, Candidate: m.Candidate}
	prefix := fmt.Sprintf("%s:%d: %s: ", r.File, r.Line, m.Scenario)
	if reason, ok := d.tooFew(m); !ok {
		d.Reason = prefix + reason + m.leftOut()
		return d, nil
	}
	iv, err := m.interval(conf)
	if err != nil {
		return Decision{}, fmt.Errorf("gate: %s: %s: %w", m.Scenario, m.Metric, err)
	}
	iv = iv.WithRunSD(r.RunSD)
	d = judge(r, m, iv)
	switch {
	case d.Outcome != Inconclusive || d.ZeroSpread:
	case m.Unpaired:
		d.PairsNeeded, d.ReferenceTooFew = repeatsNeeded(m, iv, d.Limit, conf)
	default:
		d.PairsNeeded = pairsNeeded(iv, d.Limit, conf)
	}
	d.Reason = prefix + d.sentence() + m.leftOut()
	return d, nil
}

// usable is m without the repeats whose value is not a finite number > 0
// (a 0 or NaN in a valid run: a counter that did not move, a window with
// no latency samples): for paired repeats the whole pair goes, from this
// metric only, and LeftOut says so. Such a value has no log ratio; it
// leaves that pair out of the decision rather than erroring the verdict.
func (m Measurement) usable() Measurement {
	ok := func(x float64) bool { return x > 0 && !math.IsInf(x, 0) }
	var ref, cand []float64
	bad := 0
	if m.Unpaired {
		notOK := func(x float64) bool { return !ok(x) }
		ref, cand = slices.DeleteFunc(slices.Clone(m.Reference), notOK), slices.DeleteFunc(slices.Clone(m.Candidate), notOK)
		bad = len(m.Reference) + len(m.Candidate) - len(ref) - len(cand)
	} else {
		for i := range min(len(m.Reference), len(m.Candidate)) {
			if ok(m.Reference[i]) && ok(m.Candidate[i]) {
				ref, cand = append(ref, m.Reference[i]), append(cand, m.Candidate[i])
			} else {
				bad++
			}
		}
	}
	if bad == 0 {
		return m
	}
	what := map[bool]string{false: "pair", true: "pairs"}[bad > 1]
	if m.Unpaired {
		what = map[bool]string{false: "repeat", true: "repeats"}[bad > 1]
	}
	note := fmt.Sprintf("%d %s left out of %s: a value of 0 or NaN, which has no ratio", bad, what, m.Metric.Label())
	m.Reference, m.Candidate, m.LeftOut = ref, cand, strings.TrimPrefix(m.LeftOut+"; "+note, "; ")
	return m
}

// leftOut is "; " and LeftOut, the end of a decision's reason, or "".
func (m Measurement) leftOut() string {
	if m.LeftOut == "" {
		return ""
	}
	return "; " + m.LeftOut
}

// tooFew fills in d for a measurement with too few repeats for an
// interval, and returns its message and false; true when there are enough.
func (d *Decision) tooFew(m Measurement) (string, bool) {
	least := MinPairsToDecide
	label := m.Metric.Label()
	switch {
	case m.Unpaired && len(m.Reference) < least:
		d.PairsNeeded, d.ReferenceTooFew = -1, true
		return fmt.Sprintf("inconclusive %s: the stored reference has n=%d, and an interval needs at least %d repeats in each run; "+
			"more repeats of this run cannot settle it: rerun the reference with a higher -count", label, len(m.Reference), least), false
	case m.Unpaired && len(m.Candidate) < least:
		d.PairsNeeded = least - len(m.Candidate)
		return fmt.Sprintf("inconclusive %s: this run has n=%d, and an interval needs at least %d repeats in each run", label, len(m.Candidate), least), false
	case !m.Unpaired && len(m.Reference) < least:
		d.PairsNeeded = least - len(m.Reference)
		return fmt.Sprintf("inconclusive %s: n=%d, and an interval needs at least %d pairs", label, len(m.Reference), least), false
	}
	return "", true
}

// pairsNeeded estimates the further pairs that would settle a straddling
// interval, holding the observed log mean m and spread s: the smallest
// N > n with t(N-1)·s/√N < |m - ln limit|, minus n (see
// stats.PairsToResolve); -1 when none up to MaxPairsEstimate.
func pairsNeeded(iv stats.RatioInterval, limit, conf float64) int {
	total := stats.PairsToResolveRun(iv.LogSD, iv.RunSD, math.Abs(iv.LogMean-math.Log(limit)), conf, MaxPairsEstimate)
	if total < 0 {
		return -1
	}
	return max(1, total-iv.N)
}

// repeatsNeeded is pairsNeeded for unpaired repeats, where the stored
// reference's are fixed and only this run's (the candidate's) can grow:
// the smallest N > n_b at which Welch's half-width, holding both samples'
// log variances, falls below |m - ln limit|, minus n_b
// (stats.CandidateRepeatsToResolve); -1 when none up to MaxPairsEstimate.
// tooFew is set when that is because the reference's own half-width
// (stats.ReferenceHalfWidth) is at least the distance: no number of
// candidate repeats can narrow the interval past the reference's spread.
//
// A run-level SD (iv.RunSD) takes its share of the distance first: the
// half-width t·√(se² + runSD²) clears d where t·se clears √(d² −
// (z·runSD)²), with the normal quantile z for t (about: t ≥ z), and
// none does when z·runSD ≥ d.
func repeatsNeeded(m Measurement, iv stats.RatioInterval, limit, conf float64) (needed int, tooFew bool) {
	dist := math.Abs(iv.LogMean - math.Log(limit))
	if iv.RunSD > 0 {
		floor := distuv.UnitNormal.Quantile((1+conf)/2) * iv.RunSD
		if floor >= dist {
			return -1, false
		}
		dist = math.Sqrt(dist*dist - floor*floor)
	}
	total := stats.CandidateRepeatsToResolve(m.Reference, m.Candidate, dist, conf, MaxPairsEstimate)
	if total < 0 {
		return -1, dist > 0 && stats.ReferenceHalfWidth(m.Reference, conf) >= dist
	}
	return max(1, total-len(m.Candidate)), false
}

// MaxLogHalfWidth is the widest interval, as a half-width on the log
// scale, that the gate prints as an interval: ln 2, an interval from half
// the ratio to twice it. One wider cannot tell a halving from a doubling,
// the changes every gate must tell apart, and says nothing; at 3 pairs a
// sequential look's boundary is so wide that a p99 ratio of 1.72 printed
// as "1.72 (0.00–2120833.32)". Such an interval is shown as "too few
// pairs" instead, with the count that would give a usable one
// (UsablePairs).
const MaxLogHalfWidth = math.Ln2

// TooWide says whether an undecided paired interval is too wide to print
// (MaxLogHalfWidth).
func (d Decision) TooWide() bool {
	iv := d.Interval
	return d.Outcome == Inconclusive && iv.N > 0 && !iv.Unpaired && iv.LogHalfWidth > MaxLogHalfWidth
}

// UsablePairs is how many pairs in all would give the decision a usable
// interval, if the spread holds: one no wider than the limit's own
// distance from 1, so that a candidate equal to the reference would pass.
// From the observed log spread s and the t quantile at the decision's
// level: the smallest N with t(N-1)·s/√N < |ln limit|
// (stats.PairsToResolve); -1 when none up to MaxPairsEstimate. For a
// sequential decision it is a lower bound: its boundaries are wider than
// t's.
func (d Decision) UsablePairs() int {
	iv := d.Interval
	return stats.PairsToResolveRun(iv.LogSD, iv.RunSD, math.Abs(math.Log(d.Limit)), iv.Confidence, MaxPairsEstimate)
}

// tooFewWords is the words that stand for a TooWide interval: "too few
// pairs (n=3; about 41 would give a usable interval)".
func (d Decision) tooFewWords() string {
	if n := d.UsablePairs(); n > 0 {
		return fmt.Sprintf("too few pairs (n=%d; about %d would give a usable interval)", d.Interval.N, n)
	}
	return fmt.Sprintf("too few pairs (n=%d; more than %d would be needed for a usable interval)", d.Interval.N, MaxPairsEstimate)
}

// sentence is the decision's message after its location.
func (d *Decision) sentence() string {
	op, bad := "≤", "too high"
	if d.Rule.Worse == LowerIsWorse {
		op, bad = "≥", "too low"
	}
	iv := d.Interval
	dec := decimals(iv.Lo, iv.Hi, d.Limit)
	n, pair, pairs := fmt.Sprintf("n=%d", iv.N), "pair", "pairs"
	if iv.Unpaired {
		n, pair, pairs = fmt.Sprintf("n=%d unpaired", iv.N), "repeat of this run", "repeats of this run"
		if iv.NReference != iv.NCandidate {
			n = fmt.Sprintf("n=%d stored, %d this run, unpaired", iv.NReference, iv.NCandidate)
		}
	}
	got := fmt.Sprintf("candidate/reference %.*f (%.*f–%.*f, %s)", dec, iv.Ratio, dec, iv.Lo, dec, iv.Hi, n)
	if d.TooWide() {
		got = fmt.Sprintf("candidate/reference %.*f, %s", dec, iv.Ratio, d.tooFewWords())
	}
	limit := fmt.Sprintf("%s %.*f", op, dec, d.Limit)
	switch d.Outcome {
	case Fail:
		return fmt.Sprintf("%s %s: %s expected %s", bad, d.Metric.Label(), got, limit)
	case Pass:
		return fmt.Sprintf("%s within limit: %s expected %s", d.Metric.Label(), got, limit)
	}
	if d.ZeroSpread {
		return fmt.Sprintf("inconclusive %s: candidate/reference %.*f at every one of %s: zero spread, so the figures are quantised and an interval says nothing; "+
			"without a spread, %d pairs all on one side of %s decide it (sign test: SignTestPairs)", d.Metric.Label(), dec, iv.Ratio, n, iv.N+d.PairsNeeded, limit)
	}
	more := fmt.Sprintf("about %d more %s would settle it if the spread holds", d.PairsNeeded, pairs)
	switch {
	case d.PairsNeeded == 1:
		more = fmt.Sprintf("about 1 more %s would settle it if the spread holds", pair)
	case d.ReferenceTooFew:
		more = fmt.Sprintf("more repeats of this run cannot settle it: the stored reference's own spread at n=%d is wider than the ratio's distance from the limit; "+
			"rerun the reference with a higher -count", iv.NReference)
	case d.Outlook != nil && d.Outlook.Futile:
		more = d.Outlook.sentence(d.PairsNeeded)
	case d.PairsNeeded < 0:
		more = fmt.Sprintf("more than %d %s would be needed: the ratio sits on the limit", MaxPairsEstimate, pairs)
	}
	return fmt.Sprintf("inconclusive %s: %s straddles %s; %s", d.Metric.Label(), got, limit, more)
}

// decimals returns how many decimals (2 to 4) print the interval ends and
// the limit distinctly when they differ, so that "1.10–1.10" never hides
// which side of 1.10 an end is on.
func decimals(lo, hi, limit float64) int {
	for dec := 2; dec < 4; dec++ {
		f := func(x float64) string { return fmt.Sprintf("%.*f", dec, x) }
		if (f(lo) != f(limit) || lo == limit) && (f(hi) != f(limit) || hi == limit) && (f(lo) != f(hi) || lo == hi) {
			return dec
		}
	}
	return 4
}
