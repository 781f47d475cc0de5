package testbed_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/validity"
)

var pair = []testbed.Arm{testbed.Reference, testbed.Candidate}

// duetOrders are the first arms of rounds 0..n-1 from seed.
func duetOrders(seed uint64, n int) []testbed.Arm {
	firsts := make([]testbed.Arm, n)
	for rep := range n {
		firsts[rep] = testbed.DuetOrder(pair, seed, rep)[0]
	}
	return firsts
}

// The duet's start order is a function of the recorded seed and the round
// alone: the same seed replays the same orders, another seed draws others.
func TestDuetOrderIsAFunctionOfTheSeed(t *testing.T) {
	for _, seed := range []uint64{1, 42, 0xdeadbeef} {
		assert.Equal(t, duetOrders(seed, 200), duetOrders(seed, 200), "seed %d replays", seed)
	}
	assert.NotEqual(t, duetOrders(1, 200), duetOrders(2, 200), "another seed, other orders")
	for rep := range 10 {
		assert.ElementsMatch(t, pair, testbed.DuetOrder(pair, 7, rep), "both arms in every round")
	}
	assert.Equal(t, []testbed.Arm{testbed.Reference, testbed.Candidate}, pair, "the caller's slice untouched")
}

// Over 2k rounds from round 0 each arm starts first exactly k times (every
// block of two rounds holds both orders), and the blocks are drawn, not a
// fixed alternation: both block patterns occur, about half each.
func TestDuetOrderIsBalancedAndRandomized(t *testing.T) {
	for _, seed := range []uint64{1, 42, 0xdeadbeef, 2026} {
		for _, k := range []int{1, 3, 15, 500} {
			firsts := map[testbed.Arm]int{}
			for _, a := range duetOrders(seed, 2*k) {
				firsts[a]++
			}
			assert.Equal(t, map[testbed.Arm]int{testbed.Reference: k, testbed.Candidate: k}, firsts, "seed %d, %d rounds", seed, 2*k)
		}
		blocks := map[testbed.Arm]int{}
		for i, a := range duetOrders(seed, 2000) {
			if i%2 == 0 {
				blocks[a]++
			}
		}
		// 1000 fair coins: 4.5 standard deviations either side of 500.
		assert.InDelta(t, 500, blocks[testbed.Reference], 70, "seed %d: the reference starts a block about half the time", seed)
	}
}

// Overlap is the share of the longer window both spans cover.
func TestOverlap(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	span := func(from, to time.Duration) testbed.Span { return testbed.Span{Start: t0.Add(from), End: t0.Add(to)} }
	assert.InDelta(t, 1.0, testbed.Overlap(span(0, 3*time.Second), span(0, 3*time.Second)), 1e-12)
	assert.InDelta(t, 0.9, testbed.Overlap(span(0, 10*time.Second), span(time.Second, 11*time.Second)), 1e-12)
	assert.InDelta(t, 0.5, testbed.Overlap(span(0, 4*time.Second), span(time.Second, 3*time.Second)), 1e-12, "of the longer window")
	assert.Zero(t, testbed.Overlap(span(0, time.Second), span(2*time.Second, 3*time.Second)), "apart")
	assert.Zero(t, testbed.Overlap(span(0, time.Second), span(time.Second, 2*time.Second)), "back to back")
	assert.Zero(t, testbed.Overlap(testbed.Span{}, testbed.Span{}), "no windows")
}

func runAt(arm testbed.Arm, start time.Time, d time.Duration) *testbed.Run {
	return &testbed.Run{Arm: arm, Load: &load.Result{Start: start, Elapsed: d}}
}

// Halves that ran one after another, or overlapped for less than
// MinDuetOverlap of the longer window, are both invalid, with the reason;
// halves that ran together stay valid.
func TestJudgeDuetMarksHalvesApartInvalid(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	ref, cand := runAt(testbed.Reference, t0, 3*time.Second), runAt(testbed.Candidate, t0.Add(3*time.Second), 3*time.Second)
	assert.Zero(t, testbed.JudgeDuet(ref, cand))
	for _, r := range []*testbed.Run{ref, cand} {
		require.Len(t, r.Invalid, 1, r.Arm)
		assert.Equal(t, validity.DuetApart, r.Invalid[0].Kind)
		assert.Equal(t, "duet: the reference and candidate windows ran together for 0 % of the longer one, under the 90 % a duet pair needs "+
			"(reference 12:00:00.000+3s, candidate 12:00:03.000+3s): the machine's wander did not hit both alike", r.Invalid[0].Detail)
	}

	ref, cand = runAt(testbed.Reference, t0, 10*time.Second), runAt(testbed.Candidate, t0.Add(1100*time.Millisecond), 10*time.Second)
	assert.InDelta(t, 0.89, testbed.JudgeDuet(ref, cand), 1e-9)
	assert.Equal(t, []validity.Kind{validity.DuetApart}, ref.InvalidKinds(), "89 %: not a duet")
	assert.Equal(t, []validity.Kind{validity.DuetApart}, cand.InvalidKinds())

	ref, cand = runAt(testbed.Reference, t0, 10*time.Second), runAt(testbed.Candidate, t0.Add(time.Second), 10*time.Second)
	assert.InDelta(t, 0.9, testbed.JudgeDuet(ref, cand), 1e-9)
	assert.Empty(t, ref.Invalid, "90 %: a duet")
	assert.Empty(t, cand.Invalid)
}

