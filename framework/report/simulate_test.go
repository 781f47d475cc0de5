package report

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/verdict"
)

// A machine ×1.6 slower moves both arms alike: the figures in ms and
// CPU-ms grow by 1.6, those relative to the baseline stay; the recorded
// runs are not touched.
func TestSimulateASlowerMachine(t *testing.T) {
	recs := []Record{record(testbed.Baseline, 0, 0.000100, 10000, 0), record(testbed.Meshed, 0, 0.000300, 5000, 400)}
	slow, err := Simulate(recs, Slower(1.6))
	require.NoError(t, err)
	before, after := Compare(recs)[0].Observation().Values, Compare(slow)[0].Observation().Values
	assert.InEpsilon(t, 1.6*before[verdict.P50DeltaMs].Median, after[verdict.P50DeltaMs].Median, 1e-9)
	assert.InEpsilon(t, 1.6*before[verdict.SidecarCPUPer1kReqMs].Median, after[verdict.SidecarCPUPer1kReqMs].Median, 1e-9)
	for _, m := range []verdict.Metric{verdict.P50DeltaPct, verdict.P99DeltaPct, verdict.MeshedP99OverBaselineP50, verdict.SidecarCPUOverBaselineCPU, verdict.ThroughputLossPct, verdict.SidecarRSSMiB} {
		assert.InEpsilon(t, before[m].Median, after[m].Median, 1e-9, m)
	}
	assert.Equal(t, 10000.0/1.6, slow[0].Load.AchievedQPS)
	assert.Equal(t, 10000.0, recs[0].Load.AchievedQPS, "the recorded run is unchanged")
	assert.Equal(t, 300.0, recs[0].Resources.Usage[0].MilliCores, "the recorded run is unchanged")
}

// A change of one arm's one role: the meshed sidecars' CPU doubles, and
// nothing else.
func TestSimulateOneRoleOfOneArm(t *testing.T) {
	recs := []Record{record(testbed.Baseline, 0, 0.000100, 10000, 0), record(testbed.Meshed, 0, 0.000300, 5000, 400)}
	bad, err := Simulate(recs, Change{CPU: 2, Roles: []measure.Role{measure.RoleSidecar}}, testbed.Meshed)
	require.NoError(t, err)
	assert.Equal(t, recs[0].Run, bad[0].Run, "the baseline arm as recorded")
	assert.Equal(t, []float64{300, 200, 800}, []float64{bad[1].Resources.Usage[0].MilliCores, bad[1].Resources.Usage[1].MilliCores, bad[1].Resources.Usage[2].MilliCores})
	before, after := Compare(recs)[0].Observation().Values, Compare(bad)[0].Observation().Values
	assert.InEpsilon(t, 2*before[verdict.SidecarCPUOverBaselineCPU].Median, after[verdict.SidecarCPUOverBaselineCPU].Median, 1e-9)

	_, err = Simulate(recs, Change{Latency: -1})
	assert.EqualError(t, err, "simulate: latency ×-1: want a finite factor > 0, or 0 to leave it")
}
