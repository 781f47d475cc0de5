package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/validity"
	"github.com/meshbench/meshbench/framework/verdict"
)

// dilutedRecords are three interleaved pairs at c=4 whose second meshed
// run had its CPU counters diluted by idle time.
func dilutedRecords() []Record {
	var recs []Record
	for rep := range 3 {
		recs = append(recs, record(testbed.Baseline, rep, 0.000100, 10000, 0), record(testbed.Meshed, rep, 0.000300, 5000, 400))
	}
	recs[3].CPUInvalid.Add(validity.CPUDiluted, "CPU diluted: the kubelet's counters span 20s on node n1 (45%% under load)")
	return recs
}

// TestThresholdsLeaveDilutedCPUUndecided: checked against the thresholds,
// the comparison's CPU metrics are undecided, saying why, although their
// figures would pass; its latency, throughput and memory are decided.
func TestThresholdsLeaveDilutedCPUUndecided(t *testing.T) {
	cs := Compare(dilutedRecords())
	require.Len(t, cs, 1)
	c := cs[0]
	assert.Equal(t, 1, c.Meshed.CPUInvalid)
	assert.Zero(t, c.Baseline.CPUInvalid)
	assert.Zero(t, c.Meshed.Invalid, "the run stands")
	obs := c.Observation()
	why := "the CPU figures of 1 of the meshed arm's 3 runs are not valid (their cpuInvalid reasons: counters under load for less than 90 % of their span are diluted by idle time)"
	assert.Equal(t, map[verdict.Metric]string{verdict.SidecarCPUPer1kReqMs: why, verdict.SidecarCPUOverBaselineCPU: why, verdict.MeshCores: why}, obs.Unjudged)

	// A baseline run's CPU that is not valid leaves the ratio over the
	// baseline's CPU unjudged, and nothing else.
	recs := dilutedRecords()
	recs[0].CPUInvalid, recs[3].CPUInvalid = recs[3].CPUInvalid, nil
	why0 := "the CPU figures of 1 of the baseline arm's 3 runs are not valid (their cpuInvalid reasons: counters under load for less than 90 % of their span are diluted by idle time)"
	assert.Equal(t, map[verdict.Metric]string{verdict.SidecarCPUOverBaselineCPU: why0}, Compare(recs)[0].Observation().Unjudged)

	th, err := verdict.Load("../verdict/testdata/good.yaml")
	require.NoError(t, err)
	v := th.Check([]verdict.Observation{obs})
	assert.Equal(t, 5, v.Checked, "p50, p99, throughput, sidecar CPU and RSS; mesh cores has no limit there")
	assert.Empty(t, v.Breaches)
	require.Len(t, v.Undecided, 1)
	assert.Equal(t, "testdata/good.yaml:13: BenchmarkOneHop/c=4: undecided sidecar CPU per 1k requests: got 800.0 CPU-ms (800.0–800.0, n=3), not judged: "+why,
		strings.Replace(v.Undecided[0].Error(), "../verdict/", "", 1))
	assert.NoError(t, v.Err())

	// The same runs, every one valid: every limit held.
	recs = dilutedRecords()
	recs[3].CPUInvalid = nil
	v = th.Check([]verdict.Observation{Compare(recs)[0].Observation()})
	assert.Empty(t, v.Undecided)
	assert.Empty(t, v.Breaches)
	assert.Equal(t, 5, v.Checked)
}

// TestSummaryMarksDilutedCPU: the terminal summary marks every CPU figure
// of the meshed arm, whose CPU includes the diluted run, and none of the
// baseline's, nor memory; a legend under the table counts the runs.
func TestSummaryMarksDilutedCPU(t *testing.T) {
	var b bytes.Buffer
	PrintSummary(&b, Compare(dilutedRecords()))
	rows := map[string][]string{}
	var legend []string
	for _, l := range strings.Split(b.String(), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) == 12 && f[0] == "BenchmarkOneHop/c=4":
			rows[f[1]] = f[2:]
		case strings.HasPrefix(l, CPUMark):
			legend = append(legend, l)
		}
	}
	// loadgen m, app m, sidecar m, mesh cores, sidecar:app, per pod,
	// sidecar and app CPU-ms/1k req, sidecar RSS idle→load MiB, node CPU %.
	assert.Equal(t, []string{"300†", "200†", "400†", "0.400†", "2.00×†", "-", "800.0†", "400.0†", "32→64", "50†"}, rows["meshed"])
	assert.Equal(t, []string{"300", "200", "-", "0.000", "-", "-", "-", "400.0", "-", "50"}, rows["baseline"])
	assert.Equal(t, []string{"† the CPU figures of 1 of the 6 runs summarised are not valid (their cpuInvalid reasons in the results: counters under load for less than 90 % of their span are diluted by idle time); " +
		"a marked figure includes them, and no threshold or gate decision rests on them"}, legend)

	b.Reset()
	recs := dilutedRecords()
	recs[3].CPUInvalid = nil
	PrintSummary(&b, Compare(recs))
	assert.NotContains(t, b.String(), CPUMark)
	assert.InDelta(t, 800, Compare(recs)[0].Meshed.CPUPer1k[measure.RoleSidecar].Median, 1e-9, "the figures themselves do not change")
}

// TestThresholdsLeaveTheKneeLatencyUnjudged: at a rate ladder's rung past
// the knee (the meshed arm missed its rate), the threshold check leaves the
// latency limits unjudged, saying why, and judges throughput, CPU and
// memory; a rung the meshed arm held is judged whole.
func TestThresholdsLeaveTheKneeLatencyUnjudged(t *testing.T) {
	var recs []Record
	for rep := range 3 {
		m := record(testbed.Meshed, rep, 0.050, 4700, 400)
		m.Invalid.Add(validity.MissedRate, "missed target rate: achieved 4728.2 req/s of 8000.0 (tolerance 5%%)")
		m.Beyond = "missed its rate: missed target rate: achieved 4728.2 req/s of 8000.0 (tolerance 5%)"
		recs = append(recs, record(testbed.Baseline, rep, 0.000100, 8000, 0), m)
	}
	c := Compare(recs)[0]
	assert.Equal(t, recs[1].Beyond, c.Beyond)
	obs := c.Observation()
	assert.Equal(t, c.Beyond, obs.PastKnee)
	th, err := verdict.Load("../verdict/testdata/good.yaml")
	require.NoError(t, err)
	v := th.Check([]verdict.Observation{obs})
	var undecided []verdict.Metric
	for _, u := range v.Undecided {
		undecided = append(undecided, u.Metric)
		assert.Contains(t, u.Error(), "not judged: the rung is past the rate ladder's knee (the meshed arm missed its rate: missed target rate: achieved 4728.2 req/s of 8000.0 (tolerance 5%)): its latency is a queue's, and the knee is the finding, not a limit")
	}
	assert.ElementsMatch(t, []verdict.Metric{verdict.P50DeltaMs, verdict.P99DeltaPct}, undecided, "the latency limits good.yaml sets")
	for _, b := range v.Breaches {
		assert.False(t, verdict.IsLatency(b.Metric), "%v", b)
	}

	held := Compare([]Record{record(testbed.Baseline, 0, 0.0001, 1000, 0), record(testbed.Meshed, 0, 0.0003, 990, 400)})[0]
	assert.Empty(t, held.Beyond)
	assert.Empty(t, held.Observation().PastKnee)
}
