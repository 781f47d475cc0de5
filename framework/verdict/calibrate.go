package verdict

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/meshbench/meshbench/framework/labels"
	"github.com/meshbench/meshbench/framework/metric"
	"github.com/meshbench/meshbench/framework/stats"
)

// Regression is the change a calibrated limit must catch at every point,
// per metric: the meshed arm's p50 delta, p99 or sidecar CPU or RSS
// doubled, or its throughput halved. A fixture has teeth at a point when
// each of these, applied to every quiet run's interval, lies wholly beyond
// that point's limit.
const Regression = 2.0

// Calibration is a fixture computed from quiet runs: one rule per measured
// point (scenario labels, path and concurrency), each limit set between
// what the quiet runs' intervals reached and what a [Regression] would
// reach, then a rule per path for scenarios no run measured.
type Calibration struct {
	// Target is the target the fixture is for, as its "target:" line names it.
	Target string
	// CalibratedOn are the CPU models of the quiet runs, as the fixture's
	// calibratedOn: names them (Thresholds.OtherCPU); none when unknown.
	CalibratedOn []string
	// Units are the limits' units: metric.BaselineUnits for limits that
	// travel across machines, metric.MachineUnits for ms and CPU-ms.
	Units metric.Units
	// Points are the measured points' rules, one per point.
	Points []CalibratedPoint
	// Catchall are the rules for the scenarios no quiet run measured, one
	// per path: each metric at its loosest point limit on that path.
	Catchall []Limit
}

// CalibratedPoint is one point's rule with the quiet figures it came from.
type CalibratedPoint struct {
	// Scenario is the point's Observation.Scenario, e.g. "BenchmarkOneHop/c=32".
	Scenario string
	// Rule is the rule computed for the point: its match and limits.
	Rule Limit
	// Quiet is each quiet run's interval for each metric, in run order.
	Quiet map[Metric][]stats.Summary
	// Tight are the metrics whose quiet intervals' high ends leave no
	// room (MinRoom) below a Regression of their lowest end, but whose low
	// ends do: the limit sits √MinRoom below Regression times the lowest
	// low end (tightLimit), above every low end, so a quiet run never fails
	// there (it may be undecided) and a regression still does.
	Tight []Metric
	// Toothless are the metrics where even the low ends of the quiet
	// intervals leave no room below a Regression: their limit only keeps
	// the quiet runs passing (×1.25 over the highest interval end), and
	// more repeats or a quieter machine would be needed to give the point
	// teeth there.
	Toothless []Metric
	// Spared are the tight p99 forms whose twin has teeth outright
	// (spareTwins): their limit only keeps the quiet runs passing, as a
	// toothless one's does.
	Spared []Metric
	// Window is the longest window a run measured the point in; Shorter
	// are the shorter windows of the runs counted there by their medians
	// alone (LongestWindows), in run order.
	Window  time.Duration
	Shorter []time.Duration
	// PastKnee counts the runs whose rung was past a rate ladder's knee
	// here (Observation.PastKnee): their latency is left out of Quiet
	// where another run held the rung; where none did (HeldNowhere),
	// their latency is all there is, and the point's latency limits are
	// theirs, which the catch-all rules leave out.
	PastKnee int
	// runs counts the runs that measured the point; kneeQuiet is the
	// latency of those past the knee.
	runs      int
	kneeQuiet map[Metric][]stats.Summary
}

// calibrated returns the metrics a calibration in units u limits, in
// table order: every limit of the table but those set by hand
// (metric.Limit's NotCalibrated: meshCores) and those in the other units
// (metric.Limit's Units).
func calibrated(u metric.Units) []Metric {
	return metricsWhere(func(l metric.Limit) bool {
		return !l.NotCalibrated && (l.Units == metric.AnyUnits || l.Units == u)
	})
}

// severity maps a metric's value to a scale on which the Regression
// multiplies it, by how its limit compares the arms (metric.Overhead): a
// delta or the meshed arm's figure as it is (the p50 delta, CPU, RSS), an
// increase as the meshed/baseline ratio (the p99 increase), a loss as
// baseline/meshed (the throughput loss).
func severity(m Metric, v float64) float64 {
	switch m.info().Of {
	case metric.Increase:
		return 1 + v/100
	case metric.Loss:
		if v >= 100 {
			return math.Inf(1)
		}
		return 1 / (1 - v/100)
	}
	return v
}

