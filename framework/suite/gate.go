package suite

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/framework/gate"
	"github.com/meshbench/meshbench/framework/labels"
	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/metric"
	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/validity"
)

// loadGate decodes the gate fixture, checked against the target, before
// anything runs. Without a candidate or a stored reference there is
// nothing to gate.
func (s *Suite) loadGate() error {
	if (s.Config.Candidate == "" && s.Config.Reference == "") || s.Config.Gate == "none" {
		return nil
	}
	if _, err := os.Stat(s.Config.Gate); err != nil {
		return fmt.Errorf("-gate: no gate fixture %s for the %s target (%w): a gate needs limits to decide on; pass -gate FILE (fixtures/gates/ has examples), or -gate none to measure the arms without a decision",
			s.Config.Gate, s.Config.Target, errors.Unwrap(err))
	}
	g, err := gate.Load(s.Config.Gate)
	if err != nil {
		return err
	}
	if err := g.CheckTarget(s.fixtureTarget()); err != nil {
		return err
	}
	if err := g.CheckValues(nil, s.ruleDomains()); err != nil {
		return err
	}
	if err := s.checkControlPlaneRules(g); err != nil {
		return err
	}
	s.gate = g
	return nil
}

// checkControlPlaneRules refuses a rule on a control-plane metric that
// this run will not measure: without -control-plane-changes (and, with the
// idle pods added, -control-plane-pods) no run has it, and the gate would
// spend its budget to say inconclusive.
func (s *Suite) checkControlPlaneRules(g *gate.Gate) error {
	var errs []error
	for _, r := range g.Rules {
		d, ok := metric.Lookup(string(r.Metric))
		switch {
		case !ok || d.ControlPlane == 0:
		case s.Config.ControlPlaneChanges <= 0:
			errs = append(errs, fmt.Errorf("%s:%d: metric %s is the control plane's, measured only with -control-plane-changes (and -mesh=%s on a cluster)",
				r.File, r.Line, r.Metric, strings.Join(mesh.Propagators(), " or -mesh=")))
		case d.ControlPlane > 1 && s.Config.ControlPlanePods <= 0:
			errs = append(errs, fmt.Errorf("%s:%d: metric %s is measured with idle pods added: set -control-plane-pods", r.File, r.Line, r.Metric))
		}
	}
	return errors.Join(errs...)
}

// ruleDomains are the values a fixture rule's labels are checked against
// before anything runs, whatever the run measures: gate.Domains (loop,
// path), and benchmark: every benchmark of the package (planRun), when
// the run knows them.
func (s *Suite) ruleDomains() map[string][]string {
	d := maps.Clone(gate.Domains)
	if len(s.plan.all) > 0 {
		d[labels.Benchmark] = s.plan.all
	}
	return d
}

// checkRuleValues is the part of the fixture checks that needs the
// points of the benchmark about to run: a rule's value for one of its
// axes (load: opn) that none of them takes. When -bench selects several
// benchmarks, one's values say nothing of another's, so only the
// domains (ruleDomains) are checked.
func (s *Suite) checkRuleValues(points []gate.Labels, check func([]gate.Labels, map[string][]string) error) error {
	if len(s.plan.benches) > 1 {
		points = nil
	}
	return check(points, s.ruleDomains())
}

// gateLabels are what gate rules match: the scenario's labels without the
// benchmark's name and the arm, plus path and loop (open: a fixed rate;
// closed: maximum rate).
func gateLabels(r report.Record) gate.Labels {
	l := gate.Labels(r.Labels.Without(labels.Arm).Map())
	l[labels.Path] = string(r.Path)
	l["loop"] = "closed"
	if r.Load.Options.QPS > 0 {
		l["loop"] = "open"
	}
	return l
}

// gateValue is one run's figure for a gated metric, in the metric's unit.
func gateValue(r report.Record, m gate.Metric) float64 { return m.Value(r.Run) }

