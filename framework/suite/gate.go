package suite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/meshbench/meshbench/framework/gate"
	"github.com/meshbench/meshbench/framework/labels"
	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/target"
)

// loadGate decodes the gate fixture, checked against the target, before
// anything runs. Without a candidate or a stored reference there is
// nothing to gate.
func (s *Suite) loadGate() error {
	if (s.Config.Candidate == "" && s.Config.Reference == "") || s.Config.Gate == "none" {
		return nil
	}
	g, err := gate.Load(s.Config.Gate)
	if err != nil {
		return err
	}
	if err := g.CheckTarget(s.fixtureTarget()); err != nil {
		return err
	}
	s.gate = g
	return nil
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
func gateValue(r report.Record, m gate.Metric) float64 {
	l := r.Load
	switch m {
	case gate.SidecarCPUPer1kReq:
		u, _ := r.Resources.Role(measure.RoleSidecar)
		return r.CPUPer1k(u.MilliCores)
	case gate.SidecarRSS:
		u, _ := r.Resources.Role(measure.RoleSidecar)
		return float64(u.MaxLoadRSS) / (1 << 20)
	case gate.Throughput:
		return l.AchievedQPS
	case gate.P50:
		return l.Percentile(50) * 1e3
	case gate.P90:
		return l.Percentile(90) * 1e3
	case gate.P99:
		return l.Percentile(99) * 1e3
	case gate.P999:
		return l.Percentile(99.9) * 1e3
	}
	return 0
}

// gateMeasurements pairs every scenario's reference and candidate runs of
// the same round, both valid, for each metric the fixture gates there.
func gateMeasurements(g *gate.Gate, recs []report.Record) []gate.Measurement {
	byRound := map[string]map[int]map[target.Arm]report.Record{}
	var order []string
	for _, r := range recs {
		k := r.Labels.Without(labels.Arm).Key() + "|" + string(r.Path)
		if byRound[k] == nil {
			byRound[k] = map[int]map[target.Arm]report.Record{}
			order = append(order, k)
		}
		if byRound[k][r.Repeat] == nil {
			byRound[k][r.Repeat] = map[target.Arm]report.Record{}
		}
		byRound[k][r.Repeat][r.Arm] = r
	}
	var out []gate.Measurement
	for _, k := range order {
		rounds := slices.Sorted(maps.Keys(byRound[k]))
		var m map[gate.Metric]*gate.Measurement
		var metrics []gate.Metric
		for _, rep := range rounds {
			ref, okR := byRound[k][rep][target.Reference]
			cand, okC := byRound[k][rep][target.Candidate]
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
			for _, met := range metrics {
				m[met].Reference = append(m[met].Reference, gateValue(ref, met))
				m[met].Candidate = append(m[met].Candidate, gateValue(cand, met))
			}
		}
		for _, met := range metrics {
			out = append(out, *m[met])
		}
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
		err = errors.Join(err, s.gateVerdict.Err())
	}
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
	header := fmt.Sprintf("gate: %s, candidate %s against reference %s", s.gate.File, cand, ref)
	return s.decideGate(w, header, "", ms, what, aa)
}

// decideGate decides ms and prints the verdict (header, then how the
// figures were compared when how is set), every decision, and the
// smallest change the run could detect, from what.
func (s *Suite) decideGate(w io.Writer, header, how string, ms []gate.Measurement, what string, aa bool) (*gate.Verdict, error) {
	looks := s.gateLooks()
	v, err := s.gate.DecideAt(ms, gate.LookConfidence(looks))
	if err != nil {
		return nil, fmt.Errorf("gate %s: %w", s.gate.File, err)
	}
	fmt.Fprintf(w, "%s%s: %s\n", progressPrefix, header, v.Outcome)
	fmt.Fprint(w, how)
	if looks > 1 {
		fmt.Fprintf(w, "%sgate: -max-count=%d: a point was looked at up to %d times as rounds were added, so every interval is at %.1f %% (the %.0f %% error split over the looks)\n",
			progressPrefix, s.Config.MaxCount, looks, v.Confidence*100, (1-gate.Confidence)*100)
	}
	for _, d := range v.Decisions {
		fmt.Fprintf(w, "%s  %s: %s\n", progressPrefix, d.Outcome, d.Reason)
	}
	noise, err := s.gate.Calibrate(ms)
	if err != nil {
		return &v, fmt.Errorf("gate %s: noise: %w", s.gate.File, err)
	}
	fmt.Fprintf(w, "%sgate: smallest change this run could detect, from %s:\n", progressPrefix, what)
	for _, n := range noise {
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

// defaultGate is fixtures/gates/<target>.yaml.
func defaultGate(root, target string) string {
	p := filepath.Join(root, "fixtures", "gates", target+".yaml")
	if _, err := os.Stat(p); err != nil {
		return "none"
	}
	return p
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
func (s *Suite) pointMeasurements(runs map[target.Arm][]report.Record) []gate.Measurement {
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
// every arm: while the gate is inconclusive there it calls round(rep) to
// run round rep of every arm, in batches decided after each, following
// gate.UntilConclusive's schedule (gate.Targets: a decision's PairsNeeded
// first, then all the budget), until it decides, the point has
// -max-count rounds, or ctx is done. Against a stored reference the rounds
// add repeats of this run only; the stored ones stay as they are.
func (s *Suite) addRounds(ctx context.Context, where string, runs map[target.Arm][]report.Record, round func(rep int)) {
	if s.gate == nil {
		return
	}
	rounds := s.reps()
	looks := s.gateLooks()
	conf := gate.LookConfidence(looks)
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
func (s *Suite) roundsWanted(runs map[target.Arm][]report.Record, rounds int, conf float64, last bool) (int, gate.Verdict, error) {
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
