package suite

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/framework/labels"
	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/testbed"
)

// Sweep runs sc: its axes, outermost first, as nested sub-benchmarks
// (payload=16KiB/…), then every concurrency. At each point it runs -count
// interleaved rounds of the arms, in ABBA order (A B, B A, A B, …; see
// testbed.RoundOrder), so that drift of the machine and the cost of going
// first hit every arm alike; with -gate-mode=duet a gate's reference and
// candidate run at once instead, in an order drawn from -gate-seed
// (roundUnits, measureDuet); then the sub-benchmarks c=N/arm=… report
// one round per -count iteration, which is what benchstat expects. A
// scenario the target cannot serve is skipped with the reason. Sweep may
// be called inside the caller's own b.Run sweeps: records are keyed by the
// full name, so nothing is overwritten.
func (s *Suite) Sweep(b *testing.B, sc Scenario) {
	tg, err := s.target()
	if err != nil {
		s.fatalf(b, "target %s: %v", s.Config.Target, err)
	}
	sc.Name = cmp.Or(sc.Name, s.Name)
	s.planGate(b, sc)
	s.planThresholds(b, sc)
	defer s.scenarioTable(b, !sc.planned)
	sc = s.planScenario(b, sc, tg)
	if len(sc.Axes) > 0 {
		s.sweepAxis(b, sc)
		return
	}
	sc = sc.withShorthands()
	s.skipUnsupported(b, sc, tg)
	key, conc := s.concurrency(sc)
	arms := armsOf(tg, sc)
	reps := s.reps()
	slots := len(s.roundUnits(sc, conc[0], arms, 0)) // windows one after another a round: a duet's two are one
	total, per := s.logPlan(b, sc, key, conc, len(arms), slots)
	prog := &progress{total: total, per: per * time.Duration(slots) / time.Duration(max(len(arms), 1)), started: time.Now()}
	for _, c := range conc {
		b.Run(key+"="+strconv.Itoa(c), func(b *testing.B) {
			if !s.beforeRound(time.Duration(slots) * per) {
				s.notStarted(b)
			}
			runs := map[testbed.Arm][]report.Record{}
			round := func(rep int) {
				if rep > 0 && !s.beforeRound(time.Duration(slots)*per) {
					s.notStarted(b)
				}
				if rep >= reps { // a round the gate added: the plan grows by one
					prog.total += len(arms)
				}
				for _, unit := range s.roundUnits(sc, c, arms, rep) {
					s.logUnit(b, sc, unit, rep, prog)
					recs, err := s.measureUnit(b, tg, sc, c, unit, rep, arms)
					if err != nil {
						s.fatalf(b, "%s/arm=%s: %v", label(b, sc), unitName(unit), err)
					}
					for _, rec := range recs {
						runs[rec.Arm] = append(runs[rec.Arm], rec)
					}
				}
			}
			for rep := range reps {
				round(rep)
			}
			// -max-count: more rounds while the upgrade gate cannot decide.
			s.addRounds(s.ctx, label(b, sc), runs, round)
			s.explainCPU(b, tg, sc, c, runs, per)
			for _, arm := range arms {
				b.Run(labels.Arm+"="+string(arm), func(b *testing.B) { s.report(b, runs[arm]) })
			}
		})
	}
}

// progress counts a point sweep's runs as they start, for the log.
type progress struct {
	done, total int
	per         time.Duration // one run's planned share of a round's time
	started     time.Time
}

// next counts one more run and says where the sweep is:
// "[3/8, about 12s left]".
func (p *progress) next() string {
	p.done++
	left := time.Duration(max(p.total-p.done+1, 1)) * perRun(p.per, time.Since(p.started), p.done-1)
	return fmt.Sprintf("[%d/%d, about %v left]", p.done, p.total, left.Round(time.Second))
}

// logUnit says, for each arm of unit, that its run of round rep starts.
func (s *Suite) logUnit(b *testing.B, sc Scenario, unit []testbed.Arm, rep int, prog *progress) {
	for _, arm := range unit {
		s.logf("%s/arm=%s repeat %d/%d %s%s", label(b, sc), arm, rep+1, max(s.reps(), rep+1), prog.next(), duetNote(unit))
	}
}

// scenarioTable prints a scenario's comparison table as soon as its sweep
// ends, so that a long run shows its first figures minutes before the
// summary; the summary prints them all again at the end. Not for a run of
// one benchmark (the summary follows at once) or under testing.Benchmark.
func (s *Suite) scenarioTable(b *testing.B, outermost bool) {
	name := b.Name()
	if !outermost || len(s.plan.benches) < 2 || name == "" || strings.HasPrefix(name, "/") {
		return
	}
	var recs []report.Record
	for _, r := range s.Records() {
		if n := r.Name(); n == name || strings.HasPrefix(n, name+"/") {
			recs = append(recs, r)
		}
	}
	if cs := report.Compare(recs); len(cs) > 0 {
		fmt.Fprintf(os.Stdout, "\n"+progressPrefix+"%s: %d runs (medians over repeats; intervals in parentheses; every scenario again in the summary)\n", name, len(recs))
		report.PrintSummary(os.Stdout, cs)
	}
}

