package kube

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/meshbench/meshbench/framework/measure/kubelet"
	"github.com/meshbench/meshbench/framework/testbed"
)

// Aligning a window to the kubelets' refreshes. The kubelet's counters
// (/metrics/resource) are refreshed every 10-15 s, each container on its
// own schedule, and carry the time they were collected. Read as they are
// at a window's edges, they span up to a refresh interval of idle time on
// each side. So, when the counters come from the kubelets, a run keeps
// its load on after the warm-up until every node's counters that matter
// were collected under load, and reads them then; and it keeps its load
// on after the window until they were collected again after the window
// ended. The counters then span whole refresh intervals under one load:
// the same rates as the window's, read over a longer span. The load is
// one run that the reads do not interrupt, stopped once a read was
// refreshed. It used to come in 2 s stretches with the kubelets read
// between them, the load off for each read, which dilutes the rates: the
// kubelets' CPU per 1k requests had read ×0.80-0.93 of the node reads'
// on the same kind cluster in four comparisons, and read ×1.13 in the
// one comparison since.

// refreshPoll is how often the kubelets are read while the load runs.
const refreshPoll = time.Second

// counterState is where the target reads the nodes' CPU and memory
// counters, chosen once by useCounters.
type counterState struct {
	// alignedSaid is closed once the first run aligned to the kubelets'
	// refreshes has said what that costs.
	alignedSaid sync.Once
	// fetch reads one node's counters; counterSource says where (the
	// environment's CPUCounters); onDemand: its samples are taken at the
	// read, so there is no refresh to wait for.
	fetch         func(ctx context.Context, node string) (kubelet.Snapshot, error)
	counterSource string
	onDemand      bool
	// agent reads the nodes' counters with Options.NodeCPU agent; nil
	// otherwise.
	agent *nodeAgent
	// check reads one node at the instant with Options.CheckExec, beside
	// the kubelets' aligned reads; nil otherwise.
	check func(ctx context.Context, node string) (kubelet.Snapshot, error)
}

// aligner reads every node's counters at once and, when they come from
// the kubelets, keeps a run's load on until they were refreshed under it.
// It reads nodes with its counterState, waits at most counterWait
// (Options.CounterWait) and says what to do about diluted counters in
// words.
type aligner struct {
	*counterState
	nodes       []NodeInfo
	counterWait time.Duration
	now         func() time.Time
	words       testbed.Words
}

// aligner is the target's counter reader.
func (t *Target) aligner() aligner {
	return aligner{counterState: &t.counterState, nodes: t.nodes, counterWait: t.o.CounterWait, now: t.now, words: t.o.Words}
}

// aligned reports whether the target's runs align their windows to the
// kubelets' refreshes: the counters come from the kubelets (not read on
// the nodes at the instant), and Options.CounterWait allows a wait.
func (al aligner) aligned() bool {
	return !al.onDemand && al.counterWait >= 0
}

// refreshedSince reports whether every node's counters in snaps, the
// node's own and those of every container that matters, were collected
// at or after since. A container sample without a timestamp is not waited
// for.
func refreshedSince(snaps map[string]kubelet.Snapshot, since time.Time, matters func(kubelet.ContainerKey) bool) bool {
	for _, s := range snaps {
		if s.NodeCPUSeconds.Time.Before(since) {
			return false
		}
		for k, c := range s.Containers {
			if matters(k) && !c.CPUSeconds.Time.IsZero() && c.CPUSeconds.Time.Before(since) {
				return false
			}
		}
	}
	return true
}

// refreshed is the first read of every node's kubelet refreshed under a
// run's load (or the last read, when none was), with the check's reads
// of the nodes taken right after it (Options.CheckExec; nil without),
// and how long the load was kept on for them.
type refreshed struct {
	snaps, check map[string]kubelet.Snapshot
	took         time.Duration
}