// gateMeasurements pairs every scenario's reference and candidate runs of
// the same round, both valid, for each metric the fixture gates there
// (roundMeasurements).
func gateMeasurements(g *gate.Gate, recs []report.Record) []gate.Measurement {
	byRound := map[string]map[int]map[testbed.Arm]report.Record{}
	var order []string
	for _, r := range recs {
		k := r.Labels.Without(labels.Arm).Key() + "|" + string(r.Path)
		if byRound[k] == nil {
			byRound[k] = map[int]map[testbed.Arm]report.Record{}
			order = append(order, k)
		}
		if byRound[k][r.Repeat] == nil {
			byRound[k][r.Repeat] = map[testbed.Arm]report.Record{}
		}
		byRound[k][r.Repeat][r.Arm] = r
	}
	var out []gate.Measurement
	for _, k := range order {
		out = append(out, roundMeasurements(g, byRound[k])...)
	}
	return out
}

// roundMeasurements pairs one scenario's reference and candidate runs,
// by round, where both are valid, for each metric the fixture gates
// there. A metric read from CPU counters (gate.Metric.CPU) also leaves
// out the pairs whose CPU figures are not valid, and says so
// (gate.Measurement.LeftOut): the other metrics keep them.
func roundMeasurements(g *gate.Gate, byRound map[int]map[testbed.Arm]report.Record) []gate.Measurement {
	var m map[gate.Metric]*gate.Measurement
	var metrics []gate.Metric
	left, why := 0, validity.Reasons(nil)
	for _, rep := range slices.Sorted(maps.Keys(byRound)) {
		ref, okR := byRound[rep][testbed.Reference]
		cand, okC := byRound[rep][testbed.Candidate]
		if okR && m == nil {
			// Every gated metric is decided, also with no valid pair
			// (then inconclusive, n=0): a point whose runs were all
			// invalid must not vanish from the verdict.
			m = map[gate.Metric]*gate.Measurement{}
			metrics = g.Gated(gateLabels(ref))
			for _, met := range metrics {
				m[met] = &gate.Measurement{Scenario: gateLabels(ref), Metric: met}
			}
		}
		if !okR || !okC || !ref.Valid() || !cand.Valid() {
			continue
		}
		cpu := ref.CPUValid() && cand.CPUValid()
		if !cpu {
			left++
			why = append(append(why, ref.CPUReasons()...), cand.CPUReasons()...)
		}
		for _, met := range metrics {
			if met.CPU() && !cpu {
				continue
			}
			m[met].Reference = append(m[met].Reference, gateValue(ref, met))
			m[met].Candidate = append(m[met].Candidate, gateValue(cand, met))
		}
	}
	out := make([]gate.Measurement, 0, len(metrics))
	for _, met := range metrics {
		if met.CPU() {
			m[met].LeftOut = cpuLeftOut(left, plural(left, "pair", "pairs"), why)
		}
		out = append(out, *m[met])
	}
	return out
}

// judge runs the upgrade gate, in this run (-candidate) or against a
// stored run (-reference), and keeps its verdict in res. Its error holds
// every decision that did not pass.
func (s *Suite) judge(w io.Writer, res *report.Results) error {
	if s.gate == nil {
		return nil
	}
	res.Gate = s.Config.Gate
	var err error
	if s.ref != nil {
		s.gateVerdict, err = s.judgeStored(w, res)
		s.noteRefusal(err)
	} else {
		s.gateVerdict, err = s.judgeGate(w, res.Records)
	}
	if s.gateVerdict != nil {
		res.GateDecisions = s.gateVerdict.Decisions
		res.GateVerdict = s.gateVerdict
		err = errors.Join(err, s.gateVerdict.Err())
	}
	s.mu.Lock()
	if why := s.why; len(why.Points) > 0 || why.None != "" {
		res.Why = &why
		_ = why.Markdown(w)
	}
	s.mu.Unlock()
	return err
}

// judgeGate decides the upgrade from the run's records, prints every
// decision and the noise, and returns the verdict.
func (s *Suite) judgeGate(w io.Writer, recs []report.Record) (*gate.Verdict, error) {
	ms := gateMeasurements(s.gate, recs)
	if len(ms) == 0 {
		return nil, fmt.Errorf("gate %s: no scenario has valid reference and candidate pairs to judge", s.gate.File)
	}
	ref, cand := s.Config.gateArms()
	aa := cand == ref
	what := "the spread of this run's pairs"
	if aa {
		what = "this A/A run (candidate = reference)"
	}
	header := fmt.Sprintf("gate: %s, candidate %s against reference %s%s", s.gate.File, cand, ref, s.modeNote())
	return s.decideGate(w, header, "", ms, what, aa)
}