// The barrier lets no arm past a stage before both reached it, and then
// lets them pass in the duet's order, whichever arrived first.
func TestDuetBarrierReleasesTogetherInOrder(t *testing.T) {
	order := []testbed.Arm{testbed.Candidate, testbed.Reference}
	b := testbed.NewDuetBarrier(order)
	var mu sync.Mutex
	var passed []testbed.Arm
	var wg sync.WaitGroup
	ctx := context.Background()
	wait := func(arm testbed.Arm) {
		defer wg.Done()
		for _, st := range []testbed.Stage{testbed.StageWarmup, testbed.StageAccounting, testbed.StageWindow} {
			assert.NoError(t, b.For(arm).Wait(ctx, st))
			mu.Lock()
			passed = append(passed, arm)
			mu.Unlock()
		}
	}
	wg.Add(1)
	go wait(testbed.Reference) // the second to start arrives first
	time.Sleep(20 * time.Millisecond)
	mu.Lock()
	assert.Empty(t, passed, "nobody passes alone")
	mu.Unlock()
	wg.Add(1)
	go wait(testbed.Candidate)
	wg.Wait()
	assert.Len(t, passed, 6)
	for _, st := range []testbed.Stage{testbed.StageWarmup, testbed.StageAccounting, testbed.StageWindow} {
		assert.Equal(t, order, b.Passed(st), "the first in order is let through first at the %s", st)
	}

	cctx, cancel := context.WithCancelCause(ctx)
	cancel(errors.New("the other arm failed"))
	err := testbed.NewDuetBarrier(order).For(testbed.Reference).Wait(cctx, testbed.StageWindow)
	assert.EqualError(t, err, "reference arm: waiting for the other arm of the duet before its window: the other arm failed")
	assert.EqualError(t, testbed.NewDuetBarrier(order).For(testbed.Baseline).Wait(ctx, testbed.StageWindow), "duet of [candidate reference]: arm baseline is not in it")
}

// A duet's arms share a read at a stage: the first to ask runs it, the
// other gets its result, and an error names the arm whose read failed.
// Without a barrier the read just runs.
func TestSharedReadRunsOnceForADuet(t *testing.T) {
	ctx := context.Background()
	order := []testbed.Arm{testbed.Reference, testbed.Candidate}
	b := testbed.NewDuetBarrier(order)
	var calls atomic.Int32
	read := func(context.Context) (int, error) { return int(calls.Add(1)) * 10, nil }
	got := make([]int, len(order))
	var wg sync.WaitGroup
	for i, arm := range order {
		wg.Go(func() {
			v, err := testbed.Shared(ctx, testbed.Spec{Arm: arm, Barrier: b.For(arm)}, testbed.StageClose, read)
			assert.NoError(t, err)
			got[i] = v
		})
	}
	wg.Wait()
	assert.Equal(t, []int{10, 10}, got, "one read, both arms' result")
	assert.Equal(t, int32(1), calls.Load())
	assert.Contains(t, order, b.ReadBy(testbed.StageClose))
	assert.Equal(t, testbed.Arm(""), b.ReadBy(testbed.StageAccounting), "no read there")

	v, err := testbed.Shared(ctx, testbed.Spec{Arm: testbed.Reference}, testbed.StageClose, read)
	require.NoError(t, err)
	assert.Equal(t, 20, v, "alone, every call reads")

	failing := testbed.NewDuetBarrier(order)
	fail := func(context.Context) (int, error) { return 0, errors.New("node kind-worker: exec failed") }
	_, err = testbed.Shared(ctx, testbed.Spec{Arm: testbed.Candidate, Barrier: failing.For(testbed.Candidate)}, testbed.StageAccounting, fail)
	require.EqualError(t, err, "node kind-worker: exec failed")
	_, err = testbed.Shared(ctx, testbed.Spec{Arm: testbed.Reference, Barrier: failing.For(testbed.Reference)}, testbed.StageAccounting, read)
	require.EqualError(t, err, "the candidate arm's read at the accounting, shared: node kind-worker: exec failed")

	slow := testbed.NewDuetBarrier(order)
	started := make(chan struct{})
	wait := func(ctx context.Context) (int, error) { close(started); <-ctx.Done(); return 0, ctx.Err() }
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_, _ = testbed.Shared(rctx, testbed.Spec{Arm: testbed.Reference, Barrier: slow.For(testbed.Reference)}, testbed.StageClose, wait)
	}()
	<-started
	cctx, cancelOther := context.WithCancelCause(ctx)
	cancelOther(errors.New("the other arm failed"))
	_, err = testbed.Shared(cctx, testbed.Spec{Arm: testbed.Candidate, Barrier: slow.For(testbed.Candidate)}, testbed.StageClose, read)
	assert.EqualError(t, err, "candidate arm: waiting for the reference arm's read at the close: the other arm failed")
}
