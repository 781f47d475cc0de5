package kube

import (
	"context"
	"errors"
	"fmt"
	"sync"
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
// asked for as the warm-up ends, with the load kept on until it is done,
// and the read that closes it is asked for as the window ends, with the
// load on again until it is done. The counters then span the window and
// parts of those stretches, all at the window's load: their rates stand
// for the window's (measure.Window.Aligned), whatever the reads' latency.
// A run without a warm-up reads them idle, around its window, and the
// coverage judges them (minCoverage).

// A stretch of load around a read lasts until the read is done, at least
// readStretchMin, so that every replica has started its run before it is
// stopped, and at most readStretchMax beyond the read's planned start (a
// read that takes longer is judged by the coverage). The stop is sent
// every stopPoll until the runs have answered: one sent before a
// replica's run began would be lost.
const (
	readStretchMin = 500 * time.Millisecond
	readStretchMax = 5 * time.Second
	stopPoll       = 200 * time.Millisecond
)

// loadRan is what a stretch of load returned.
type loadRan struct {
	frs []*fortioResult
	err error
}

// underLoad runs rs's load outside the measured window (its timeline
// off) for at most limit, calls read while it runs, and stops it once
// read returns, not before readStretchMin. ended, read's argument, closes
// when the load ended on its own. The load's failed requests count with
// the run's.
func (t *Target) underLoad(ctx context.Context, rs *runState, limit time.Duration, read func(ended <-chan struct{}) error) error {
	opts := rs.unmeasured()
	done := make(chan loadRan, 1)
	ended := make(chan struct{})
	started := time.Now()
	go func() {
		frs, err := runShards(ctx, rs.lgs, opts, limit)
		done <- loadRan{frs, err}
		close(ended)
	}()
	readErr := read(ended)
	select {
	case <-ctx.Done():
	case <-ended:
	case <-time.After(time.Until(started.Add(readStretchMin))):
	}
	r := stopUntilEnded(ctx, rs.lgs, done)
	if err := errors.Join(r.err, readErr); err != nil {
		return err
	}
	rs.failed += failedRequests(r.frs)
	return nil
}

// stopUntilEnded stops the runs of every replica of lgs, every stopPoll
// until they answered on done, and returns their answer.
func stopUntilEnded(ctx context.Context, lgs []*loadgen, done <-chan loadRan) loadRan {
	tick := time.NewTicker(stopPoll)
	defer tick.Stop()
	for {
		stopLoadgens(ctx, lgs)
		select {
		case r := <-done:
			return r
		case <-tick.C:
		}
	}
}

// readUnderLoad reads every node's counters readAt into a stretch of rs's
// load (underLoad), which lasts until the read is done.
func (t *Target) readUnderLoad(ctx context.Context, rs *runState, readAt time.Duration) (map[string]kubelet.Snapshot, error) {
	var snaps map[string]kubelet.Snapshot
	err := t.underLoad(ctx, rs, readAt+readStretchMax, func(ended <-chan struct{}) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ended:
			return errors.New("the load ended before the counters were read")
		case <-time.After(readAt):
		}
		var err error
		snaps, err = t.snapshots(ctx)
		return err
	})
	return snaps, err
}

// stopLoadgens stops the runs of every replica of lgs, concurrently.
func stopLoadgens(ctx context.Context, lgs []*loadgen) {
	var wg sync.WaitGroup
	for _, lg := range lgs {
		wg.Go(func() { lg.stop(ctx) })
	}
	wg.Wait()
}

// warmThenRead is the warm-up of a run whose counters are read on the
// nodes at the instant: the warm-up's load, kept on while the read that
// opens the window is taken.
func (m *kubeletMeasurement) warmThenRead(ctx context.Context) error {
	before, err := m.t.readUnderLoad(ctx, m.rs, m.rs.o.Warmup)
	if err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	m.before, m.underLoad = before, true
	return nil
}

// readAfterWindow closes the window of a run that opened it under load
// (warmThenRead): the load on again while the nodes' counters are read.
func (m *kubeletMeasurement) readAfterWindow(ctx context.Context) error {
	after, err := m.t.readUnderLoad(ctx, m.rs, 0)
	if err != nil {
		return fmt.Errorf("after the window: %w", err)
	}
	m.after = after
	return nil
}
