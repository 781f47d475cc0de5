package kube

import (
	"context"
	"fmt"
	"time"

	"github.com/meshbench/meshbench/framework/measure/kubelet"
	"github.com/meshbench/meshbench/framework/testbed"
)

// kubeletMeasurement is the kube target's testbed.Measurement: every
// node's counters (its kubelet's, or read on the node: Target.fetch) read
// as the window opens and again as it closes.
type kubeletMeasurement struct {
	t *Target
	// rs is the run: its arm and loadgens give the containers' roles, its
	// loaded span and its fault what the counters are judged against.
	rs *runState
	// before and after are the reads that open and close the window;
	// aligned to the kubelets' refreshes, they are read under load
	// (warmUntilRefreshed, loadPastRefresh), which took warmed and tail.
	before, after map[string]kubelet.Snapshot
	warmed, tail  time.Duration
	// checkBefore and checkAfter are the check's reads of the nodes right
	// after before and after (Options.CheckExec); nil without one.
	checkBefore, checkAfter map[string]kubelet.Snapshot
}

// Start reads every node's counters, unless the warm-up has read them
// as the kubelets refreshed; in a duet, once for both arms
// (testbed.Shared).
func (m *kubeletMeasurement) Start(ctx context.Context) error {
	if m.before != nil {
		return nil
	}
	var err error
	m.before, err = testbed.Shared(ctx, m.rs.s, testbed.StageAccounting, m.t.aligner().snapshots)
	return err
}

// closeUnderLoad keeps the load on after the window until the kubelets
// refreshed (loadPastRefresh), when the counters are aligned to them, or,
// in a duet, until both arms' windows ended and the nodes were read once
// for both (closeDuet). It reports whether it did.
func (m *kubeletMeasurement) closeUnderLoad(ctx context.Context, windowEnd time.Time) (bool, error) {
	if m.t.aligner().aligned() {
		return true, m.loadPastRefresh(ctx, windowEnd)
	}
	if m.rs.s.Barrier != nil {
		return true, m.closeDuet(ctx)
	}
	return false, nil
}

// closeDuet closes the window of a duet's arm whose counters are read at
// the instant: its load stays on while it waits for the other arm's
// window to end (testbed.StageClose) and while the nodes are read, once
// for both arms. Read after both loads stopped, as each arm read every
// node on its own, the counters of a 10 s window spanned 11.8-12.7 s on
// kind, 87-89 % under load (2026-12-05): every pair's CPU was diluted.
func (m *kubeletMeasurement) closeDuet(ctx context.Context) error {
	rs := m.rs
	err := underLoad(ctx, rs, readStretchMax, func(<-chan struct{}) error {
		if err := rs.s.Sync(ctx, testbed.StageClose); err != nil {
			return err
		}
		var err error
		m.after, err = testbed.Shared(ctx, rs.s, testbed.StageClose, m.t.aligner().snapshots)
		return err
	})
	if err != nil {
		return fmt.Errorf("duet: the nodes' counters after the window: %w", err)
	}
	return nil
}

// Stop reads the counters again, on the nodes at once, unless
// closeUnderLoad has read them, and turns the two reads into the window: a
// restart other than the fault's, or a throttled proxy or loadgen,
// invalidates it; a node's counters mostly idle invalidate its CPU
// figures alone.
func (m *kubeletMeasurement) Stop(ctx context.Context) (testbed.Measured, error) {
	rs := m.rs
	after := m.after
	if after == nil {
		// The window ends now, not after the pods are listed.
		var err error
		if after, err = m.t.aligner().snapshots(ctx); err != nil {
			return testbed.Measured{}, err
		}
	}
	roleOf, pods, err := rs.roles(ctx, m.t)
	if err != nil {
		return testbed.Measured{}, err
	}
	wr := m.t.resourceWindow(roleOf, m.before, after, rs.loadedFrom, rs.loadedTo, rs.fault.killedKey())
	wr.Window.Aligned = m.after != nil && m.t.aligner().aligned()
	if wr.Window.Aligned {
		m.t.alignedSaid.Do(m.sayCost)
	}
	if m.checkBefore != nil && m.checkAfter != nil {
		check := m.t.resourceWindow(roleOf, m.checkBefore, m.checkAfter, rs.loadedFrom, rs.loadedTo, rs.fault.killedKey())
		wr.Window.Check = &check.Window
	}
	warn := append(wr.Warnings, m.t.placedApartOf(rs, pods)...)
	return testbed.Measured{Window: wr.Window, Invalid: wr.Invalid, Warnings: warn, CPUInvalid: wr.CPUInvalid,
		Nodes: workloadNodes(rs.a, pods)}, nil
}

// sayCost says, once, what aligning to the kubelets costs a run.
func (m *kubeletMeasurement) sayCost() {
	m.t.o.Logf("kube target: CPU from the kubelets' counters: each run keeps its load on until they refresh, before its window (this run: %v, warm-up included) and after it (%v); %s reads them at the instant",
		m.warmed.Round(100*time.Millisecond), m.tail.Round(100*time.Millisecond), m.t.o.Words.Say(testbed.SettingNodeCPU, NodeCPUAgent))
}