// decideGate decides ms and prints the verdict (header, then how the
// figures were compared when how is set), every decision, and the
// smallest change the run could detect, from what.
func (s *Suite) decideGate(w io.Writer, header, how string, ms []gate.Measurement, what string, aa bool) (*gate.Verdict, error) {
	v, err := s.decide(ms)
	if err != nil {
		return nil, fmt.Errorf("gate %s: %w", s.gate.File, err)
	}
	fmt.Fprintf(w, "%s%s: %s\n", progressPrefix, header, v.Outcome)
	fmt.Fprint(w, how)
	fmt.Fprintf(w, "%sgate: %s\n", progressPrefix, s.levelNote(v))
	for _, d := range v.Decisions {
		fmt.Fprintf(w, "%s  %s: %s\n", progressPrefix, d.Outcome, d.Reason)
	}
	for _, r := range s.gate.Unused(ms) {
		fmt.Fprintf(w, "%sgate: warning: %s:%d: the rule for %s matched %v, and gated nothing this run measured\n", progressPrefix, r.File, r.Line, r.Metric, map[string]string(r.Match))
	}
	noise, err := s.gate.CalibrateAt(ms, v.Confidence, v.Sequential)
	if err != nil {
		return &v, fmt.Errorf("gate %s: noise: %w", s.gate.File, err)
	}
	fmt.Fprintf(w, "%sgate: smallest change this run could detect, from %s, at the decisions' %.2f %%:\n", progressPrefix, what, v.Confidence*100)
	for _, n := range noise {
		if n.Unestimated != "" {
			fmt.Fprintf(w, "%s  %s %s: %s\n", progressPrefix, n.Scenario, n.Metric, n.Unestimated)
			continue
		}
		n.Biased = n.Biased && aa
		fmt.Fprintf(w, "%s  %s %s: %.1f %% (limit %.0f %%)%s\n", progressPrefix, n.Scenario, n.Metric, n.Detectable*100, n.Rule.LimitPct, cannotPass(n))
	}
	return &v, nil
}

func cannotPass(n gate.Noise) string {
	var s string
	if !n.CanPass {
		s = ": larger than the limit, so this gate cannot pass honestly"
		if n.PairsToPass > 0 {
			s += fmt.Sprintf("; about %d %s would let it", n.PairsToPass, n.Unit())
		}
	}
	if n.Biased {
		s += fmt.Sprintf("; the A/A ratio %.3f (%.3f–%.3f) excludes 1: the arms differ even with the same build", n.Interval.Ratio, n.Interval.Lo, n.Interval.Hi)
	}
	return s
}

// decide judges ms: sequentially, benchmark by benchmark, for a candidate
// in this run; against a stored reference at the level split over the
// looks -max-count allowed and the decisions (storedConfidence).
func (s *Suite) decide(ms []gate.Measurement) (gate.Verdict, error) {
	if s.ref != nil {
		return s.gate.DecideAt(ms, s.storedConfidence(len(ms)))
	}
	byBench := map[string][]gate.Measurement{}
	var order []string
	for _, m := range ms {
		b := m.Scenario[labels.Benchmark]
		if byBench[b] == nil {
			order = append(order, b)
		}
		byBench[b] = append(byBench[b], m)
	}
	var all gate.Verdict
	for _, b := range order {
		v, err := s.gate.DecideSequential(byBench[b], s.gateSequential(b, byBench[b]))
		if err != nil {
			return gate.Verdict{}, err
		}
		all.Decisions = append(all.Decisions, v.Decisions...)
		all.Outcome = max(all.Outcome, v.Outcome)
		all.Confidence, all.Sequential = v.Confidence, v.Sequential
	}
	return all, nil
}