// fromSeverity is severity's inverse.
func fromSeverity(m Metric, s float64) float64 {
	switch m.info().Of {
	case metric.Increase:
		return (s - 1) * 100
	case metric.Loss:
		return (1 - 1/s) * 100
	}
	return s
}

// Calibrate computes a fixture for target from quiet runs, each given as
// its observations, with limits in units u: metric.BaselineUnits (limits
// relative to the same run's baseline, which travel across machine
// speeds) or metric.MachineUnits (ms and CPU-ms, as fixtures were
// before). Every point any run measured gets a rule; at each
// metric the limit is the geometric mean of the highest interval end of
// the quiet runs and Regression times the lowest, on severity's scale, so
// that the quiet runs pass and a regression fails by the same factor. An
// observation without a metric, with one that is not finite, or with one
// it could not judge (Observation.Unjudged), is left out of that metric's
// figures; so is the latency of a rung past a rate ladder's knee
// (Observation.PastKnee), where another run held that rung. A run that
// measured a point in shorter windows than another run (LongestWindows)
// counts there by its medians alone. It fails when the runs measured
// nothing.
func Calibrate(target string, u metric.Units, runs ...[]Observation) (*Calibration, error) {
	if u != metric.BaselineUnits && u != metric.MachineUnits {
		return nil, fmt.Errorf("calibrate: units %d: want baseline or machine units", u)
	}
	c := &Calibration{Target: target, Units: u}
	index, longest := map[string]int{}, LongestWindows(runs...)
	for _, run := range runs {
		for _, o := range run {
			if len(o.Values) == 0 {
				continue
			}
			i, ok := index[o.Scenario]
			if !ok {
				i = len(c.Points)
				index[o.Scenario] = i
				c.Points = append(c.Points, CalibratedPoint{Scenario: o.Scenario, Window: longest[o.Scenario],
					Quiet: map[Metric][]stats.Summary{}, kneeQuiet: map[Metric][]stats.Summary{},
					Rule: Limit{Path: o.Path, Concurrency: Concurrency{Min: o.Concurrency, Max: o.Concurrency}, Match: pointLabels(o.Labels)}})
			}
			c.Points[i].add(o, u)
		}
	}
	if len(c.Points) == 0 {
		return nil, errors.New("calibrate: the runs hold no comparison of a meshed arm with its baseline")
	}
	for i := range c.Points {
		c.Points[i].heldOrNot()
		c.Points[i].limits(u)
		c.Points[i].spareTwins()
	}
	c.catchall()
	return c, nil
}

// add counts one run's observation of the point: by its medians alone
// when its windows were shorter than the point's longest; its latency
// aside when its rung was past the knee (heldOrNot decides).
func (p *CalibratedPoint) add(o Observation, u metric.Units) {
	if o.Window < p.Window {
		o = o.MediansAlone()
		p.Shorter = append(p.Shorter, o.Window)
	}
	p.runs++
	if o.PastKnee != "" {
		p.PastKnee++
	}
	for _, m := range calibrated(u) {
		if _, unjudged := o.Unjudged[m]; unjudged {
			continue // a figure no limit may judge sets none
		}
		s, ok := o.Values[m]
		switch {
		case !ok || math.IsNaN(s.Median) || math.IsInf(s.Median, 0):
		case o.PastKnee != "" && IsLatency(m):
			p.kneeQuiet[m] = append(p.kneeQuiet[m], s)
		default:
			p.Quiet[m] = append(p.Quiet[m], s)
		}
	}
}

// heldOrNot settles the latency of the runs past the knee: left out where
// another run held the rung, counted where none did (HeldNowhere).
func (p *CalibratedPoint) heldOrNot() {
	if p.HeldNowhere() {
		maps.Copy(p.Quiet, p.kneeQuiet)
	}
}

// HeldNowhere says every run that measured the point was past the knee.
func (p CalibratedPoint) HeldNowhere() bool {
	return p.PastKnee > 0 && p.PastKnee == p.runs
}

