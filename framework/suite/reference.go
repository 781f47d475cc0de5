package suite

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/meshbench/meshbench/framework/gate"
	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/validity"
)

// storedRef is the stored run a -reference run is gated against.
type storedRef struct {
	file    string
	results *report.Results
	sha256  string
	// arm is the stored arm that stands for the reference: candidate when
	// the stored run was an upgrade gate's, else meshed.
	arm testbed.Arm
}

// loadReference reads the -reference file and checks it can stand for
// this run's reference, before anything is made or measured: a file that
// is missing, truncated, of another schema or without a meshed arm, or a
// run whose target or settings (or, on the local target, cores) differ,
// stops the run naming the file and the field.
func (s *Suite) loadReference() error {
	file := s.Config.Reference
	if file == "" {
		return nil
	}
	res, sum, err := report.OpenStored(file)
	if err != nil {
		return fmt.Errorf("-reference: %w", err)
	}
	ref := &storedRef{file: file, results: res, sha256: sum, arm: referenceArm(res.Records)}
	if ref.arm == "" {
		return fmt.Errorf("-reference: %s: records[].arm: no meshed or candidate arm to stand for the reference", file)
	}
	// Before the target exists only the local one knows its machine; on a
	// cluster the nodes are checked once it is up (checkReferenceEnv).
	env := res.Environment
	env.Target = s.Config.Target
	if s.Config.Target == "local" {
		env = testbed.Host()
		env.Target = "local"
	}
	if _, err := gate.ComparableSettings(res, &report.Results{Settings: s.Config, Environment: env}); err != nil {
		return ref.refuse(err)
	}
	s.ref = ref
	return nil
}

// checkReferenceEnv checks the target's environment, once it is up and
// before anything is measured, against the stored run's, and logs what
// only warrants a warning (the results file keeps those too).
func (s *Suite) checkReferenceEnv(env testbed.Environment) error {
	if s.ref == nil {
		return nil
	}
	warnings, err := gate.ComparableSettings(s.ref.results, &report.Results{Settings: s.Config, Environment: env})
	if err != nil {
		return s.ref.refuse(err)
	}
	for _, w := range warnings {
		s.logf("-reference: warning: %s", w)
	}
	return nil
}

// refuse wraps the differences that make the stored run no reference for
// this one.
func (r *storedRef) refuse(err error) error {
	return &refusedError{fmt.Errorf("-reference: %s: not comparable with this run:\n%w", r.file, err)}
}

// refusedError is a stored reference that is not comparable with this
// run: no decision, exit code gate.ExitError.
type refusedError struct{ error }

// Unwrap is the wrapped error, whose chain holds the differences, for
// errors.Is and errors.As.
func (e *refusedError) Unwrap() error { return e.error }

// referenceArm is the stored arm that stands for the reference: the
// candidate of an upgrade gate, else the meshed arm; "" when neither ran.
func referenceArm(recs []report.Record) testbed.Arm {
	var arm testbed.Arm
	for _, r := range recs {
		switch {
		case r.Arm == testbed.Candidate:
			return testbed.Candidate
		case r.Arm == testbed.Meshed:
			arm = testbed.Meshed
		}
	}
	return arm
}

// stored describes the reference for the results file.
func (r *storedRef) stored() *report.StoredReference {
	return &report.StoredReference{File: r.file, RunID: r.results.RunID(), SHA256: r.sha256, Arm: r.arm}
}