// levelNote says at what level the verdict's intervals are.
func (s *Suite) levelNote(v gate.Verdict) string {
	if q := v.Sequential; q != nil {
		return fmt.Sprintf("looked after every round from %d to at most %d (-max-count) pairs a point, each decision at its first conclusive look; "+
			"its repeated intervals (log ratios trimmed by %.0f %% at each end) cover the ratio at every look at once at %.2f %%, so that the verdict, of at most %d decisions, is wrong at most %.0f %% of the time",
			gate.MinPairsToDecide, q.Max, gate.Trim*100, v.Confidence*100, q.Decisions, gate.VerdictAlpha*100)
	}
	looks := s.gateLooks()
	if looks == 1 {
		return fmt.Sprintf("every interval at %.2f %% (the verdict's %.0f %% error split over its decisions)", v.Confidence*100, gate.VerdictAlpha*100)
	}
	return fmt.Sprintf("-max-count=%d: a point was looked at up to %d times as rounds were added, so every interval is at %.2f %% (the verdict's %.0f %% error split over the looks and the decisions)",
		s.Config.MaxCount, looks, v.Confidence*100, gate.VerdictAlpha*100)
}

// storedConfidence is the level of each decision against a stored
// reference (gate.StoredConfidence): the verdict's error split over the
// looks and over the decisions planGate counted before the runs (else
// n, those at hand).
func (s *Suite) storedConfidence(n int) float64 {
	s.mu.Lock()
	k := 0
	for _, f := range s.gateFamily {
		k += f
	}
	s.mu.Unlock()
	return gate.StoredConfidence(cmp.Or(k, n), s.gateLooks())
}

// gateSequential is the gate's sequential plan on the benchmark bench:
// -max-count pairs a point, and the decisions planGate counted for it
// before its first run (else those of ms, for a suite driven by hand).
func (s *Suite) gateSequential(bench string, ms []gate.Measurement) gate.Sequential {
	k := s.gateFamily[bench]
	if k == 0 {
		k = len(ms)
	}
	return gate.Sequential{Max: max(s.Config.MaxCount, s.reps()), Decisions: k}
}

// planGate checks the gate fixture against the points of a scenario with
// a candidate before its first run, and counts the decisions the gate can
// make on them: at each point (axis values × concurrency) every metric a
// rule gates there. The count is the verdict's family
// (gate.Sequential.Decisions). A rule that matches on a label none of the
// points has fails the benchmark before it measures anything.
func (s *Suite) planGate(b *testing.B, sc Scenario) {
	if s.gate == nil || len(sc.trail) > 0 {
		return
	}
	bench := runLabels(b, sc, 0).Map()[labels.Benchmark]
	if _, done := s.gateFamily[bench]; done { // go test calls it once per -count
		return
	}
	points := s.gatePoints(sc, bench)
	if err := errors.Join(s.gate.CheckLabels(points), s.checkRuleValues(points, s.gate.CheckValues)); err != nil {
		s.fatalf(b, "gate %s: %v", s.gate.File, err)
	}
	k := s.notePlanned(bench, points)
	if s.ref != nil {
		return
	}
	q := s.gateSequential(bench, nil)
	s.logf("%s: gate: %d decisions, each looked at after every round from %d to %d pairs a point, at %.2f %% (the verdict wrong at most %.0f %% of the time)",
		bench, k, gate.MinPairsToDecide, q.Max, (1-q.Alpha())*100, gate.VerdictAlpha*100)
}

// notePlanned keeps the points of the benchmark bench that the gate
// decides on, for the results (report.Results.GatePlan), and returns how
// many decisions it can make on them.
func (s *Suite) notePlanned(bench string, points []gate.Labels) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gateFamily == nil {
		s.gateFamily = map[string]int{}
	}
	k := 0
	for _, l := range points {
		if n := len(s.gate.Gated(l)); n > 0 {
			k += n
			s.gatePlan = append(s.gatePlan, map[string]string(l))
		}
	}
	s.gateFamily[bench] = k
	return k
}