// logPlan prints a point sweep's plan, its runs and their time, and
// returns the runs of its -count rounds and the time one run takes. A
// round runs arms runs in slots windows one after another (fewer in a
// duet, whose two runs share one).
func (s *Suite) logPlan(b *testing.B, sc Scenario, key string, conc []int, arms, slots int) (total int, per time.Duration) {
	reps, most := s.reps(), s.roundsAtMost()
	window := cmp.Or(sc.window, s.Config.Duration)
	if win := s.windowOf(sc, conc[0]); win.Duration > window {
		s.planNote(fmt.Sprintf("%s: windows of %v, to hold %d requests at %.0f req/s (its MinRequests), instead of %v", label(b, sc), win.Duration, sc.MinRequests, win.QPS, window))
		window = win.Duration
	}
	per = s.Config.Warmup + window + 300*time.Millisecond
	total = len(conc) * arms * reps
	if f := sc.Workload.Flow; f != nil {
		per = f.Ramp() + window + 300*time.Millisecond
	}
	took := func(rounds int) time.Duration {
		return (time.Duration(len(conc)*slots*rounds) * per).Round(time.Second)
	}
	if most > reps {
		s.logf("%s: %s, %s=%v, %v windows, %d interleaved rounds each, then one at a time while the gate is undecided, up to %d: %d to %d runs, about %v to %v",
			label(b, sc), sc.Workload.Path, key, conc, window, reps, most, total, total/reps*most, took(reps), took(most))
	} else {
		s.logf("%s: %s, %s=%v, %v windows, %d interleaved rounds each: %d runs, about %v",
			label(b, sc), sc.Workload.Path, key, conc, window, reps, total, took(reps))
	}
	return total, per
}

// fatalf also logs the failure: under testing.Benchmark a failed
// benchmark says nothing.
func (s *Suite) fatalf(b *testing.B, format string, args ...any) {
	s.mu.Lock()
	s.failed, s.fatal = true, true
	s.mu.Unlock()
	s.logf("FAIL: "+format, args...)
	b.Fatalf(format, args...)
}

// armsOf is the arms sc measures: its own, or the target's.
func armsOf(tg testbed.Target, sc Scenario) []testbed.Arm {
	if len(sc.Arms) > 0 {
		return sc.Arms
	}
	if a, ok := tg.(testbed.Armed); ok {
		return a.Arms()
	}
	return testbed.Arms
}

// notStarted ends a sub-benchmark whose round cannot start: skipped when
// the run stopped measuring early (a full disk, the deadline: the results
// say partial, with why), failed on a signal.
func (s *Suite) notStarted(b *testing.B) {
	cause := context.Cause(s.ctx)
	if s.sigCtx == nil || s.sigCtx.Err() == nil {
		b.Skipf("not measured: %v", cause)
	}
	b.Fatalf("not started: %v", cause)
}

// sweepAxis runs sc once per value of its outermost axis, each as a
// sub-benchmark, until the axis' Stop says so.
func (s *Suite) sweepAxis(b *testing.B, sc Scenario) {
	ax := sc.Axes[0]
	for _, v := range ax.Values {
		next := sc.at(v)
		next.trail = sc.trail.With(ax.Key, v.Label)
		var name string
		b.Run(ax.Key+"="+v.Label, func(b *testing.B) {
			name = b.Name()
			s.Sweep(b, next)
		})
		if ax.Stop == nil {
			continue
		}
		if stop, why := ax.Stop(s.points(name, next)); stop {
			s.logf("%s: %s=%s is the last point: %s", label(b, sc), ax.Key, v.Label, why)
			break
		}
	}
	if ax.ladder != nil {
		s.logKnees(b, sc, ax)
	}
}

// at is sc at value v of its outermost axis: the axes inside it, and what
// v changes (a placement its own c, a payload its size).
func (sc Scenario) at(v Value) Scenario {
	next := sc
	next.Axes = sc.Axes[1:]
	if v.Apply != nil {
		v.Apply(&next)
	}
	return next
}

