package suite

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/testbed"
)

// duetArms are the arms a duet runs at once: the gate's reference and
// candidate, in the order DuetOrder starts from.
var duetArms = []testbed.Arm{testbed.Reference, testbed.Candidate}

// duet reports whether the rounds of arms at concurrency c of sc run the
// reference and the candidate at once: both are among arms, and
// -gate-mode is duet, or open-duet at an open-loop point.
func (s *Suite) duet(sc Scenario, c int, arms []testbed.Arm) bool {
	if !slices.Contains(arms, testbed.Reference) || !slices.Contains(arms, testbed.Candidate) {
		return false
	}
	switch s.Config.GateMode {
	case testbed.Duet:
		return true
	case testbed.OpenDuet:
		return s.openLoop(sc, c)
	}
	return false
}

// openLoop reports whether sc runs at concurrency c at a fixed rate (the
// gate's loop=open), as a rate it only learns as it runs (GateLoad's open
// point) or one its window sets.
func (s *Suite) openLoop(sc Scenario, c int) bool {
	win := s.Config.window(c)
	if sc.Window != nil {
		sc.Window(&win)
	}
	return win.QPS > 0 || sc.openLoop
}

// roundUnits is round rep of arms at concurrency c of sc as what runs
// one after another: each arm alone (testbed.RoundOrder), or in a duet
// the reference and the candidate as one unit, in their start order
// (testbed.DuetOrder of -gate-seed and rep), with any other arm (a
// baseline) alone before it in even rounds and after it in odd ones.
func (s *Suite) roundUnits(sc Scenario, c int, arms []testbed.Arm, rep int) [][]testbed.Arm {
	var units [][]testbed.Arm
	if !s.duet(sc, c, arms) {
		for _, a := range testbed.RoundOrder(arms, rep) {
			units = append(units, []testbed.Arm{a})
		}
		return units
	}
	for _, a := range arms {
		if !slices.Contains(duetArms, a) {
			units = append(units, []testbed.Arm{a})
		}
	}
	units = append(units, testbed.DuetOrder(duetArms, s.Config.GateSeed, rep))
	return testbed.RoundOrder(units, rep)
}

// measureUnit runs one unit of round rep of arms (roundUnits): one arm
// alone, or a duet's two at once. In a gate with a candidate every record
// says how its round ran (report.Pair).
func (s *Suite) measureUnit(b *testing.B, tg testbed.Target, sc Scenario, c int, unit []testbed.Arm, rep int, arms []testbed.Arm) ([]report.Record, error) {
	if len(unit) > 1 {
		return s.measureDuet(b, tg, sc, c, unit, rep)
	}
	var pair *report.Pair
	if s.Config.Candidate != "" {
		pair = &report.Pair{Mode: testbed.Sequential, Order: testbed.RoundOrder(arms, rep)}
	}
	rec, err := s.measure(b, tg, sc, c, unit[0], rep, pair)
	if err != nil {
		return nil, err
	}
	return []report.Record{rec}, nil
}

// measureDuet runs the arms of order at the same time, each with its own
// loadgen at the same offered load, starting their warm-ups and their
// windows together in that order (testbed.DuetBarrier), and records both,
// invalid when their windows did not overlap enough (testbed.JudgeDuet).
// An error of one arm stops the other.
func (s *Suite) measureDuet(b *testing.B, tg testbed.Target, sc Scenario, c int, order []testbed.Arm, rep int) ([]report.Record, error) {
	runs, err := s.runDuet(s.ctx, tg, sc, c, order)
	if err != nil {
		return nil, fmt.Errorf("duet of %s: %w", unitName(order), err)
	}
	overlap := testbed.JudgeDuet(runs[0], runs[1])
	if note := duetNodes(order, runs); note != "" && rep == 0 {
		s.logf("%s: duet placement: %s", label(b, sc), note)
	}
	recs := make([]report.Record, len(order))
	for i, arm := range order {
		pair := &report.Pair{Mode: testbed.Duet, Order: order, Seed: s.Config.GateSeed, Window: testbed.WindowSpan(runs[i]), Overlap: overlap}
		recs[i] = s.record(b, sc, c, arm, rep, runs[i], pair)
	}
	return recs, nil
}

// runDuet runs the arms of order at once, each in its own goroutine, and
// returns their runs in that order. The first error cancels the others,
// and is the one returned.
func (s *Suite) runDuet(ctx context.Context, tg testbed.Target, sc Scenario, c int, order []testbed.Arm) ([]*testbed.Run, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	barrier := testbed.NewDuetBarrier(order)
	runs := make([]*testbed.Run, len(order))
	errs := make([]error, len(order))
	var wg sync.WaitGroup
	for i, arm := range order {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runs[i], errs[i] = s.runArm(ctx, tg, sc, c, arm, barrier.For(arm))
			if errs[i] != nil {
				cancel(fmt.Errorf("%s arm: %w", arm, errs[i]))
			}
		}()
	}
	wg.Wait()
	if errors.Join(errs...) == nil {
		return runs, nil
	}
	// Every error cancelled ctx with itself: the cause is the first one,
	// or why the run stopped when that came first.
	return nil, context.Cause(ctx)
}

// duetNodes says where a duet's two arms ran, per workload, from the
// runs' Nodes (a cluster's; "" locally): "backend on kind-worker (both)",
// or each arm's nodes when they differ.
func duetNodes(order []testbed.Arm, runs []*testbed.Run) string {
	if len(runs) != 2 || runs[0].Nodes == nil || runs[1].Nodes == nil {
		return ""
	}
	workloads := slices.Sorted(maps.Keys(runs[0].Nodes))
	for w := range runs[1].Nodes {
		if !slices.Contains(workloads, w) {
			workloads = append(workloads, w)
		}
	}
	slices.Sort(workloads)
	var parts []string
	for _, w := range workloads {
		a, b := runs[0].Nodes[w], runs[1].Nodes[w]
		if slices.Equal(a, b) {
			parts = append(parts, fmt.Sprintf("%s on %s (both)", w, strings.Join(a, ",")))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s apart: %s on %s, %s on %s", w, order[0], cmp.Or(strings.Join(a, ","), "none"), order[1], cmp.Or(strings.Join(b, ","), "none")))
	}
	return strings.Join(parts, "; ")
}

// unitName names a unit of a round: "reference+candidate" for a duet.
func unitName(unit []testbed.Arm) string {
	names := make([]string, len(unit))
	for i, a := range unit {
		names[i] = string(a)
	}
	return strings.Join(names, "+")
}

// duetNote says, in the progress line, that an arm runs in a duet.
func duetNote(unit []testbed.Arm) string {
	if len(unit) < 2 {
		return ""
	}
	return fmt.Sprintf(" (duet: %s at once, started in that order)", unitName(unit))
}

// modeNote says, in the verdict's header, how the pairs were run when
// both arms ran at once, or their processes afresh.
func (s *Suite) modeNote() string {
	fresh := ""
	if s.Config.GateFresh {
		fresh = ", each arm's sidecars and apps started afresh before every window (-gate-fresh)"
	}
	switch s.Config.GateMode {
	case testbed.Duet:
		return fmt.Sprintf(", both at once in every round (-gate-mode=duet, -gate-seed=%d)%s", s.Config.GateSeed, fresh)
	case testbed.OpenDuet:
		return fmt.Sprintf(", both at once in every round of the open-loop points, one after another at maximum rate (-gate-mode=open-duet, -gate-seed=%d)%s", s.Config.GateSeed, fresh)
	}
	return fresh
}
