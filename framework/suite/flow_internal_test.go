package suite

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/labels"
	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/stats"
	"github.com/meshbench/meshbench/framework/testbed"
)

// TestFlowMetrics reports a flow's run as benchstat reads it: the
// average response time, and each step's figures in units named for it.
func TestFlowMetrics(t *testing.T) {
	step := func(name string, lats ...float64) *load.Result {
		h := stats.DefaultResolution.NewHistogram()
		for _, l := range lats {
			h.Record(l)
		}
		return &load.Result{Step: name, Requests: int64(len(lats)), Errors: 1, AchievedQPS: 2, Latency: h.Export()}
	}
	home, cart := step("home", 0.001, 0.003), step("cart", 0.010, 0.010)
	all := stats.DefaultResolution.NewHistogram()
	for _, l := range []float64{0.001, 0.003, 0.010, 0.010} {
		all.Record(l)
	}
	run := &testbed.Run{Load: &load.Result{Requests: 4, Latency: all.Export(), Steps: []*load.Result{home, cart}}}
	got := testing.Benchmark(func(b *testing.B) { reportMetrics(b, run) }).Extra
	assert.InDelta(t, 6, got["mean-ms"], 1e-9, "(1 + 3 + 10 + 10) / 4, exact")
	assert.InDelta(t, 2, got["home-mean-ms"], 1e-9)
	assert.InDelta(t, 10, got["cart-mean-ms"], 1e-9)
	assert.Equal(t, 2.0, got["cart-requests"])
	assert.Equal(t, 1.0, got["cart-failures"])
	assert.Equal(t, 2.0, got["home-req/s"])
	for _, unit := range []string{"p95-ms", "home-p50-ms", "home-p95-ms", "home-p99-ms", "cart-p50-ms", "cart-p95-ms", "cart-p99-ms"} {
		assert.Contains(t, got, unit)
	}
	assert.InDelta(t, 10, got["cart-p99-ms"], 0.01)
}

// TestFlowSweepLevel names a flow's runs users=N, whatever -concurrency
// says, and a connection load's c=N.
func TestFlowSweepLevel(t *testing.T) {
	s := NewWithConfig(&Config{Concurrency: []int{1, 2}, ConcurrencySet: true})
	key, vals := s.concurrency(Scenario{Workload: testbed.Workload{Flow: &load.Flow{Users: 20, Think: time.Second}}})
	assert.Equal(t, labels.Users, key)
	assert.Equal(t, []int{20}, vals)
	key, vals = s.concurrency(Scenario{Workload: testbed.Workload{Flow: &load.Flow{}}})
	require.Equal(t, labels.Users, key)
	assert.Equal(t, []int{1}, vals, "the flow's default")
	key, vals = s.concurrency(Scenario{Concurrency: []int{8}})
	assert.Equal(t, labels.Concurrency, key)
	assert.Equal(t, []int{1, 2}, vals)
}