// LongestWindows is, per point (Observation.Scenario), the longest window
// any of the runs measured it in. A run that measured the point in
// shorter windows (before its scenario asked for more requests or a longer
// window) counts there by its medians alone: its level is its day's, which
// the limits must hold; its interval is the shorter windows' sampling,
// which the point no longer has.
func LongestWindows(runs ...[]Observation) map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, run := range runs {
		for _, o := range run {
			if len(o.Values) > 0 {
				out[o.Scenario] = max(out[o.Scenario], o.Window)
			}
		}
	}
	return out
}

// pointLabels are the labels a point's rule matches: all but c, which the
// rule's concurrency matches, and the path, which its path does.
func pointLabels(s labels.Set) map[string]string {
	m := s.Without(labels.Concurrency, labels.Path).Map()
	if len(m) == 0 {
		return nil
	}
	return m
}

// limits sets each metric's limit in units u from the quiet intervals.
func (p *CalibratedPoint) limits(u metric.Units) {
	for _, m := range calibrated(u) {
		qs := p.Quiet[m]
		if len(qs) == 0 && m.info().Optional && m.info().OneOf == "" {
			continue // not measured, not limited
		}
		if len(qs) == 0 {
			p.Toothless = append(p.Toothless, m)
			p.Rule.set(m, math.MaxFloat64)
			continue
		}
		high, low, lowHigh := math.Inf(-1), math.Inf(1), math.Inf(-1)
		for _, q := range qs {
			lo, hi := bounds(q)
			high, low = max(high, severity(m, hi)), min(low, severity(m, lo))
			lowHigh = max(lowHigh, severity(m, lo))
		}
		pass := high
		limit, teeth := pick(pass, Regression*low)
		if !teeth {
			// Keep the quiet runs from failing (their low ends within),
			// though they may be undecided, rather than lose the teeth.
			pass = lowHigh
			if teeth = roomBetween(pass, Regression*low); teeth {
				limit = tightLimit(Regression * low)
				p.Tight = append(p.Tight, m)
			} else {
				pass = high
				limit, _ = pick(pass, Regression*low)
				p.Toothless = append(p.Toothless, m)
			}
		}
		p.Rule.set(m, round(m, limit, pass, Regression*low, teeth))
	}
}

// p99Forms are the forms a point's p99 is limited in. A doubled meshed
// p99 doubles each of them alike, so one with teeth catches it.
var p99Forms = []Metric{P99DeltaPct, MeshedP99OverBaselineP50, MeshedP99Ms}

// spareTwins loosens a tight p99 form where another form of the point's
// p99 has teeth outright (neither tight nor toothless). The tight one
// catches no doubling its twin misses, and its limit lies below the quiet
// runs' high ends, so all it adds is a quiet run of another machine
// failed (the AMD EPYC's TwoHop/c=4 read a p99 increase of 206 %
// (200.2–270.3) against a tight ≤ 200 %, its meshed p99 over the
// baseline p50 well within): its limit becomes a toothless one's, 1.25
// over the quiet runs' highest end.
func (p *CalibratedPoint) spareTwins() {
	sharp := slices.ContainsFunc(p99Forms, func(m Metric) bool {
		_, limited := p.Rule.Max(m)
		return limited && !slices.Contains(p.Tight, m) && !slices.Contains(p.Toothless, m)
	})
	if !sharp {
		return
	}
	for _, m := range p99Forms {
		if !slices.Contains(p.Tight, m) {
			continue
		}
		high := math.Inf(-1)
		for _, q := range p.Quiet[m] {
			_, hi := bounds(q)
			high = max(high, severity(m, hi))
		}
		limit, _ := pick(high, math.Inf(1))
		p.Rule.set(m, round(m, limit, high, 0, false))
		p.Tight = slices.DeleteFunc(p.Tight, func(t Metric) bool { return t == m })
		p.Spared = append(p.Spared, m)
	}
}

// MinRoom is how far apart, as a ratio on severity's scale, what the quiet
// runs reached and what a regression would reach must be for a limit
// between them: at the geometric mean it leaves each side at least
// √MinRoom (14 %), so that a quiet rerun does not fail on a limit drawn
// too close to it.
const MinRoom = 1.3

