package suite

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/validity"
)

// In sequential mode a round is every arm alone, in ABBA order; in a
// duet the reference and the candidate are one unit, started in the
// order the seed draws for the round, and a baseline runs alone beside
// it, before it in even rounds and after it in odd ones.
func TestRoundUnits(t *testing.T) {
	ref, cand, base := testbed.Reference, testbed.Candidate, testbed.Baseline
	one := func(a testbed.Arm) []testbed.Arm { return []testbed.Arm{a} }
	seq := NewWithConfig(&Config{GateMode: testbed.Sequential, Candidate: "caddy"})
	assert.Equal(t, [][]testbed.Arm{one(ref), one(cand)}, seq.roundUnits(Scenario{}, 8, []testbed.Arm{ref, cand}, 0))
	assert.Equal(t, [][]testbed.Arm{one(cand), one(ref)}, seq.roundUnits(Scenario{}, 8, []testbed.Arm{ref, cand}, 1))

	const seed = 9
	duet := NewWithConfig(&Config{GateMode: testbed.Duet, GateSeed: seed, Candidate: "caddy"})
	for rep := range 6 {
		order := testbed.DuetOrder([]testbed.Arm{ref, cand}, seed, rep)
		assert.Equal(t, [][]testbed.Arm{order}, duet.roundUnits(Scenario{}, 8, []testbed.Arm{ref, cand}, rep), "round %d", rep)
		want := [][]testbed.Arm{one(base), order}
		if rep%2 == 1 {
			want = [][]testbed.Arm{order, one(base)}
		}
		assert.Equal(t, want, duet.roundUnits(Scenario{}, 8, []testbed.Arm{base, ref, cand}, rep), "round %d with a baseline", rep)
	}
	assert.Equal(t, [][]testbed.Arm{one(base), one(testbed.Meshed)}, duet.roundUnits(Scenario{}, 8, testbed.Arms, 0), "no reference and candidate: no duet")

	// open-duet: a duet at the open-loop points only, whether the rate is
	// learnt as the gate runs (GateLoad's open point) or set by the
	// scenario's window; one arm after another at maximum rate.
	open := NewWithConfig(&Config{GateMode: testbed.OpenDuet, GateSeed: seed, Candidate: "caddy"})
	fixed := Scenario{Window: func(w *testbed.Window) { w.QPS = 500 }}
	learnt := Scenario{openLoop: true}
	for rep := range 4 {
		order := testbed.DuetOrder([]testbed.Arm{ref, cand}, seed, rep)
		assert.Equal(t, [][]testbed.Arm{order}, open.roundUnits(fixed, 8, []testbed.Arm{ref, cand}, rep), "round %d at a fixed rate", rep)
		assert.Equal(t, [][]testbed.Arm{order}, open.roundUnits(learnt, 8, []testbed.Arm{ref, cand}, rep), "round %d at the gate's open point", rep)
		assert.Equal(t, seq.roundUnits(Scenario{}, 8, []testbed.Arm{ref, cand}, rep), open.roundUnits(Scenario{}, 8, []testbed.Arm{ref, cand}, rep), "round %d at maximum rate", rep)
	}
}

// duetTarget runs nothing: each Run waits at the spec's barrier, unless
// apart, and returns a window that starts as it passes (apart: the
// reference's at t0, the candidate's 3 s later); fail makes the
// candidate's Run fail before its warm-up.
type duetTarget struct {
	fakeTarget
	apart, fail bool
}

func (d *duetTarget) Run(ctx context.Context, s testbed.Spec) (*testbed.Run, error) {
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	if d.fail && s.Arm == testbed.Candidate {
		return nil, errors.New("candidate sidecar exited")
	}
	start := t0
	if d.apart {
		if s.Arm == testbed.Candidate {
			start = t0.Add(3 * time.Second)
		}
	} else {
		for _, st := range []testbed.Stage{testbed.StageWarmup, testbed.StageAccounting, testbed.StageWindow} {
			if err := s.Sync(ctx, st); err != nil {
				return nil, err
			}
		}
		start = time.Now()
	}
	return &testbed.Run{Arm: s.Arm, Load: &load.Result{Requests: 1000, Start: start, Elapsed: 3 * time.Second}}, nil
}

func duetSuite() *Suite {
	s := NewWithConfig(&Config{GateMode: testbed.Duet, GateSeed: 5, Candidate: "caddy", Concurrency: []int{8}})
	s.Log, s.ctx = io.Discard, context.Background()
	return s
}

// A duet's two runs wait for each other and are recorded with their pair;
// halves that did not overlap are both invalid, duet-apart; when one arm
// fails the other stops, and the error is the failed arm's.
func TestMeasureDuet(t *testing.T) {
	order := []testbed.Arm{testbed.Candidate, testbed.Reference}
	sc := Scenario{Name: "BenchmarkUpgradeGate", Path: testbed.OneHop}
	var together, apart []report.Record
	var failed error
	testing.Benchmark(func(b *testing.B) {
		var err error
		together, err = duetSuite().measureDuet(b, &duetTarget{}, sc, 8, order, 3)
		assert.NoError(t, err)
		apart, err = duetSuite().measureDuet(b, &duetTarget{apart: true}, sc, 8, order, 3)
		assert.NoError(t, err)
		_, failed = duetSuite().measureDuet(b, &duetTarget{fail: true}, sc, 8, order, 3)
	})
	require.Len(t, together, 2)
	for i, r := range together {
		assert.Equal(t, order[i], r.Arm)
		assert.Equal(t, 3, r.Repeat)
		assert.Empty(t, r.Invalid)
		assert.Equal(t, report.Pair{Mode: testbed.Duet, Order: order, Seed: 5, Window: testbed.WindowSpan(r.Run), Overlap: r.Pair.Overlap}, *r.Pair)
		assert.GreaterOrEqual(t, r.Pair.Overlap, testbed.MinDuetOverlap)
	}
	require.Len(t, apart, 2)
	for _, r := range apart {
		assert.Equal(t, []validity.Kind{validity.DuetApart}, r.InvalidKinds(), r.Arm)
		assert.Zero(t, r.Pair.Overlap)
	}
	assert.EqualError(t, failed, "duet of candidate+reference: candidate arm: candidate sidecar exited")
}

// A duet on a cluster says where its two arms ran, per workload: on the
// same nodes, or apart, naming each arm's.
func TestDuetNodes(t *testing.T) {
	order := []testbed.Arm{testbed.Candidate, testbed.Reference}
	alike := map[string][]string{"backend": {"kind-worker"}, "loadgen": {"kind-worker2"}}
	assert.Equal(t, "backend on kind-worker (both); loadgen on kind-worker2 (both)",
		duetNodes(order, []*testbed.Run{{Nodes: alike}, {Nodes: alike}}))
	apart := map[string][]string{"backend": {"kind-worker2"}, "frontend": {"kind-worker"}}
	assert.Equal(t, "backend apart: candidate on kind-worker, reference on kind-worker2; frontend apart: candidate on none, reference on kind-worker; loadgen apart: candidate on kind-worker2, reference on none",
		duetNodes(order, []*testbed.Run{{Nodes: alike}, {Nodes: apart}}))
	assert.Empty(t, duetNodes(order, []*testbed.Run{{}, {}}), "a local duet has no nodes to say")
}