// judgeStored decides this run's meshed arm against the stored reference:
// it checks the two runs are comparable scenario by scenario (refusing,
// naming the field, when not), compares them as overhead ratios where
// both have a baseline arm and directly elsewhere, and prints and returns
// the verdict. res.Reference records what it was compared with.
func (s *Suite) judgeStored(w io.Writer, res *report.Results) (*gate.Verdict, error) {
	ref := s.ref
	res.Reference = ref.stored()
	warnings, err := gate.Comparable(ref.results, res)
	res.Reference.Warnings = warnings
	for _, wn := range warnings {
		fmt.Fprintf(w, "%sreference: warning: %s\n", progressPrefix, wn)
	}
	if err != nil {
		return nil, ref.refuse(err)
	}
	sc := storedMeasurements(s.gate, ref.results.Records, ref.arm, res.Records)
	res.Reference.Overhead, res.Reference.Direct = sc.overhead, sc.direct
	if len(sc.empty) > 0 {
		return nil, &refusedError{fmt.Errorf("gate %s: -reference %s: no verdict: %s %s no valid repeat in one run or the other to judge, and a gated scenario is not dropped; see the runs' invalid reasons",
			s.gate.File, ref.file, strings.Join(sc.empty, ", "), map[bool]string{true: "have", false: "has"}[len(sc.empty) > 1])}
	}
	if len(sc.ms) == 0 {
		return nil, fmt.Errorf("gate %s: -reference %s: no scenario has a valid repeat of the same index in both runs to judge", s.gate.File, ref.file)
	}
	header := fmt.Sprintf("gate: %s, this run's %s %s against the stored run %s (%s, sha256 %.12s, its %s arm)",
		s.gate.File, res.Environment.Mesh.Name, res.Environment.Mesh.Version, res.Reference.RunID, ref.file, ref.sha256, ref.arm)
	how := progressPrefix + "gate: " + sc.how() + "; unpaired: the stored repeats were not measured back to back with this run's, " +
		"so each run's repeats are an independent sample, judged on Welch's interval of the log values\n"
	if a, b := repeatsOf(ref.results.Records), repeatsOf(res.Records); a != b {
		how += fmt.Sprintf("%sgate: the stored run has %d repeats per point and this run %d: all of each are used\n", progressPrefix, a, b)
	}
	return s.decideGate(w, header, how, sc.ms, "the spread of both runs' repeats", false)
}

// storedComparison is what the stored-reference gate judges: unpaired
// measurements, and which scenarios were compared as overhead ratios and
// which directly.
type storedComparison struct {
	ms               []gate.Measurement
	overhead, direct []string
	// empty are the gated scenarios with no valid repeat in one run or
	// the other: refused, never dropped.
	empty []string
}

// gatedAt says whether the gate gates a metric at the scenario whose
// runs reps holds (any arm's labels will do).
func gatedAt(g *gate.Gate, reps map[int]map[testbed.Arm]report.Record) bool {
	for _, arms := range reps {
		for _, r := range arms {
			return len(g.Gated(gateLabels(r))) > 0
		}
	}
	return false
}

// how says in one line how the scenarios were compared.
func (c storedComparison) how() string {
	const ratios = "compared as overhead ratios (each run's meshed arm over its own baseline arm of the same repeat, which cancels drift of the machine between the runs: latency and throughput meshed/baseline, sidecar CPU per 1k req over the baseline app's, sidecar RSS as is)"
	switch {
	case len(c.direct) == 0:
		return ratios
	case len(c.overhead) == 0:
		return "compared directly (meshed against meshed: not both runs have a baseline arm)"
	}
	return ratios + "; directly, without a baseline arm in both runs: " + strings.Join(c.direct, ", ")
}

// armRuns indexes one run's records by scenario (gate.ScenarioName),
// repeat and arm.
type armRuns map[string]map[int]map[testbed.Arm]report.Record

func indexRuns(recs []report.Record) (armRuns, []string) {
	out := armRuns{}
	var order []string
	for _, r := range recs {
		name := gate.ScenarioName(r)
		if out[name] == nil {
			out[name] = map[int]map[testbed.Arm]report.Record{}
			order = append(order, name)
		}
		if out[name][r.Repeat] == nil {
			out[name][r.Repeat] = map[testbed.Arm]report.Record{}
		}
		out[name][r.Repeat][r.Arm] = r
	}
	return out, order
}

// storedMeasurements compares this run's meshed arm with the stored run's
// arm refArm, scenario by scenario, for every metric the fixture gates
// there: each run's valid repeats are one sample (nothing pairs repeats
// across the runs), so this run may have more than the stored one
// (-max-count). A scenario that has a baseline arm in both runs is
// compared as overhead ratios, else directly.
func storedMeasurements(g *gate.Gate, stored []report.Record, refArm testbed.Arm, run []report.Record) storedComparison {
	ref, _ := indexRuns(stored)
	cur, order := indexRuns(run)
	var out storedComparison
	for _, name := range order {
		overhead := hasArm(ref[name], testbed.Baseline) && hasArm(cur[name], testbed.Baseline)
		ms := scenarioMeasurements(g, ref[name], refArm, cur[name], overhead)
		if len(ms) == 0 {
			if gatedAt(g, cur[name]) {
				out.empty = append(out.empty, name)
			}
			continue
		}
		out.ms = append(out.ms, ms...)
		if overhead {
			out.overhead = append(out.overhead, name)
		} else {
			out.direct = append(out.direct, name)
		}
	}
	return out
}