// points are the runs recorded under a sub-benchmark name; under
// testing.Benchmark, where sub-benchmarks have no names, those whose
// labels hold the scenario's axes so far.
func (s *Suite) points(prefix string, sc Scenario) []Point {
	byLabels := prefix == "" || strings.HasPrefix(prefix, "/")
	want := append(labels.Set{{Key: labels.Benchmark, Value: sc.Name}}, sc.trail...).Map()
	var out []Point
	for _, r := range s.Records() {
		name := r.Name()
		if byLabels && r.Labels.Matches(want) || !byLabels && (name == prefix || strings.HasPrefix(name, prefix+"/")) {
			out = append(out, Point{Arm: r.Arm, Run: r.Run, Label: r.Labels})
		}
	}
	return out
}

// concurrency is the scenario's innermost sweep, and its label: for a
// flow, its users (users=N); else c=N for -concurrency when the user gave
// it, else the scenario's own, else the flag's default.
func (s *Suite) concurrency(sc Scenario) (string, []int) {
	if f := sc.Workload.Flow; f != nil {
		return labels.Users, []int{max(f.Users, 1)}
	}
	if s.Config.ConcurrencySet || len(sc.Concurrency) == 0 {
		return labels.Concurrency, s.Config.Concurrency
	}
	return labels.Concurrency, sc.Concurrency
}

// roundsAtMost is how many rounds a point may get: -max-count when a gate
// with a candidate adds rounds while undecided, else -count.
func (s *Suite) roundsAtMost() int {
	if s.gate != nil && s.ref == nil {
		return max(s.reps(), s.Config.MaxCount)
	}
	return s.reps()
}

// reps is how many interleaved rounds each point gets.
func (s *Suite) reps() int {
	if s.Config.Repeats > 0 {
		return s.Config.Repeats
	}
	return repeats()
}

// label names b for people: under testing.Benchmark no benchmark has a
// name, so the scenario's and its axes' stand in.
func label(b *testing.B, sc Scenario) string {
	if n := b.Name(); n != "" && !strings.HasPrefix(n, "/") {
		return n
	}
	return append(labels.Set{{Key: labels.Benchmark, Value: sc.Name}}, sc.trail...).String()
}

// runLabels are a run's labels without the arm: the sub-benchmark's name
// read as labels (which holds the caller's own b.Run sweeps too), or under
// testing.Benchmark the scenario's name, its axes and c (users for a
// flow).
func runLabels(b *testing.B, sc Scenario, c int) labels.Set {
	if n := b.Name(); n != "" && !strings.HasPrefix(n, "/") {
		return labels.Parse(n)
	}
	ls := append(labels.Set{{Key: labels.Benchmark, Value: sc.Name}}, sc.trail...)
	key := labels.Concurrency
	if sc.Workload.Flow != nil {
		key = labels.Users
	}
	return ls.With(key, strconv.Itoa(c))
}

// measure runs one load of arm alone and records it under the
// sub-benchmark's labels; in a gate, with pair (the round's order).
func (s *Suite) measure(b *testing.B, tg testbed.Target, sc Scenario, c int, arm testbed.Arm, rep int, pair *report.Pair) (report.Record, error) {
	run, err := s.runArm(s.ctx, tg, sc, c, arm, nil)
	if err != nil {
		return report.Record{}, err
	}
	if pair != nil {
		pair.Window = testbed.WindowSpan(run)
	}
	return s.record(b, sc, c, arm, rep, run, pair), nil
}

// runArm runs one load of arm on tg, waiting at barrier (a duet's) when
// it is set.
func (s *Suite) runArm(ctx context.Context, tg testbed.Target, sc Scenario, c int, arm testbed.Arm, barrier testbed.Barrier) (*testbed.Run, error) {
	spec, err := s.spec(sc, c, arm)
	if err != nil {
		return nil, err
	}
	spec.Barrier = barrier
	return tg.Run(ctx, spec)
}

// record keeps run, of arm in round rep, under the sub-benchmark's
// labels, and logs what the run says about itself.
func (s *Suite) record(b *testing.B, sc Scenario, c int, arm testbed.Arm, rep int, run *testbed.Run, pair *report.Pair) report.Record {
	ls := runLabels(b, sc, c)
	top := ls.Value(labels.Benchmark)
	rec := report.Record{Benchmark: top, Labels: ls, Concurrency: c, Repeat: rep, Run: run, Pair: pair}
	if sc.ladder != nil {
		rec.Beyond = beyondSLO(run, sc.ladder.slo)
	}
	s.keep(rec)
	s.drainLog(label(b, sc) + "/arm=" + string(arm))
	for _, w := range run.Warnings {
		s.logf("%s/arm=%s: warning: %s", label(b, sc), arm, w.Detail)
	}
	s.noteCPU(label(b, sc)+"/arm="+string(arm), rec)
	if run.Recovery != nil {
		s.logf("%s/arm=%s: %s: %s", label(b, sc), arm, run.Fault, run.Recovery)
	}
	if rec.Beyond != "" {
		s.logf("%s/arm=%s: past the knee: %s", label(b, sc), arm, rec.Beyond)
	}
	return rec
}

