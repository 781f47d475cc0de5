package report

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/stats"
	"github.com/meshbench/meshbench/framework/testbed"
)

// flowRecord is record with two flow steps: home took lat, cart 3 × lat,
// n requests each, of which cart's failed ones failed.
func flowRecord(arm testbed.Arm, rep int, lat float64, n, failed int64) Record {
	r := record(arm, rep, lat, 100, 0)
	step := func(name string, lat float64, failed int64) *load.Result {
		h := stats.DefaultResolution.NewHistogram()
		for range n {
			h.Record(lat)
		}
		return &load.Result{Step: name, Requests: n, Errors: failed, AchievedQPS: float64(n) / 2, Latency: h.Export()}
	}
	r.Run.Load.Steps = []*load.Result{step("home", lat, 0), step("cart", 3*lat, failed)}
	return r
}

func TestCompareSteps(t *testing.T) {
	cs := Compare([]Record{
		flowRecord(testbed.Baseline, 0, 0.001, 100, 0), flowRecord(testbed.Meshed, 0, 0.002, 90, 1),
		flowRecord(testbed.Baseline, 1, 0.001, 100, 0), flowRecord(testbed.Meshed, 1, 0.004, 80, 0),
	})
	require.Len(t, cs, 1)
	require.Len(t, cs[0].Steps, 2)
	home, cart := cs[0].Steps[0], cs[0].Steps[1]
	assert.Equal(t, "home", home.Step)
	assert.Equal(t, int64(200), home.Baseline.Requests)
	assert.Equal(t, int64(170), cart.Meshed.Requests)
	assert.Equal(t, int64(1), cart.Meshed.Failures)
	assert.InDelta(t, 3, cart.Baseline.Mean.Median, 1e-9)
	// Paired by repeat: home +1 ms then +3 ms, cart +3 ms then +9 ms.
	assert.InDelta(t, 2, home.MeanDelta.Median, 1e-9)
	assert.InDelta(t, 1, home.MeanDelta.Lo, 1e-9)
	assert.InDelta(t, 3, home.MeanDelta.Hi, 1e-9)
	assert.InDelta(t, 6, cart.MeanDelta.Median, 1e-9)
	assert.Equal(t, 2, cart.MeanDelta.N)

	var b bytes.Buffer
	PrintSummary(&b, cs)
	assert.Contains(t, b.String(), "user flow")
	assert.Regexp(t, `BenchmarkOneHop/c=4  cart +3\.000 +9\.000 +6\.000 \(3\.000–9\.000\) .* 200/170 +0/1`, b.String())
	// Other loads print no step table.
	b.Reset()
	PrintSummary(&b, Compare([]Record{record(testbed.Baseline, 0, 0.001, 100, 0), record(testbed.Meshed, 0, 0.002, 90, 1)}))
	assert.NotContains(t, b.String(), "user flow")
}
