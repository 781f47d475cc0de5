package suite

import (
	"cmp"
	"flag"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/framework/testbed"
)

// planMargin is the share of the time to the deadline (go test's -timeout
// and its minute of grace) a run keeps free: it plans to be done measuring
// three quarters of the way there, so that the report, the teardown and a
// slow round still end before the go command kills the binary.
const planMargin = 0.25

// minWindow is the shortest window the planner shortens a local run's
// windows to: a window still holds thousands of requests at every
// concurrency the scenarios sweep, and many 100 ms CPU ticks. Windows on a
// cluster are never shortened (the kubelet's counters refresh every 10 s).
const minWindow = time.Second

// runPlan is how a benchmark run fits its time: the moment measuring must
// be done by, and what the plan changed to get there.
type runPlan struct {
	end     time.Time // zero: no deadline and no -budget
	why     string    // what set end, for messages
	benches []string  // the top-level benchmarks -bench selects, in run order
	all     []string  // every benchmark of the package, selected or not
	notes   []string  // windows shortened and scenarios skipped, one line each
}

// planRun sets the run's plan before anything is measured, and prints it:
// the benchmarks -bench selects, and when measuring must end, from go
// test's -timeout (less planMargin) and -budget, whichever is sooner.
func (s *Suite) planRun(m *testing.M) {
	bench := flagValue("test.bench")
	if bench == "" {
		return // tests only: no sweep to plan
	}
	s.plan.benches = selectedBenchmarks(m, bench)
	s.plan.all = selectedBenchmarks(m, ".")
	if !s.deadline.IsZero() {
		// the go command kills the binary a minute after -timeout; the
		// plan ends a quarter of that time earlier, and at least
		// deadlineReserve before it
		kill := s.deadline.Sub(s.started)
		s.plan.end = s.started.Add(min(time.Duration(float64(kill)*(1-planMargin)), kill-deadlineReserve))
		s.plan.why = fmt.Sprintf("go test's -timeout %v and its minute of grace, less a %.0f %% margin", kill-goKillGrace, 100*planMargin)
	}
	if b := s.Config.Budget; b > 0 && (s.plan.end.IsZero() || s.started.Add(b).Before(s.plan.end)) {
		s.plan.end = s.started.Add(b)
		s.plan.why = fmt.Sprintf("-budget %v", b)
	}
	if s.plan.end.IsZero() {
		s.logf("plan: %d benchmarks (%s), no deadline (-timeout 0) and no -budget: every window as asked", len(s.plan.benches), strings.Join(s.plan.benches, ", "))
		return
	}
	s.logf("plan: %d benchmarks (%s), measured within %v (%s); a scenario that would not leave the ones after it their shortest sweep gets shorter windows (down to %v locally), else is skipped, and the run says which",
		len(s.plan.benches), strings.Join(s.plan.benches, ", "), time.Until(s.plan.end).Round(time.Second), s.plan.why, minWindow)
}

