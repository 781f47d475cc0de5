package suite

import (
	"context"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/stats"
	"github.com/meshbench/meshbench/framework/target"
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
	s.NewTarget = func(ctx context.Context, _ *Config, _ func(string, ...any)) (target.Target, error) {
		close(started)
		<-ctx.Done()
		time.Sleep(300 * time.Millisecond) // deleting what it created
		cleaned.Store(true)
		return nil, ctx.Err()
	}
	go func() { _, _ = s.target() }()
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
	run := func(arm target.Arm, invalid ...validity.Reason) *target.Run {
		h := stats.DefaultResolution.NewHistogram()
		for range 100 {
			h.Record(0.001)
		}
		return &target.Run{Arm: arm, Path: target.OneHop, Invalid: invalid,
			Load: &load.Result{Options: load.Options{Resolution: stats.DefaultResolution}, Requests: 100, AchievedQPS: 100, Latency: h.Export()}}
	}
	s := NewWithConfig(&Config{Target: "local", Thresholds: "none", ResultsDir: t.TempDir()})
	s.Log = io.Discard
	s.recs = []report.Record{
		{Benchmark: "BenchmarkOneHop", Concurrency: 1, Run: run(target.Baseline)},
		{Benchmark: "BenchmarkOneHop", Concurrency: 1, Run: run(target.Meshed, validity.New(validity.MeshNotOn, "edge loadgen → backend was plain"))},
		{Benchmark: "BenchmarkOneHop", Concurrency: 2, Run: run(target.Baseline)},
		{Benchmark: "BenchmarkOneHop", Concurrency: 2, Run: run(target.Meshed)},
	}
	err := s.Finish()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not a valid result: invalid runs in BenchmarkOneHop/c=1 (1)")
	assert.NotContains(t, err.Error(), "c=2")
}