// scenarioMeasurements builds one scenario's unpaired measurements: the
// stored run's valid repeats of refArm are the reference sample and this
// run's valid meshed repeats the candidate's (for overhead ratios, each
// over a valid baseline run of the same repeat in its own run). There are
// none unless both runs have a valid repeat. A metric read from CPU
// counters also leaves out the repeats whose CPU figures are not valid
// (cpuValidRepeats), and says so.
func scenarioMeasurements(g *gate.Gate, ref map[int]map[testbed.Arm]report.Record, refArm testbed.Arm, cur map[int]map[testbed.Arm]report.Record, overhead bool) []gate.Measurement {
	refs, curs := validRepeats(ref, refArm, overhead), validRepeats(cur, testbed.Meshed, overhead)
	if len(refs) == 0 || len(curs) == 0 {
		return nil
	}
	l := gateLabels(curs[0][0])
	var ms []gate.Measurement
	for _, met := range g.Gated(l) {
		m := gate.Measurement{Scenario: l, Metric: met, Unpaired: true}
		r, c := refs, curs
		if met.CPU() {
			var whyR, whyC validity.Reasons
			r, whyR = cpuValidRepeats(refs, overhead)
			c, whyC = cpuValidRepeats(curs, overhead)
			m.LeftOut = storedLeftOut(len(refs)-len(r), len(curs)-len(c), append(whyR, whyC...))
		}
		m.Reference, m.Candidate = sampleOf(r, met, overhead), sampleOf(c, met, overhead)
		ms = append(ms, m)
	}
	return ms
}

// validRepeats returns, in repeat order, each repeat's run of arm with its
// baseline run, where the arm's run is valid and, for overhead ratios, the
// baseline's too.
func validRepeats(reps map[int]map[testbed.Arm]report.Record, arm testbed.Arm, overhead bool) [][2]report.Record {
	var out [][2]report.Record
	for _, rep := range slices.Sorted(maps.Keys(reps)) {
		m, b := reps[rep][arm], reps[rep][testbed.Baseline]
		if valid(m) && (!overhead || valid(b)) {
			out = append(out, [2]report.Record{m, b})
		}
	}
	return out
}

// sampleOf is one run's figures of met: the meshed run's, or its overhead
// ratio over the baseline run.
func sampleOf(runs [][2]report.Record, met gate.Metric, overhead bool) []float64 {
	out := make([]float64, len(runs))
	for i, r := range runs {
		out[i] = gateValue(r[0], met)
		if overhead {
			out[i] = overheadValue(r[0], r[1], met)
		}
	}
	return out
}

// overheadValue is a meshed run's figure over the baseline run of the same
// repeat: latency and throughput meshed/baseline; sidecar CPU per 1k
// requests over the baseline app's CPU per 1k requests (the baseline has
// no sidecar; a slower or busier machine costs both more per request);
// sidecar RSS as it is (memory does not drift with the machine's speed),
// and the sidecar CPU over the workload's, which is already in units of
// the machine's speed in its own window.
func overheadValue(meshed, baseline report.Record, m gate.Metric) float64 {
	switch m {
	case gate.SidecarRSS, gate.SidecarCPUOverWorkloadCPU:
		return gateValue(meshed, m)
	case gate.SidecarCPUPer1kReq:
		app, _ := baseline.Resources.Role(measure.RoleApp)
		return gateValue(meshed, m) / baseline.CPUPer1k(app.MilliCores)
	}
	return gateValue(meshed, m) / gateValue(baseline, m)
}

// repeatsOf is the most repeats any point of a run has.
func repeatsOf(recs []report.Record) int {
	n := 0
	for _, r := range recs {
		n = max(n, r.Repeat+1)
	}
	return n
}

func hasArm(reps map[int]map[testbed.Arm]report.Record, arm testbed.Arm) bool {
	for _, arms := range reps {
		if _, ok := arms[arm]; ok {
			return true
		}
	}
	return false
}

// valid reports whether r holds a run and nothing invalidated it.
func valid(r report.Record) bool { return r.Run != nil && r.Valid() }

// noteRefusal keeps err when it says the stored reference is not
// comparable with this run (the exit code is then gate.ExitError), and
// returns it.
func (s *Suite) noteRefusal(err error) error {
	var r *refusedError
	if errors.As(err, &r) {
		s.mu.Lock()
		s.refusal = err
		s.mu.Unlock()
	}
	return err
}