// spec is one run of arm at concurrency c of sc: the workload and the
// window the flags and the scenario ask for.
func (s *Suite) spec(sc Scenario, c int, arm testbed.Arm) (testbed.Spec, error) {
	win := s.windowOf(sc, c)
	if win.Concurrency != c {
		return testbed.Spec{}, fmt.Errorf("the scenario's Window changed Concurrency from %d to %d, so the name c=%d would lie; sweep it with Scenario.Concurrency", c, win.Concurrency, c)
	}
	// What the client sends is the workload's: -protocol and
	// -request-size unless the scenario (or a Protocols axis) sets its own.
	fresh := s.Config.GateFresh && (arm == testbed.Reference || arm == testbed.Candidate) // -gate-fresh
	return testbed.Spec{Arm: arm, Workload: s.Config.client(sc.Workload), Window: win, Fault: sc.Fault, Fresh: fresh}, nil
}

// windowOf is the window of sc's runs at c as the flags and the scenario
// ask for it: the plan's window, the scenario's rate, -gate-fraction, and
// long enough for its MinRequests.
func (s *Suite) windowOf(sc Scenario, c int) testbed.Window {
	win := s.Config.window(c)
	if sc.window > 0 {
		win.Duration = sc.window // the run's plan shortened it (planScenario)
	}
	if sc.Workload.Flow != nil {
		win.QPS = 0 // a flow's rate is its users' and their think time's
	}
	if sc.Window != nil {
		sc.Window(&win)
	}
	if f := s.Config.GateFraction; f > 0 && win.RateFraction > 0 {
		win.QPS, win.RateFraction = win.QPS/win.RateFraction*f, f // -gate-fraction
	}
	win.Duration = max(win.Duration, sc.enough(win.QPS))
	return win
}

// skipUnsupported skips sc when tg cannot run it, checked as it will run:
// with -protocol and -request-size filled in (Config.client).
func (s *Suite) skipUnsupported(b *testing.B, sc Scenario, tg testbed.Target) {
	chk := sc
	chk.Workload = s.Config.client(sc.Workload)
	if err := chk.check(tg); err != nil {
		b.Skipf("%s: skipped on the %s target: %v", label(b, sc), tg.Name(), err)
	}
}

// window is the plan's default window of one run at concurrency n: the
// flags' rate, durations and rate tolerance. -warmup=0 is no warm-up,
// which the window says with a negative Warmup (its zero is the loadgen's
// default, 1 s).
func (c *Config) window(n int) testbed.Window {
	warmup := c.Warmup
	if warmup == 0 {
		warmup = -1
	}
	return testbed.Window{
		Concurrency:   n,
		QPS:           c.QPS,
		Duration:      c.Duration,
		Warmup:        warmup,
		RateTolerance: c.RateTolerance,
	}
}

// client is the plan's default of what a client sends (-protocol,
// -request-size): a scenario's own workload fields win.
func (c *Config) client(w testbed.Workload) testbed.Workload {
	w.Protocol = cmp.Or(w.Protocol, c.Protocol)
	w.RequestSize = cmp.Or(w.RequestSize, c.RequestSize)
	return w
}

// report is a leaf sub-benchmark: its i-th call with b.N == 1 (one per
// -count iteration) reports the i-th run; calls with a larger b.N, which
// only a user's -benchtime causes, report the same run again. No leaf call
// ever starts a load.
func (s *Suite) report(b *testing.B, recs []report.Record) {
	rec := recs[min(s.repeatIndex(b), len(recs)-1)]
	switch {
	case !rec.Valid() && rec.Beyond != "":
		b.Logf("past the knee (kept for the curve, not a failure): %s", rec.Invalid.String())
	case !rec.Valid():
		s.mu.Lock()
		s.failed = true
		s.mu.Unlock()
		b.Errorf("INVALID run: %s", rec.Invalid.String())
	}
	reportMetrics(b, rec.Run)
	if r := rec.Recovery; r != nil {
		b.ReportMetric(float64(r.Failed), "fault-errors")
		b.ReportMetric(r.FirstSuccess.Seconds()*1e3, "first-ok-ms")
		b.ReportMetric(r.Recovered.Seconds()*1e3, "recovery-ms")
	}
}

// perRun is how long a run is expected to take: the planned time per
// run, or the mean of the n runs that took elapsed when they took longer
// (a cluster's set-up, or a wait for the kubelets' refreshes).
func perRun(planned, elapsed time.Duration, n int) time.Duration {
	if n <= 0 {
		return planned
	}
	return max(planned, elapsed/time.Duration(n))
}
