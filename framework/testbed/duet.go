package testbed

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/meshbench/meshbench/framework/validity"
)

// Mode is how the arms of a round run: one after another, or two at once.
type Mode string

// The modes of a round.
const (
	// Sequential runs every arm of a round alone, one after another
	// (RoundOrder).
	Sequential Mode = "sequential"
	// Duet runs a gate's reference and candidate at the same time, each
	// with its own loadgen at the same offered load (Bulej et al., "Duet
	// Benchmarking", ICPE 2020): both share the machine, so its wander
	// hits both halves of the pair alike.
	Duet Mode = "duet"
	// OpenDuet runs a gate's open-loop points as duets and its
	// maximum-rate points sequentially. On kind, a duet at maximum rate
	// shared the machine unevenly between its arms' pods: the per-pair SD
	// of the throughput ratio was 20-39 % in 3 duet gates, against 9-24 %
	// with the arms one after another; at a fixed rate a duet was the
	// tighter (sidecar CPU per request 1.5-10.4 % in 7 gates against
	// 10.9-13.9 %; 2026-12-05, docs/gate.md).
	OpenDuet Mode = "open-duet"
)

// Modes are the valid modes.
var Modes = []Mode{Sequential, Duet, OpenDuet}

// ModeList is Modes in words, for errors: "sequential, duet or open-duet".
func ModeList() string {
	words := make([]string, len(Modes))
	for i, m := range Modes {
		words[i] = string(m)
	}
	last := len(words) - 1
	return strings.Join(words[:last], ", ") + " or " + words[last]
}

// MinDuetOverlap is the share of the longer of its two measured windows
// that the halves of a duet pair must have run together; below it the
// pair is not a duet and both halves are invalid (validity.DuetApart).
const MinDuetOverlap = 0.9

// Stage is a point of a run at which a duet's arms wait for each other.
type Stage string

// The stages a target waits at, in this order.
const (
	// StageWarmup is just before the loadgens' warm-up.
	StageWarmup Stage = "warm-up"
	// StageAccounting is after the warm-up, just before the window's
	// resource accounting starts.
	StageAccounting Stage = "accounting"
	// StageWindow is just before the loadgens' measured window: the
	// first arm's load must not starve the other's start on a small
	// machine.
	StageWindow Stage = "window"
	// StageClose is just after the loadgens' measured window, with each
	// arm's load kept on: a duet's arms read the nodes' counters there
	// once for both (Shared), so neither arm's read idles the other's
	// span.
	StageClose Stage = "close"
)

// Barrier holds a run at each Stage until the other arms of its duet
// reach it too (Spec.Barrier). Wait returns an error when ctx ends first.
type Barrier interface {
	Wait(ctx context.Context, stage Stage) error
}

// Sync waits at stage on the spec's Barrier; with none it returns at once.
func (s Spec) Sync(ctx context.Context, stage Stage) error {
	if s.Barrier == nil {
		return nil
	}
	return s.Barrier.Wait(ctx, stage)
}

// DuetOrder is the order a duet's arms start in round rep (0-based):
// randomized multiple interleaved trials (RMIT, Abedi and Brecht 2017) in
// blocks of two rounds. Each block's first round is arms as listed or
// reversed, as a generator seeded with (seed, block) draws it, and its
// second round is the reverse of its first. So the order is a
// deterministic function of seed and rep, which the results record, and
// over every 2k rounds from round 0 each of two arms starts first exactly
// k times, without the fixed alternation of RoundOrder.
func DuetOrder(arms []Arm, seed uint64, rep int) []Arm {
	out := slices.Clone(arms)
	block := rand.New(rand.NewPCG(seed, uint64(rep/2)))
	if block.IntN(2) == 1 {
		slices.Reverse(out)
	}
	if rep%2 == 1 {
		slices.Reverse(out)
	}
	return out
}

// NewSeed draws a seed for DuetOrder, never 0 (which means "draw one").
func NewSeed() uint64 {
	for {
		if s := rand.Uint64(); s != 0 {
			return s
		}
	}
}

// DuetBarrier lets a duet's arms pass each Stage together: once every arm
// has reached a stage, they pass it in the order given to NewDuetBarrier,
// each released by the one before it.
type DuetBarrier struct {
	order  []Arm
	mu     sync.Mutex
	stages map[Stage]*duetStage
	reads  map[Stage]*sharedRead
}

// sharedRead is a read the arms of a duet share at a stage: the first arm
// to ask runs it, the others wait until done.
type sharedRead struct {
	done chan struct{}
	by   Arm
	v    any
	err  error
}

// duetStage is one stage: how many arms reached it, and one release per
// arm, in order.
type duetStage struct {
	arrived int
	release []chan struct{}
	passed  []Arm // in the order released
}

// NewDuetBarrier is the barrier of arms that start in order.
func NewDuetBarrier(order []Arm) *DuetBarrier {
	return &DuetBarrier{order: slices.Clone(order), stages: map[Stage]*duetStage{}, reads: map[Stage]*sharedRead{}}
}

// For is arm's side of the barrier, for its Spec.
func (d *DuetBarrier) For(arm Arm) Barrier { return duetSide{d: d, arm: arm} }

type duetSide struct {
	d   *DuetBarrier
	arm Arm
}

func (s duetSide) Wait(ctx context.Context, stage Stage) error { return s.d.wait(ctx, s.arm, stage) }

func (s duetSide) share(ctx context.Context, stage Stage, read func(context.Context) (any, error)) (any, error) {
	return s.d.share(ctx, s.arm, stage, read)
}

// sharer is a Barrier whose arms can share one read at a stage.
type sharer interface {
	share(ctx context.Context, stage Stage, read func(context.Context) (any, error)) (any, error)
}

