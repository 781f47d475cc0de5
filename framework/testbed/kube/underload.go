package kube

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/meshbench/meshbench/framework/measure/kubelet"
)

// Reading the nodes' counters under load. Counters read on the nodes at
// the instant (kind's node reads, the node agent) are stamped with the
// moment of the read, but a read takes its time to start: three docker
// execs on a busy 2-core host started about 1.3 s after they were asked
// for in a CI run, so counters read once the window had ended spanned that
// much idle time (11.5-12 s for a 10 s window, 89 % under load, under the
// 90 % the CPU figures need), and as much of the host's own latency was
// added to every run's counters, diluting them. So a run with a warm-up
// keeps its load on around both reads: the read that opens the window is
// asked for as the warm-up ends, with the load kept on for readStretch
// more, and the read that closes it under readStretch of load after the
// window. The counters then span the window and parts of those
// stretches, all at the window's load: their rates stand for the window's
// (measure.Window.Aligned), whatever the reads' latency up to
// readStretch. A run without a warm-up reads them idle, around its
// window, and the coverage judges them (minCoverage).

// readStretch is how long the load stays on after the warm-up and after
// the window while the nodes' counters are read: longer than a read takes
// to start on a busy host (1.3 s measured), shorter than the refresh
// stretches of the kubelet mode's waits.
const readStretch = 2 * time.Second

// loadRan is what a stretch of load returned.
type loadRan struct {
	frs []*fortioResult
	err error
}

// readUnderLoad runs rs's load outside the measured window (its timeline
// off) for d and, at readAt into it, reads every node's counters. It
// returns the read once both are done; the load's failed requests count
// with the run's.
func (t *Target) readUnderLoad(ctx context.Context, rs *runState, d, readAt time.Duration) (map[string]kubelet.Snapshot, error) {
	opts := rs.unmeasured()
	done := make(chan loadRan, 1)
	go func() {
		frs, err := runShards(ctx, rs.lgs, opts, d)
		done <- loadRan{frs, err}
	}()
	timer := time.NewTimer(readAt)
	defer timer.Stop()
	var snaps map[string]kubelet.Snapshot
	var readErr error
	select {
	case <-ctx.Done():
		readErr = ctx.Err()
	case <-timer.C:
		snaps, readErr = t.snapshots(ctx)
	}
	r := <-done
	if err := errors.Join(r.err, readErr); err != nil {
		return nil, err
	}
	rs.failed += failedRequests(r.frs)
	return snaps, nil
}

// warmThenRead is the warm-up of a run whose counters are read on the
// nodes at the instant: the warm-up's load, kept on for readStretch more
// while the read that opens the window is taken.
func (m *kubeletMeasurement) warmThenRead(ctx context.Context) error {
	before, err := m.t.readUnderLoad(ctx, m.rs, m.rs.o.Warmup+readStretch, m.rs.o.Warmup)
	if err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	m.before, m.underLoad = before, true
	return nil
}

// readAfterWindow closes the window of a run that opened it under load
// (warmThenRead): the load kept on for readStretch while the nodes'
// counters are read.
func (m *kubeletMeasurement) readAfterWindow(ctx context.Context) error {
	after, err := m.t.readUnderLoad(ctx, m.rs, readStretch, 0)
	if err != nil {
		return fmt.Errorf("after the window: %w", err)
	}
	m.after = after
	return nil
}