// flagValue is the value of the flag called name, "" when it is not
// defined.
func flagValue(name string) string {
	if f := flag.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

// selectedBenchmarks lists the benchmarks of m whose names the top level
// of go test's -bench pattern matches, in the order they run. testing.M
// does not export its benchmarks, nor does the testing package offer
// another way to list them, so their names are read by reflection; should
// a Go release rename the field, TestLifecycleSetsUpAndTearsDownOnce
// fails on the plan line ("plan: 0 benchmarks").
func selectedBenchmarks(m *testing.M, pattern string) []string {
	re, err := regexp.Compile(topLevel(pattern))
	if err != nil || m == nil {
		return nil
	}
	bs := reflect.ValueOf(m).Elem().FieldByName("benchmarks")
	if !bs.IsValid() || bs.Kind() != reflect.Slice {
		return nil
	}
	var names []string
	for i := range bs.Len() {
		if name := bs.Index(i).FieldByName("Name"); name.IsValid() && re.MatchString(name.String()) {
			names = append(names, name.String())
		}
	}
	return names
}

// topLevel is the part of a -bench pattern that matches top-level names:
// up to the first slash outside brackets and parentheses, as the testing
// package splits it.
func topLevel(pattern string) string {
	depth := 0
	for i := 0; i < len(pattern); i++ {
		switch pattern[i] {
		case '[', '(':
			depth++
		case ']', ')':
			depth--
		case '\\':
			i++ // the escaped byte is not a separator
		case '/':
			if depth == 0 {
				return pattern[:i]
			}
		}
	}
	return pattern
}

// fitWindow decides a scenario's window so that it ends in time: left is
// the time to the plan's end, after the shortest sweeps of the benchmarks
// that follow it are kept aside; the scenario is runs runs of overhead
// plus a window each. It returns the window to run with, and false when
// even minWindow does not fit.
func fitWindow(left time.Duration, runs int, overhead, window, least time.Duration) (time.Duration, bool) {
	if runs <= 0 || time.Duration(runs)*(overhead+window) <= left {
		return window, true
	}
	fit := left/time.Duration(runs) - overhead
	if fit < least {
		return 0, false
	}
	return min(window, fit.Truncate(100*time.Millisecond)), true
}

// scenarioRuns is how many runs a scenario's sweep plans: every axis
// value (each applied, as the sweep does: a placement sets its own c),
// concurrency, arm and round.
func (s *Suite) scenarioRuns(sc Scenario, arms int) int {
	if len(sc.Axes) == 0 {
		_, conc := s.concurrency(sc.withShorthands())
		return arms * s.reps() * len(conc)
	}
	n := 0
	for _, v := range sc.Axes[0].Values {
		n += s.scenarioRuns(sc.at(v), arms) // as sweepAxis applies it
	}
	return n
}

// scenarioLonger is the time sc's MinRequests adds to its sweep beyond
// windows of w: what each run whose rate needs a longer window runs more.
func (s *Suite) scenarioLonger(sc Scenario, arms int, w time.Duration) time.Duration {
	if len(sc.Axes) > 0 {
		var more time.Duration
		for _, v := range sc.Axes[0].Values {
			more += s.scenarioLonger(sc.at(v), arms, w)
		}
		return more
	}
	_, conc := s.concurrency(sc.withShorthands())
	var more time.Duration
	for _, c := range conc {
		more += time.Duration(arms*s.reps()) * max(0, sc.enough(s.windowOf(sc, c).QPS)-w)
	}
	return more
}

// runOverhead is the time a run takes beside its window: the warm-up (or a
// flow's ramp) and about 0.3 s of setting up and reading counters.
func (s *Suite) runOverhead(sc Scenario) time.Duration {
	if f := cmp.Or(sc.Workload.Flow, sc.Flow); f != nil {
		return f.Ramp() + 300*time.Millisecond
	}
	return s.Config.Warmup + 300*time.Millisecond
}

// planScenario fits a scenario's sweep to the time left, once, at its
// outermost Sweep: it runs as asked when it fits with the shortest sweeps
// of the benchmarks after it; else with shorter windows (locally, not
// under minWindow); else it is skipped, saying so. An upgrade gate is
// never shortened (its windows are part of what it compares): the
// deadline stops it between rounds instead.
func (s *Suite) planScenario(b *testing.B, sc Scenario, tg testbed.Target) Scenario {
	if sc.planned {
		return sc // planned at the outermost Sweep
	}
	sc.planned = true
	top, _, _ := strings.Cut(b.Name(), "/")
	sc = s.lengthenWindow(top, sc)
	asked := cmp.Or(sc.window, s.Config.Duration)
	arms := len(armsOf(tg, sc))
	i := slices.Index(s.plan.benches, top)
	if s.plan.end.IsZero() || i < 0 || s.gate != nil {
		return sc
	}
	least := max(minWindow, sc.leastWindow())
	if s.Config.Target != "local" {
		least = asked
	}
	// the benchmarks after this one keep a point each at its shortest
	after := time.Duration(len(s.plan.benches)-i-1) * time.Duration(arms*s.reps()) * (minWindow + s.Config.Warmup + 300*time.Millisecond)
	left := time.Until(s.plan.end) - after - s.scenarioLonger(sc, arms, least)
	runs, overhead := s.scenarioRuns(sc, arms), s.runOverhead(sc)
	w, ok := fitWindow(left, runs, overhead, asked, least)
	switch {
	case !ok:
		note := fmt.Sprintf("%s: skipped: %d runs need at least %v with %v windows, and %v is left (%s, keeping the benchmarks after it their shortest sweep); give a longer -timeout or -budget, or fewer scenarios (-bench)",
			top, runs, time.Duration(runs)*(overhead+least), least, max(left, 0).Round(time.Second), s.plan.why)
		s.planNote(note)
		b.Skip(note)
	case w < asked:
		sc.window = w
		s.planNote(fmt.Sprintf("%s: windows shortened from %v to %v: %d runs in the %v left (%s, keeping the benchmarks after it their shortest sweep)",
			top, asked, w, runs, left.Round(time.Second), s.plan.why))
	}
	return sc
}

// faultRecovery is the part of a window a fault scenario keeps after its
// fault, for the restart and the recovery it measures.
const faultRecovery = 2 * time.Second

// leastWindow is the shortest window sc's runs need: its own MinWindow,
// and for a fault, the fault's time into the window and faultRecovery
// after it.
func (sc Scenario) leastWindow() time.Duration {
	least := sc.MinWindow
	if sc.Fault != nil {
		least = max(least, sc.Fault.After+faultRecovery)
	}
	return least
}

// lengthenWindow gives sc the least window it needs when the run's window
// (the default, -duration or -benchtime) is shorter, and says so.
func (s *Suite) lengthenWindow(top string, sc Scenario) Scenario {
	if need := sc.leastWindow(); need > s.Config.Duration {
		sc.window = need
		s.planNote(fmt.Sprintf("%s: windows of %v, the least this scenario needs (its MinWindow, or a fault and %v to recover), instead of %v", top, need, faultRecovery, s.Config.Duration))
	}
	return sc
}

// planNote logs what the plan changed and keeps it for the results.
func (s *Suite) planNote(note string) {
	s.mu.Lock()
	s.plan.notes = append(s.plan.notes, note)
	s.mu.Unlock()
	s.logf("plan: %s", note)
}

// planNotes are the plan's changes so far.
func (s *Suite) planNotes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.plan.notes)
}

// enough is the window that holds sc.MinRequests at an open-loop rate of
// qps req/s, rounded up to 100 ms; 0 when sc asks for none or the rate
// is not known before the run (closed loop).
func (sc Scenario) enough(qps float64) time.Duration {
	if sc.MinRequests <= 0 || qps <= 0 {
		return 0
	}
	need := time.Duration(math.Ceil(float64(sc.MinRequests) / qps * 10))
	return need * 100 * time.Millisecond
}