// pick returns the limit between pass, what the quiet runs reached, and
// fail, what a regression would reach, on severity's scale, and whether
// there is room (MinRoom) between them.
func pick(pass, fail float64) (float64, bool) {
	if roomBetween(pass, fail) {
		return math.Sqrt(pass * fail), true
	}
	return 1.25 * max(pass, 0), false
}

// roomBetween says whether a limit fits between pass and fail: fail at
// least MinRoom times pass, both finite and above 0.
func roomBetween(pass, fail float64) bool {
	return pass > 0 && fail >= MinRoom*pass && !math.IsInf(fail, 0)
}

// tightLimit is a tight metric's limit: √MinRoom (14 %) below fail, what
// a regression of the lowest quiet end would reach, on severity's scale,
// as far above the quiet runs' low ends as teeth allow. At the geometric
// mean between the highest low end and fail, a quiet rerun of
// BenchmarkUserFlow whose interval lay 19 % above the others' low ends
// failed (its p50 delta 214–242 % against ≤ 210 %).
func tightLimit(fail float64) float64 {
	return fail / math.Sqrt(MinRoom)
}

// round returns the limit in m's unit with as few significant digits as
// keep it strictly between pass and fail (at least pass, for a toothless
// one).
func round(m Metric, s, pass, fail float64, teeth bool) float64 {
	for digits := 2; digits <= 6; digits++ {
		v, _ := strconv.ParseFloat(strconv.FormatFloat(fromSeverity(m, s), 'g', digits, 64), 64)
		r := severity(m, v)
		if r >= pass && (!teeth || r < fail) {
			return v
		}
	}
	return fromSeverity(m, s)
}

// set sets the rule's limit for m.
func (l *Limit) set(m Metric, v float64) {
	if l.Allowed == nil {
		l.Allowed = map[Metric]float64{}
	}
	l.Allowed[m] = v
}

// catchall adds one rule per measured path, matching any concurrency and
// labels, at the loosest limit of that path's points.
func (c *Calibration) catchall() {
	for _, path := range []Path{OneHop, TwoHop} {
		var rule *Limit
		for _, p := range c.Points {
			if p.Rule.Path != path {
				continue
			}
			if rule == nil {
				rule = &Limit{Path: path, Concurrency: Concurrency{Min: 1}}
			}
			for _, m := range calibrated(c.Units) {
				v, ok := p.Rule.Max(m)
				if !ok {
					continue // an optional metric this point leaves out
				}
				if p.HeldNowhere() && IsLatency(m) {
					continue // a saturated arm's latency, no scenario's limit
				}
				cur, _ := rule.Max(m)
				rule.set(m, max(cur, v))
			}
		}
		if rule != nil {
			c.Catchall = append(c.Catchall, *rule)
		}
	}
}

// YAML writes the calibration as a fixture that [Parse] reads back to the
// same rules: header as comments, then each point's rule under a comment
// of its quiet figures, then the catch-all rules.
func (c *Calibration) YAML(header string) []byte {
	var b bytes.Buffer
	for _, line := range strings.Split(strings.TrimRight(header, "\n"), "\n") {
		fmt.Fprintln(&b, strings.TrimRight("# "+line, " "))
	}
	fmt.Fprintf(&b, "target: %s\n", c.Target)
	if len(c.CalibratedOn) > 0 {
		quoted := make([]string, len(c.CalibratedOn))
		for i, cpu := range c.CalibratedOn {
			quoted[i] = strconv.Quote(cpu)
		}
		fmt.Fprintf(&b, "calibratedOn: [%s]\n", strings.Join(quoted, ", "))
	}
	fmt.Fprintf(&b, "limits:\n")
	for _, p := range c.Points {
		fmt.Fprintf(&b, "  # %s, quiet: %s\n", p.Scenario, p.quietLine())
		if len(p.Shorter) > 0 {
			fmt.Fprintf(&b, "  # %d of the runs measured %s windows here, not %v: each counts by its medians alone (its interval was the shorter windows' sampling)\n", len(p.Shorter), joinWindows(p.Shorter), p.Window)
		}
		if p.PastKnee > 0 {
			fmt.Fprintf(&b, "  # %s\n", p.kneeLine())
		}
		if len(p.Tight) > 0 {
			fmt.Fprintf(&b, "  # tight for %s: the quiet intervals' high ends leave no room below ×%g of their lowest end, so the limit sits above their low ends: quiet runs may be undecided there, never failed; a regression still fails\n", joinMetrics(p.Tight), Regression)
		}
		if len(p.Spared) > 0 {
			fmt.Fprintf(&b, "  # spared %s: tight, but another form of the p99 has teeth here, so the limit only keeps the quiet runs passing (×1.25 over their highest end)\n", joinMetrics(p.Spared))
		}
		if len(p.Toothless) > 0 {
			fmt.Fprintf(&b, "  # no teeth for %s: even the quiet intervals' low ends leave no room below ×%g of the lowest, so the limit only keeps the quiet runs passing (×1.25 over their highest end)\n", joinMetrics(p.Toothless), Regression)
		}
		writeRule(&b, p.Rule)
	}
	for _, r := range c.Catchall {
		fmt.Fprintf(&b, "  # any other scenario on %s: the loosest limit above for that path\n", r.Path)
		writeRule(&b, r)
	}
	return b.Bytes()
}