// loadUntilRefreshed keeps rs's load on, in one run, for first (when
// first is zero, only if a read now is not refreshed already) and then
// until every node's counters that matter were collected at or after
// since, or for at most Options.CounterWait beyond first, reading every
// node's kubelet as first ends and every refreshPoll after; the load is
// stopped once a read was refreshed and the check has read the nodes.
// Delta says which counters of a read that was not refreshed did not
// move.
func (al aligner) loadUntilRefreshed(ctx context.Context, rs *runState, first time.Duration, since time.Time, matters func(kubelet.ContainerKey) bool) (refreshed, error) {
	start := al.now()
	if first <= 0 {
		// Refreshed already (since the window ended): no load needed.
		snaps, err := al.snapshots(ctx)
		if err != nil {
			return refreshed{}, err
		}
		if refreshedSince(snaps, since, matters) {
			check, err := al.checkReads(ctx)
			return refreshed{snaps: snaps, check: check}, err
		}
	}
	var r refreshed
	err := underLoad(ctx, rs, first+al.counterWait+readStretchMax, func(ended <-chan struct{}) error {
		var err error
		if r.snaps, err = al.pollRefreshed(ctx, start.Add(first+al.counterWait), first, since, matters, ended); err != nil {
			return err
		}
		r.check, err = al.checkReads(ctx)
		return err
	})
	r.took = al.now().Sub(start)
	return r, err
}

// pollRefreshed reads every node's kubelet after first and then every
// refreshPoll, until a read was refreshed since since or deadline passed,
// and returns that read. ended closes when the load ended: an error,
// since the reads are to be taken under it.
func (al aligner) pollRefreshed(ctx context.Context, deadline time.Time, first time.Duration, since time.Time, matters func(kubelet.ContainerKey) bool, ended <-chan struct{}) (map[string]kubelet.Snapshot, error) {
	for wait := first; ; wait = refreshPoll {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-ended:
			return nil, errors.New("the load ended before the kubelets refreshed")
		case <-time.After(wait):
		}
		snaps, err := al.snapshots(ctx)
		if err != nil {
			return nil, err
		}
		if refreshedSince(snaps, since, matters) || !al.now().Before(deadline) {
			return snaps, nil
		}
	}
}

// warmUntilRefreshed is the warm-up of a run whose counters come from
// the kubelets: the warm-up's load, kept on until every node's counters
// that matter were collected after it began; that read opens the window.
func (m *kubeletMeasurement) warmUntilRefreshed(ctx context.Context) error {
	rs := m.rs
	matters, err := m.t.matters(ctx, rs)
	if err != nil {
		return err
	}
	r, err := m.t.aligner().loadUntilRefreshed(ctx, rs, rs.o.Warmup, rs.loadedFrom, matters)
	if err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	m.before, m.checkBefore, m.warmed = r.snaps, r.check, r.took
	return nil
}

// loadPastRefresh follows the window of a run whose counters come from
// the kubelets: its load, kept on until every node's counters that
// matter were collected after the window ended; that read closes it.
func (m *kubeletMeasurement) loadPastRefresh(ctx context.Context, windowEnd time.Time) error {
	matters, err := m.t.matters(ctx, m.rs)
	if err != nil {
		return err
	}
	r, err := m.t.aligner().loadUntilRefreshed(ctx, m.rs, 0, windowEnd, matters)
	if err != nil {
		return fmt.Errorf("load until the kubelets refreshed: %w", err)
	}
	m.after, m.checkAfter, m.tail = r.snaps, r.check, r.took
	return nil
}

// matters says which containers a run of rs waits for: those of a role,
// as the cluster's pods are now.
func (t *Target) matters(ctx context.Context, rs *runState) (func(kubelet.ContainerKey) bool, error) {
	roleOf, _, err := rs.roles(ctx, t)
	if err != nil {
		return nil, err
	}
	return func(k kubelet.ContainerKey) bool {
		return roleOf(k.Namespace, k.Pod, k.Container) != kubelet.RoleOther
	}, nil
}

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
func underLoad(ctx context.Context, rs *runState, limit time.Duration, read func(ended <-chan struct{}) error) error {
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
	rs.failed += failedRequests(r.frs, rs.o.Protocol)
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
