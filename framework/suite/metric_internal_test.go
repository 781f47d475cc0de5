package suite

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/gate"
	"github.com/meshbench/meshbench/framework/metric"
	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/verdict"
)

// TestEveryMetricReachesItsConsumers walks the metric table: every entry
// is on the benchmark line under its benchstat unit, gated by the upgrade
// gate, and each of its limits is a key a threshold fixture may set and a
// figure the report hands the threshold check, each with the value the
// entry reads. The entries that stay out of a consumer are the ones that
// always did, named here: a new entry that misses a consumer fails.
func TestEveryMetricReachesItsConsumers(t *testing.T) {
	base, meshed := openRecord(testbed.Baseline, 0, 0, 0.001), openRecord(testbed.Meshed, 0, 400, 0.002)
	// The control plane, measured after the window when asked: at the
	// run's own pods, then with 8 idle pods added.
	meshed.ControlPlane = &testbed.ControlPlane{Phases: []testbed.ControlPlanePhase{
		{Proxies: 2, PropagationMs: []float64{130, 150}, ProbeRTTMs: 2, CPUSeconds: 0.08, Seconds: 2, RSSBytes: 40 << 20},
		{ExtraPods: 8, Proxies: 10, PropagationMs: []float64{140, 170}, ProbeRTTMs: 2, CPUSeconds: 0.14, Seconds: 2, RSSBytes: 50 << 20}}}
	line := testing.Benchmark(func(b *testing.B) { reportMetrics(b, meshed.Run) }).Extra
	cs := report.Compare([]report.Record{base, meshed})
	require.Len(t, cs, 1)
	obs := cs[0].Observation()
	th := everyLimit(t)
	var noLine, notGated, noLimit []string
	for _, d := range metric.All() {
		want, ok := d.Read(meshed.Run)
		require.True(t, ok, "the meshed run has %s", d.Name)
		if d.Benchstat == "" {
			noLine = append(noLine, d.Name)
		} else {
			assert.Equal(t, want, line[d.Benchstat], "benchmark line: %s", d.Benchstat)
		}
		if d.NotGated {
			notGated = append(notGated, d.Name)
		} else {
			assert.Contains(t, gate.Metrics(), gate.Metric(d.Name))
			assert.Equal(t, want, gateValue(meshed, gate.Metric(d.Name)), "gate: %s", d.Name)
			assert.Equal(t, d.Label, gate.Metric(d.Name).Label())
		}
		if len(d.Limits) == 0 {
			noLimit = append(noLimit, d.Name)
		}
		for _, l := range d.Limits {
			m := verdict.Metric(l.Key)
			assert.Contains(t, verdict.Metrics(), m)
			limit, set := th.Limits[0].Max(m)
			assert.True(t, set, "thresholds: %s", l.Key)
			assert.Equal(t, limitValue(l.Key), limit, "thresholds: %s", l.Key)
			assert.Contains(t, obs.Values, m, "report: %s", l.Key)
			if l.Of == metric.Meshed {
				assert.Equal(t, want, obs.Values[m].Median, "report: %s", l.Key)
			}
		}
	}
	assert.Equal(t, []string{metric.MeshCores}, noLine, "no benchmark line")
	assert.Equal(t, []string{metric.MeshCores}, notGated, "not gated")
	assert.Equal(t, []string{metric.P90, metric.P999, metric.WorkloadCPUPer1kReq, metric.SidecarCPUOverWorkloadCPU}, noLimit, "no threshold")
	assert.Len(t, obs.Values, len(metric.Limits()), "the report has no figure outside the table")
}

// everyLimit is a threshold fixture whose one rule sets every limit of the
// table, each to limitValue.
func everyLimit(t *testing.T) *verdict.Thresholds {
	var b strings.Builder
	b.WriteString("target: local\nlimits:\n  - path: \"*\"\n    concurrency: \"*\"\n")
	for _, l := range metric.Limits() {
		fmt.Fprintf(&b, "    %s: %g\n", l.Key, limitValue(l.Key))
	}
	th, err := verdict.Parse("every.yaml", []byte(b.String()))
	require.NoError(t, err)
	return th
}

// limitValue is a value unique to each limit key: its place in the table.
func limitValue(key string) float64 {
	return float64(slices.IndexFunc(metric.Limits(), func(l metric.Limit) bool { return l.Key == key })) + 1.5
}
