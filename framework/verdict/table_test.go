package verdict

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/labels"
	"github.com/meshbench/meshbench/framework/metric"
	"github.com/meshbench/meshbench/framework/stats"
)

// ruleYAML writes a one-rule fixture for one-hop at every concurrency,
// setting each metric of limits, in table order.
func ruleYAML(limits map[Metric]float64) string {
	var b strings.Builder
	b.WriteString("target: local\nlimits:\n  - path: one-hop\n    concurrency: \"*\"\n")
	for _, m := range Metrics() {
		if v, ok := limits[m]; ok {
			fmt.Fprintf(&b, "    %s: %s\n", m, strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	return b.String()
}

// quiet is a quiet run of BenchmarkOneHop/c=4 measuring every limit of the
// table, and calibratedAt what Calibrate makes of two such runs: the
// geometric mean of the highest end and twice the lowest, on the
// severity scale of the limit's Overhead.
func quiet() ([]Observation, map[Metric]float64) {
	o := Observation{Scenario: "BenchmarkOneHop/c=4", Labels: labels.Parse("BenchmarkOneHop/c=4"), Path: OneHop, Concurrency: 4,
		Values: map[Metric]stats.Summary{}}
	want := map[Metric]float64{}
	for _, l := range tableLimits() {
		m := Metric(l.Key)
		switch l.Of {
		case metric.Increase: // ×1.9–2.1: √(2.1 × 2·1.9) = 2.82 → 180 %
			o.Values[m], want[m] = iv(100, 90, 110), 180
		case metric.Loss: // ×1.099–1.124: √(1.124 × 2·1.099) = 1.571 → 36 %
			o.Values[m], want[m] = iv(10, 9, 11), 36
		default: // √(11 × 2·9) = 14.07 → 14
			o.Values[m], want[m] = iv(10, 9, 11), 14
		}
		if l.NotCalibrated {
			delete(want, m)
		}
	}
	return []Observation{o}, want
}

// TestEveryTableLimitRoundTrips walks the table (package metric): every
// limit decodes from its fixture key, reads back through Limit.Max, is
// checked, and is calibrated unless set by hand, with no per-limit code
// in this package.
func TestEveryTableLimitRoundTrips(t *testing.T) {
	set := map[Metric]float64{}
	for i, l := range metric.Limits() {
		set[Metric(l.Key)] = float64(i) + 1.5
	}
	th, err := Parse("all.yaml", []byte(ruleYAML(set)))
	require.NoError(t, err)
	assert.Equal(t, set, th.Limits[0].Allowed)

	over := Observation{Scenario: "BenchmarkOneHop/c=4", Path: OneHop, Concurrency: 4, Values: map[Metric]stats.Summary{}}
	for m, v := range set {
		over.Values[m] = one(v + 1)
	}
	v := th.Check([]Observation{over})
	assert.Equal(t, len(metric.Limits()), v.Checked)
	var breached []Metric
	for _, b := range v.Breaches {
		breached = append(breached, b.Metric)
	}
	assert.Equal(t, Metrics(), breached, "every limit breached, in table order")

	// The optional limits may be left out, and are then not limited, but
	// for one of each group (metric.Limit's OneOf): the first of the table.
	kept := map[string]bool{}
	for _, l := range metric.Limits() {
		if l.Optional && (l.OneOf == "" || kept[l.OneOf]) {
			delete(set, Metric(l.Key))
		}
		kept[l.OneOf] = kept[l.OneOf] || l.OneOf != ""
	}
	th, err = Parse("required.yaml", []byte(ruleYAML(set)))
	require.NoError(t, err)
	for _, l := range metric.Limits() {
		_, ok := th.Limits[0].Max(Metric(l.Key))
		_, want := set[Metric(l.Key)]
		assert.Equal(t, want, ok, l.Key)
	}
	assert.Equal(t, []Metric{P50DeltaMs, P99DeltaPct, SidecarCPUPer1kReqMs, SidecarRSSMiB, ThroughputLossPct}, slices.Sorted(maps.Keys(set)),
		"the required limits, and the first of each group")
	_, ok := th.Limits[0].Max("p90DeltaMs")
	assert.False(t, ok, "not a limit of the table")

	// Every limit is calibrated but those set by hand, named here: a new
	// entry marked NotCalibrated fails. The control plane's are measured
	// on a cluster only, never by the main job a calibration runs.
	assert.Equal(t, []Metric{MeshCores, "propagationP50Ms", "propagationP99Ms", "controlPlaneMcoresPerProxy", "controlPlaneRSSMiBPerProxy",
		"propagationP50MsScaled", "propagationP99MsScaled", "controlPlaneMcoresPerProxyScaled", "controlPlaneRSSMiBPerProxyScaled"},
		metricsWhere(func(l metric.Limit) bool { return l.NotCalibrated }))
	// Each calibration writes the limits of its units and those of any.
	for _, u := range []metric.Units{metric.MachineUnits, metric.BaselineUnits} {
		run, want := quiet()
		for _, l := range metric.Limits() {
			if l.Units != metric.AnyUnits && l.Units != u {
				delete(want, Metric(l.Key))
			}
		}
		c, err := Calibrate("local", u, run, run)
		require.NoError(t, err)
		assert.Equal(t, want, c.Points[0].Rule.Allowed)
		th, err = Parse("calibrated.yaml", c.YAML("x"))
		require.NoError(t, err)
		got := th.Limits[0]
		got.Line = 0
		assert.Equal(t, c.Points[0].Rule, got)
	}
	_, err = Calibrate("local", metric.AnyUnits, quietRun())
	assert.EqualError(t, err, "calibrate: units 0: want baseline or machine units")
}

func quietRun() []Observation { run, _ := quiet(); return run }

// TestANewLimitIsOneTableEntry adds a throwaway metric with a limit to the
// table as this package reads it (tableLimits), and changes nothing else:
// fixtures must set it, a rule with it is checked against it, and
// calibration writes it. Package metric's own table stays as it is, so
// that no production hook opens it to other packages; tableLimits is
// where this package reads it, and the only place.
func TestANewLimitIsOneTableEntry(t *testing.T) {
	p75 := metric.Def{Name: "p75", Label: "p75 latency", Unit: "ms", Worse: metric.HigherIsWorse,
		Limits: []metric.Limit{{Key: "p75DeltaMs", Of: metric.Delta, Label: "p75 delta", Unit: "ms", Prec: 2, Want: "milliseconds", Sample: "3"}}}
	saved := tableLimits
	tableLimits = func() []metric.Limit { return append(saved(), p75.Limits...) }
	t.Cleanup(func() { tableLimits = saved })
	const m = Metric("p75DeltaMs")

	// A fixture without it no longer loads.
	_, err := Load("testdata/good.yaml")
	assert.EqualError(t, err, "testdata/good.yaml:5: limits[0].p75DeltaMs: missing; every rule sets all six limits (want milliseconds ≥ 0, e.g. 3)")
	_, err = Parse("typo.yaml", []byte(strings.Replace(ruleYAML(map[Metric]float64{P50DeltaMs: 1, m: 4}), "p75DeltaMs", "p75DeltaMS", 1)))
	assert.EqualError(t, err, "typo.yaml:6: limits[0].p75DeltaMS: unknown field; did you mean p75DeltaMs?")

	// One with it does, and checks it.
	set := map[Metric]float64{P50DeltaMs: 100, SidecarCPUPer1kReqMs: 100}
	for _, k := range required() {
		set[k] = 100
	}
	set[m] = 4
	th, err := Parse("p75.yaml", []byte(ruleYAML(set)))
	require.NoError(t, err)
	limit, ok := th.Limits[0].Max(m)
	assert.True(t, ok)
	assert.Equal(t, 4.0, limit)
	v := th.Check([]Observation{{Scenario: "BenchmarkOneHop/c=4", Path: OneHop, Concurrency: 4,
		Values: map[Metric]stats.Summary{m: one(5), P50DeltaMs: one(1)}}})
	assert.Equal(t, 2, v.Checked)
	assert.EqualError(t, v.Err(), "p75.yaml:3: BenchmarkOneHop/c=4: too high p75 delta: got 5.00ms (n=1) expected ≤ 4.00ms")

	// Calibration limits it and writes it.
	run, _ := quiet()
	c, err := Calibrate("local", metric.MachineUnits, run, run)
	require.NoError(t, err)
	assert.Equal(t, 14.0, c.Points[0].Rule.Allowed[m])
	y := string(c.YAML("x"))
	assert.Contains(t, y, "; p75 delta 10.00 (9.00–11.00), 10.00 (9.00–11.00)ms\n")
	assert.Contains(t, y, "    sidecarRSSMiB: 14\n    p75DeltaMs: 14\n")
	th, err = Parse("calibrated.yaml", []byte(y))
	require.NoError(t, err)
	assert.Equal(t, 14.0, th.Limits[0].Allowed[m])
}
