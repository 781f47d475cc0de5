package suite_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/labels"
	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/suite"
	"github.com/meshbench/meshbench/framework/testbed"
)

// TestUserFlowOnLocalTarget runs a short BenchmarkUserFlow-like scenario
// on the real local target, both arms: users through the frontend, which
// fans the cart step out to the backend three times.
func TestUserFlowOnLocalTarget(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes; run without -short")
	}
	s, _ := newSuite(t, "-duration", "1s", "-thresholds", "none")
	s.Config.Repeats = 1
	const users = 4
	flow := &load.Flow{Users: users, SpawnRate: 20, Think: 20 * time.Millisecond, Steps: []load.Step{
		{Name: "home", Path: "/"},
		{Name: "cart", Path: "/cart", Fanout: 3},
	}}
	setUp(t, s)
	testing.Benchmark(func(b *testing.B) {
		s.Sweep(b, suite.Scenario{Name: "BenchmarkUserFlow", Path: testbed.TwoHop, Flow: flow})
	})
	recs := s.Records()
	require.Len(t, recs, 2, "one round of both arms")
	for _, r := range recs {
		name := r.Name()
		assert.Equal(t, "BenchmarkUserFlow/users=4/arm="+string(r.Arm), name)
		assert.Equal(t, "4", r.Labels.Value(labels.Users))
		assert.Equal(t, users, r.Concurrency)
		assert.True(t, r.Valid(), "%s invalid: %v", name, r.Invalid)
		require.Len(t, r.Load.Steps, 2, name)
		home, cart := r.Load.Steps[0], r.Load.Steps[1]
		assert.Equal(t, []string{"home", "cart"}, []string{home.Step, cart.Step})
		assert.Positive(t, cart.Requests, name)
		assert.Equal(t, home.Requests+cart.Requests, r.Load.Requests, name)
		assert.Equal(t, r.Load.Requests, r.Load.Latency.Count, name)
		// The apps' counters over the whole run (ramp included): the
		// frontend served F = homes + carts, the backend homes + 3 × carts,
		// and each user alternates home, cart from home, so homes - carts
		// is between 0 and the users.
		var f, be int64
		for _, e := range r.Edges {
			switch {
			case e.Src == "loadgen" && e.Dst == "frontend":
				f += e.Requests
			case e.Src == "frontend" && e.Dst == "backend":
				be += e.Requests
			}
		}
		carts := (be - f) / 2
		assert.Equal(t, f+2*carts, be, "%s: the backend served an odd surplus: frontend %d, backend %d", name, f, be)
		assert.LessOrEqual(t, f-2*carts, int64(users), "%s: homes - carts", name)
		assert.GreaterOrEqual(t, f-2*carts, int64(0), "%s: homes - carts", name)
		assert.Empty(t, testbed.CheckEdges(r.Arm, r.Path, r.Edges, r.Load.Requests), name)
	}
	require.NoError(t, s.Finish())
	files, _ := filepath.Glob(filepath.Join(s.Config.ResultsDir, "*.json"))
	require.Len(t, files, 1)
	res, err := report.Read(files[0])
	require.NoError(t, err)
	require.Len(t, res.Records, 2)
	for _, r := range res.Records {
		require.NotNil(t, r.Workload.Flow, "the flow is recorded")
		require.Len(t, r.Load.Steps, 2, "the steps' raw histograms are recorded")
		assert.Equal(t, r.Load.Steps[1].Requests, r.Load.Steps[1].Latency.Count)
	}
}
