package suite

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/validity"
)

func point(arm testbed.Arm, qps float64, invalid ...validity.Reason) Point {
	return Point{Arm: arm, Run: &testbed.Run{Arm: arm, Load: &load.Result{AchievedQPS: qps}, Invalid: invalid}}
}

// The open-loop rate comes from the slower meshed arm's median capacity:
// the baseline's is ten times what a sidecar serves on 2 cores.
func TestMeshCapacity(t *testing.T) {
	c, err := meshCapacity([]Point{
		point(testbed.Baseline, 20000), point(testbed.Reference, 2000), point(testbed.Candidate, 1800),
		point(testbed.Baseline, 21000), point(testbed.Reference, 2200), point(testbed.Candidate, 1900),
		point(testbed.Baseline, 19000), point(testbed.Reference, 2100), point(testbed.Candidate, 100, validity.New(validity.Errors, "errors: 40 of 100 requests failed")),
	})
	require.NoError(t, err)
	assert.Equal(t, 1850.0, c, "candidate median of its valid runs (1800, 1900), below the reference's 2100")

	_, err = meshCapacity([]Point{point(testbed.Baseline, 20000), point(testbed.Meshed, 10, validity.New(validity.MissedRate, "missed target rate"))})
	assert.EqualError(t, err, "no valid meshed run at maximum rate")
}

// After the max point, GateLoad's open value runs at the fraction of it.
func TestGateLoadOpensAtAFractionOfCapacity(t *testing.T) {
	ax := GateLoad(0.5)
	require.Len(t, ax.Values, 2)
	stop, why := ax.Stop([]Point{point(testbed.Baseline, 9000), point(testbed.Meshed, 1000), point(testbed.Meshed, 1200)})
	assert.False(t, stop, why)
	var sc Scenario
	ax.Values[1].Apply(&sc)
	var win testbed.Window
	sc.Window(&win)
	assert.Equal(t, testbed.Window{QPS: 550, RateFraction: 0.5}, win)

	stop, why = GateLoad(0.5).Stop([]Point{point(testbed.Baseline, 9000)})
	assert.True(t, stop)
	assert.Equal(t, "no open-loop point: no valid meshed run at maximum rate", why)
}