// gatePoints are the gate labels (gateLabels) of every point of sc, the
// benchmark bench, before it runs.
func (s *Suite) gatePoints(sc Scenario, bench string) []gate.Labels {
	points := []Scenario{sc}
	for _, ax := range sc.Axes {
		var next []Scenario
		for _, p := range points {
			for _, v := range ax.Values {
				q := p
				q.trail = p.trail.With(ax.Key, v.Label)
				if v.Apply != nil {
					v.Apply(&q)
				}
				next = append(next, q)
			}
		}
		points = next
	}
	var out []gate.Labels
	for _, p := range points {
		_, conc := s.concurrency(p)
		for _, c := range conc {
			l := gate.Labels(p.trail.Map())
			l[labels.Benchmark] = bench
			l[labels.Concurrency] = strconv.Itoa(c)
			l[labels.Path] = string(cmp.Or(p.Workload.Path, p.Path, testbed.OneHop))
			l["loop"] = "closed"
			if s.openLoop(p, c) {
				l["loop"] = "open"
			}
			out = append(out, l)
		}
	}
	return out
}

// defaultGate is the mesh's own fixtures/gates/<target>-<mesh>.yaml when
// there is one (a proxyless mesh has no sidecar to gate), else
// fixtures/gates/<target>.yaml; loadGate refuses it when it is missing: a
// gate with no fixture would decide nothing and exit 0.
func defaultGate(root, target, mesh string) string {
	if mesh != "" {
		own := filepath.Join(root, "fixtures", "gates", target+"-"+mesh+".yaml")
		if _, err := os.Stat(own); err == nil {
			return own
		}
	}
	return filepath.Join(root, "fixtures", "gates", target+".yaml")
}

// GateVerdict is the upgrade gate's decision after Finish (or Report);
// nil when nothing was gated.
func (s *Suite) GateVerdict() *gate.Verdict { return s.gateVerdict }

// LoadGate decodes the gate fixture for a Suite driven without Main
// (tests): CheckFixtures does it in TestMain.
func (s *Suite) LoadGate() error { return s.loadGate() }

// gateLooks is how many times the gate looks at a point: once, or with
// -max-count above -count up to gate.MaxLooks (gate.Looks). Every decision
// of the run, at the points and at the end, is made at the level split
// over them (gate.LookConfidence).
func (s *Suite) gateLooks() int { return gate.Looks(s.reps(), s.Config.MaxCount) }

// pointMeasurements are what the gate judges from runs at one point: the
// paired reference and candidate arms (-candidate), or this run's meshed
// arm against the stored reference (-reference).
func (s *Suite) pointMeasurements(runs map[testbed.Arm][]report.Record) []gate.Measurement {
	var recs []report.Record
	for _, arm := range slices.Sorted(maps.Keys(runs)) {
		recs = append(recs, runs[arm]...)
	}
	if s.ref != nil {
		return storedMeasurements(s.gate, s.ref.results.Records, s.ref.arm, recs).ms
	}
	return gateMeasurements(s.gate, recs)
}

// addRounds is -max-count at one point, where runs holds -count rounds of
// every arm: while the gate is undecided there (no decision failed, and
// some is inconclusive) it calls round(rep) to run round rep of every arm,
// one round at a time, deciding after each (gate.DecideSequential), until
// it decides, the point has -max-count rounds, the budget cannot decide
// it (gate.Verdict.Futile: say so early), or ctx is done. Rounds
// whose runs were invalid give no pair, and count against the budget all
// the same. Against a stored reference it adds rounds in batches
// (addStoredRounds).
func (s *Suite) addRounds(ctx context.Context, where string, runs map[testbed.Arm][]report.Record, round func(rep int)) {
	if s.gate == nil {
		return
	}
	if s.ref != nil {
		s.addStoredRounds(ctx, where, runs, round)
		return
	}
	for rounds := s.reps(); rounds < s.Config.MaxCount && ctx.Err() == nil; rounds++ {
		ms := s.pointMeasurements(runs)
		if len(ms) == 0 {
			return
		}
		bench := ms[0].Scenario[labels.Benchmark]
		if rounds == s.reps() && s.failedBefore(bench, ms) {
			s.logf("%s: gate: the verdict already failed at an earlier point: no rounds added here", where)
			return
		}
		v, err := s.gate.DecideSequential(ms, s.gateSequential(bench, ms))
		if err != nil {
			s.logf("%s: gate: %v: no more rounds", where, err)
			return
		}
		if v.Outcome != gate.Inconclusive {
			return
		}
		if v.Futile() {
			s.logf("%s: gate: no more rounds after %d: the budget of %d cannot decide %s", where, rounds, s.Config.MaxCount, undecided(v))
			return
		}
		s.logf("%s: gate undecided after %d rounds: %s; round %d of at most %d", where, rounds, undecided(v), rounds+1, s.Config.MaxCount)
		round(rounds)
	}
}