// kneeLine says how the runs past the rate ladder's knee counted.
func (p CalibratedPoint) kneeLine() string {
	if p.HeldNowhere() {
		return "every run was past the rate ladder's knee here (the meshed arm missed its rate or broke the SLO): the latency limits are a saturated arm's, which a run past the knee is not judged on, and the catch-all rules leave them out"
	}
	return fmt.Sprintf("%d of the runs were past the rate ladder's knee here: their latency is left out (a saturated arm's, lower than one that holds the rung) and their throughput, CPU and memory count", p.PastKnee)
}

// quietLine prints each metric's quiet intervals, run by run.
func (p CalibratedPoint) quietLine() string {
	var parts []string
	for _, m := range Metrics() {
		var runs []string
		for _, q := range p.Quiet[m] {
			lo, hi := bounds(q)
			runs = append(runs, fmt.Sprintf("%s (%s–%s)", m.number(q.Median), m.number(lo), m.number(hi)))
		}
		if len(runs) > 0 {
			parts = append(parts, fmt.Sprintf("%s %s%s", m.info().Label, strings.Join(runs, ", "), strings.TrimSpace(m.info().Unit)))
		}
	}
	return strings.Join(parts, "; ")
}

// joinWindows names the distinct windows of ws, in order.
func joinWindows(ws []time.Duration) string {
	var names []string
	for _, w := range ws {
		if !slices.Contains(names, w.String()) {
			names = append(names, w.String())
		}
	}
	return strings.Join(names, ", ")
}

func joinMetrics(ms []Metric) string {
	return strings.Join(toStrings(ms), ", ")
}

// writeRule writes one rule in fixture syntax.
func writeRule(b *bytes.Buffer, l Limit) {
	first := "  - "
	if len(l.Match) > 0 {
		keys := slices.Sorted(maps.Keys(l.Match))
		kv := make([]string, len(keys))
		for i, k := range keys {
			kv[i] = fmt.Sprintf("%s: %q", k, l.Match[k])
		}
		fmt.Fprintf(b, "%smatch: {%s}\n", first, strings.Join(kv, ", "))
		first = "    "
	}
	conc := l.Concurrency.String()
	if l.Concurrency.Min == 1 && l.Concurrency.Max == 0 {
		conc = "*"
	}
	fmt.Fprintf(b, "%spath: %s\n    concurrency: %q\n", first, l.Path, conc)
	for _, m := range Metrics() {
		v, ok := l.Max(m)
		if !ok {
			continue // a limit of the other units, or an optional one left out
		}
		fmt.Fprintf(b, "    %s: %s\n", m, strconv.FormatFloat(v, 'g', -1, 64))
	}
}

// Slack is how far a measured figure sits below limit on m's severity
// scale (the scale a Regression multiplies): limit over the high end of
// got's interval. Above 1 the whole interval passes with that factor to
// spare (1.25: the figure could grow 25 % and still pass); below 1 it
// does not. It is NaN when got has no figure.
func Slack(m Metric, got stats.Summary, limit float64) float64 {
	if got.N == 0 {
		return math.NaN()
	}
	_, hi := bounds(got)
	return severity(m, limit) / severity(m, hi)
}
