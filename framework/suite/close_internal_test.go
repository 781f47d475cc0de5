package suite

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/stats"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/validity"
)

// TestInterruptDuringSetUpWaitsForItsCleanUp is Ctrl-C while the target is
// being set up (a kind cluster created, a mesh half installed): the
// teardown must wait for the set-up to delete what it made before the
// process exits, though the suite has no target to close yet.
func TestInterruptDuringSetUpWaitsForItsCleanUp(t *testing.T) {
	ctx, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	s := NewWithConfig(&Config{Target: "kind"})
	s.Log, s.ctx = io.Discard, ctx
	started := make(chan struct{})
	var cleaned atomic.Bool
	s.NewTarget = func(ctx context.Context, _ *Config, _ func(string, ...any)) (testbed.Target, error) {
		close(started)
		<-ctx.Done()
		time.Sleep(300 * time.Millisecond) // deleting what it created
		cleaned.Store(true)
		return nil, ctx.Err()
	}
	go func() { _ = s.setUpTarget(context.Background()) }()
	<-started
	interrupt()
	require.NoError(t, s.close())
	assert.True(t, cleaned.Load(), "close returned before the set-up had cleaned up")
	_, err := s.target()
	assert.ErrorIs(t, err, context.Canceled)
}

// TestFinishFailsOnInvalidRuns: limits that hold on figures with invalid
// runs in them prove nothing, so Finish fails and says which.
func TestFinishFailsOnInvalidRuns(t *testing.T) {
	run := func(arm testbed.Arm, invalid ...validity.Reason) *testbed.Run {
		h := stats.DefaultResolution.NewHistogram()
		for range 100 {
			h.Record(0.001)
		}
		return &testbed.Run{Arm: arm, Path: testbed.OneHop, Invalid: invalid,
			Load: &load.Result{Options: load.Options{Resolution: stats.DefaultResolution}, Requests: 100, AchievedQPS: 100, Latency: h.Export()}}
	}
	s := NewWithConfig(&Config{Target: "local", Thresholds: "none", ResultsDir: t.TempDir()})
	s.Log = io.Discard
	s.recs = []report.Record{
		{Benchmark: "BenchmarkOneHop", Concurrency: 1, Run: run(testbed.Baseline)},
		{Benchmark: "BenchmarkOneHop", Concurrency: 1, Run: run(testbed.Meshed, validity.New(validity.MeshNotOn, "edge loadgen → backend was plain"))},
		{Benchmark: "BenchmarkOneHop", Concurrency: 2, Run: run(testbed.Baseline)},
		{Benchmark: "BenchmarkOneHop", Concurrency: 2, Run: run(testbed.Meshed)},
	}
	err := s.Finish()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not a valid result: invalid runs in BenchmarkOneHop/c=1 (1)")
	assert.NotContains(t, err.Error(), "c=2")
}

// closeCounter is a target whose Close is counted, and fails with err;
// nothing else is called.
type closeCounter struct {
	testbed.Target
	closed atomic.Int32
	err    error
}

func (c *closeCounter) Close(context.Context) error { c.closed.Add(1); return c.err }
func (c *closeCounter) Name() string                { return "counted" }

// finishless is an e2e-framework environment whose Finish funcs did not
// run, as when an earlier func of the same Finish failed.
type finishless struct{ env.Environment }

func (finishless) Run(*testing.M) int { return 1 }

// TestRunTearsDownWhenFinishDidNot: e2e-framework skips the rest of a
// Finish's funcs after one fails, so a TestMain listing Report and
// TearDown in one Finish skipped the teardown whenever the verdict failed
// (every failed or inconclusive gate left its run directory behind). Run
// tears down when TearDown did not run, saying so, once.
func TestRunTearsDownWhenFinishDidNot(t *testing.T) {
	s := NewWithConfig(&Config{Target: "local"})
	var log bytes.Buffer
	s.Log, s.ctx, s.stop, s.done = &log, context.Background(), func() {}, make(chan struct{})
	tg := &closeCounter{}
	s.tg = tg
	assert.Equal(t, 1, s.Run(finishless{}, nil))
	assert.Equal(t, int32(1), tg.closed.Load(), "Run did not tear the target down")
	assert.Contains(t, log.String(), "# meshbench: TearDown did not run (it is not in the environment's Finish, or a func before it in its Finish failed): tearing down now\n")
	require.NoError(t, s.close())
	assert.Equal(t, int32(1), tg.closed.Load(), "a second close tore down again")
}

// tornDownEnv is an e2e-framework environment whose Finish funcs ran,
// TearDown among them.
type tornDownEnv struct {
	env.Environment
	s *Suite
}

func (e tornDownEnv) Run(*testing.M) int {
	_, _ = e.s.TearDown(context.Background(), nil)
	return 0
}

// After TearDown, Run does not tear down again, nor say it does; a
// teardown's error, which e2e-framework only logs at -v 2, still fails
// the exit code.
func TestRunAfterTearDownDoesNotTearDownAgain(t *testing.T) {
	s := NewWithConfig(&Config{Target: "local"})
	var log bytes.Buffer
	s.Log, s.ctx, s.stop, s.done = &log, context.Background(), func() {}, make(chan struct{})
	tg := &closeCounter{err: errors.New("namespace stuck")}
	s.tg = tg
	assert.Equal(t, 1, s.Run(tornDownEnv{s: s}, nil))
	assert.Equal(t, int32(1), tg.closed.Load())
	assert.NotContains(t, log.String(), "TearDown did not run")
}