// failedBefore says whether a decision of the benchmark bench failed at a
// point before this one, whose measurements are ms: the verdict is a fail
// whatever this point decides, so it gets no rounds beyond -count.
func (s *Suite) failedBefore(bench string, ms []gate.Measurement) bool {
	here := map[string]bool{}
	for _, m := range ms {
		here[m.Scenario.String()] = true
	}
	var before []gate.Measurement
	for _, m := range gateMeasurements(s.gate, s.Records()) {
		if m.Scenario[labels.Benchmark] == bench && !here[m.Scenario.String()] {
			before = append(before, m)
		}
	}
	if len(before) == 0 {
		return false
	}
	v, err := s.gate.DecideSequential(before, s.gateSequential(bench, before))
	return err == nil && v.Outcome == gate.Fail
}

// undecided lists a verdict's inconclusive decisions, briefly, each with
// the chance that the budget's last look decides it and the smallest
// change it can resolve there (gate.Outlook), when known.
func undecided(v gate.Verdict) string {
	var parts []string
	for _, d := range v.Decisions {
		if d.Outcome != gate.Inconclusive {
			continue
		}
		iv := d.Interval
		if iv.N == 0 {
			parts = append(parts, fmt.Sprintf("%s: no valid pair yet", d.Metric))
			continue
		}
		part := fmt.Sprintf("%s %.3f (%.3f–%.3f, n=%d)", d.Metric, iv.Ratio, iv.Lo, iv.Hi, iv.N)
		if d.Outlook != nil {
			part += " " + d.Outlook.String()
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ", ")
}

// addStoredRounds is addRounds against a stored reference: in batches
// decided after each, following gate.UntilConclusive's schedule
// (gate.Targets: a decision's PairsNeeded first, then all the budget), at
// most gate.MaxLooks looks at the split level. The rounds add repeats of
// this run only; the stored ones stay as they are.
func (s *Suite) addStoredRounds(ctx context.Context, where string, runs map[testbed.Arm][]report.Record, round func(rep int)) {
	rounds := s.reps()
	looks := s.gateLooks()
	conf := s.storedConfidence(len(s.pointMeasurements(runs)))
	for look := 1; look < looks && ctx.Err() == nil; look++ {
		want, v, err := s.roundsWanted(runs, rounds, conf, look == looks-1)
		if err != nil {
			s.logf("%s: gate: %v: no more rounds", where, err)
			return
		}
		if want <= rounds {
			return
		}
		s.logf("%s: the gate is inconclusive after %d rounds (look %d of at most %d, at %.1f %%): %d more, of at most %d in all",
			where, rounds, look, looks, conf*100, want-rounds, s.Config.MaxCount)
		for _, d := range v.Decisions {
			if d.Outcome == gate.Inconclusive {
				s.logf("  %s", d.Reason)
			}
		}
		for ; rounds < want && ctx.Err() == nil; rounds++ {
			round(rounds)
		}
	}
}

// roundsWanted decides the point whose runs hold rounds rounds, at level
// conf, and returns how many rounds it should have before the next look
// (rounds when nothing is inconclusive there, or nothing can be judged)
// and the verdict. Rounds whose runs were invalid give no repeat, and
// count against the -max-count budget all the same.
func (s *Suite) roundsWanted(runs map[testbed.Arm][]report.Record, rounds int, conf float64, last bool) (int, gate.Verdict, error) {
	ms := s.pointMeasurements(runs)
	if len(ms) == 0 {
		return rounds, gate.Verdict{}, nil
	}
	v, err := s.gate.DecideAt(ms, conf)
	if err != nil {
		return rounds, v, err
	}
	have := map[string]int{}
	lost := 0
	for _, m := range ms {
		have[m.Scenario.String()] = m.Repeats()
		lost = max(lost, rounds-m.Repeats())
	}
	want := rounds
	for name, n := range gate.Targets(v, ms, s.Config.MaxCount-lost, last) {
		want = max(want, rounds+n-have[name])
	}
	return min(want, s.Config.MaxCount), v, nil
}