// Shared is read's result for the arm of s at stage. In a duet
// (DuetBarrier) read runs once for all its arms, by the first arm to ask,
// and the others get its result: the arms of a duet on a cluster read the
// nodes' counters once at each edge of the window, not once each.
// Without a barrier it just runs read.
func Shared[T any](ctx context.Context, s Spec, stage Stage, read func(context.Context) (T, error)) (T, error) {
	var zero T
	sh, ok := s.Barrier.(sharer)
	if !ok {
		return read(ctx)
	}
	v, err := sh.share(ctx, stage, func(ctx context.Context) (any, error) { return read(ctx) })
	if err != nil {
		return zero, err
	}
	t, ok := v.(T)
	if !ok {
		return zero, fmt.Errorf("the duet's read at the %s is a %T, not a %T", stage, v, zero)
	}
	return t, nil
}

// share runs read for arm at stage, unless another arm of the duet has
// run it there: then it waits for that read's result.
func (d *DuetBarrier) share(ctx context.Context, arm Arm, stage Stage, read func(context.Context) (any, error)) (any, error) {
	d.mu.Lock()
	r := d.reads[stage]
	first := r == nil
	if first {
		r = &sharedRead{done: make(chan struct{}), by: arm}
		d.reads[stage] = r
	}
	d.mu.Unlock()
	if first {
		r.v, r.err = read(ctx)
		close(r.done)
		return r.v, r.err
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		return nil, fmt.Errorf("%s arm: waiting for the %s arm's read at the %s: %w", arm, r.by, stage, context.Cause(ctx))
	}
	if r.err != nil {
		return nil, fmt.Errorf("the %s arm's read at the %s, shared: %w", r.by, stage, r.err)
	}
	return r.v, nil
}

// ReadBy is the arm that ran the duet's shared read at stage; "" when
// none ran.
func (d *DuetBarrier) ReadBy(stage Stage) Arm {
	d.mu.Lock()
	defer d.mu.Unlock()
	if r := d.reads[stage]; r != nil {
		return r.by
	}
	return ""
}

// wait marks arm at stage, and returns when it may pass: after every arm
// arrived and the arm before it in the order passed.
func (d *DuetBarrier) wait(ctx context.Context, arm Arm, stage Stage) error {
	i := slices.Index(d.order, arm)
	if i < 0 {
		return fmt.Errorf("duet of %v: arm %s is not in it", d.order, arm)
	}
	d.mu.Lock()
	st := d.stages[stage]
	if st == nil {
		st = &duetStage{release: make([]chan struct{}, len(d.order))}
		for k := range st.release {
			st.release[k] = make(chan struct{})
		}
		d.stages[stage] = st
	}
	st.arrived++
	if st.arrived == len(d.order) {
		d.releaseLocked(st, 0)
	}
	d.mu.Unlock()
	select {
	case <-st.release[i]:
	case <-ctx.Done():
		return fmt.Errorf("%s arm: waiting for the other arm of the duet before its %s: %w", arm, stage, context.Cause(ctx))
	}
	if i+1 < len(st.release) {
		d.mu.Lock()
		d.releaseLocked(st, i+1)
		d.mu.Unlock()
	}
	return nil
}

// releaseLocked lets the i-th arm of the order pass st.
func (d *DuetBarrier) releaseLocked(st *duetStage, i int) {
	st.passed = append(st.passed, d.order[i])
	close(st.release[i])
}

// Passed lists the arms that passed stage, in the order they were let
// through.
func (d *DuetBarrier) Passed(stage Stage) []Arm {
	d.mu.Lock()
	defer d.mu.Unlock()
	if st := d.stages[stage]; st != nil {
		return slices.Clone(st.passed)
	}
	return nil
}

// Span is when a run's measured window ran.
type Span struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// WindowSpan is the measured window of r (its loadgen's, warm-up
// excluded); zero when r has no load result.
func WindowSpan(r *Run) Span {
	if r == nil || r.Load == nil {
		return Span{}
	}
	return Span{Start: r.Load.Start, End: r.Load.Start.Add(r.Load.Elapsed)}
}

// Overlap is the share of the longer of a and b that both spans cover:
// 1 for the same window, 0 for windows apart or empty.
func Overlap(a, b Span) float64 {
	longer := max(a.End.Sub(a.Start), b.End.Sub(b.Start))
	if longer <= 0 {
		return 0
	}
	start, end := a.Start, a.End
	if b.Start.After(start) {
		start = b.Start
	}
	if b.End.Before(end) {
		end = b.End
	}
	return max(end.Sub(start), 0).Seconds() / longer.Seconds()
}

// JudgeDuet checks that the halves of a duet pair ran together: when
// their measured windows overlap for less than MinDuetOverlap of the
// longer one, both are invalid (validity.DuetApart), with the overlap and
// both windows. It returns the overlap.
func JudgeDuet(a, b *Run) float64 {
	sa, sb := WindowSpan(a), WindowSpan(b)
	ov := Overlap(sa, sb)
	if ov >= MinDuetOverlap {
		return ov
	}
	for _, r := range []*Run{a, b} {
		r.Invalidate(validity.DuetApart, "duet: the %s and %s windows ran together for %.0f %% of the longer one, under the %.0f %% a duet pair needs (%s %s, %s %s): the machine's wander did not hit both alike",
			a.Arm, b.Arm, ov*100, MinDuetOverlap*100, a.Arm, sa, b.Arm, sb)
	}
	return ov
}

// String is the span as start+duration, e.g. "12:01:02.345+3s".
func (s Span) String() string {
	return s.Start.UTC().Format("15:04:05.000") + "+" + s.End.Sub(s.Start).Round(time.Millisecond).String()
}
