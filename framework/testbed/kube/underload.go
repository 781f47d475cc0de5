package kube

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Load kept on while counters are read: the wait for the kubelets'
// refreshes (align.go) runs its load in one loadgen run that the reads do
// not interrupt, and stops it once a read was refreshed.

// A stretch of load around reads lasts until they are done, at least
// readStretchMin, so that every replica has started its run before it is
// stopped, and at most readStretchMax beyond its planned end. The stop is
// sent every stopPoll until the runs have answered: one sent before a
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

// stopLoadgens stops the runs of every replica of lgs, concurrently.
func stopLoadgens(ctx context.Context, lgs []*loadgen) {
	var wg sync.WaitGroup
	for _, lg := range lgs {
		wg.Go(func() { lg.stop(ctx) })
	}
	wg.Wait()
}
