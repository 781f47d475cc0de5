package report

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A sweep of one concurrency is one point on a logarithmic c axis: gonum
// would widen the range through 0, which a log axis cannot draw (it
// panicked in the main job's report of a -concurrency 1 run).
func TestChartOfOnePoint(t *testing.T) {
	c := Chart{ID: "one", Kind: Lines, LogY: true, Series: []Series{{Name: "meshed", Points: []Point{{X: 1, Y: 0.7, Lo: 0.6, Hi: 0.8}}}}}
	svg, err := c.SVG()
	require.NoError(t, err)
	assert.Contains(t, svg, "<svg")
}

// mainJob is a real default main job's results on the local target: every
// shipped scenario, two repeats.
const mainJob = "testdata/mainjob/20261201T195250Z-local.json.gz"

// sweepOf is a run's name without its value on axis: the sweep it belongs
// to. A difference of two runs ("a − b") is the difference of their sweeps.
func sweepOf(run, axis string) string {
	var sides []string
	for _, side := range strings.Split(run, " − ") {
		var keep []string
		for _, part := range strings.Split(side, "/") {
			if !strings.HasPrefix(part, axis+"=") {
				keep = append(keep, part)
			}
		}
		sides = append(sides, strings.Join(keep, "/"))
	}
	return strings.Join(sides, " − ")
}

// mixedCharts checks, from the chart data alone, that every series of a
// chart is of the chart's scenario, every point of a series is a run of
// that scenario's sweep, and no line doubles back on x; it returns what
// breaks that, one line each.
func mixedCharts(charts []Chart) []string {
	var out []string
	for _, ch := range charts {
		if ch.Scenario == "" {
			out = append(out, ch.ID+": no scenario")
		}
		for _, s := range ch.Series {
			if s.Scenario != ch.Scenario {
				out = append(out, fmt.Sprintf("%s %s: series of %q", ch.ID, s.Name, s.Scenario))
			}
			seen := map[float64]bool{}
			for _, p := range s.Points {
				if sweepOf(p.Run, ch.Axis) != s.Scenario {
					out = append(out, fmt.Sprintf("%s %s: point of %q", ch.ID, s.Name, p.Run))
				}
				if ch.Kind == Lines && seen[p.X] {
					out = append(out, fmt.Sprintf("%s %s: two points at x=%g on one line", ch.ID, s.Name, p.X))
				}
				seen[p.X] = true
			}
		}
	}
	return out
}

func runOf(t *testing.T, path string) run {
	t.Helper()
	ins, err := Open(path)
	require.NoError(t, err)
	return newRun(ins[0], nil)
}

// Each scenario of a main job gets its own charts against the axis it
// sweeps, and no chart holds a point of another scenario: the one-hop
// latency line runs through BenchmarkOneHop's c=1, 4, 16 and 32 only, and
// the user flow's 20 users are users, not connections.
func TestEachScenarioIsChartedAgainstItsOwnAxis(t *testing.T) {
	r := runOf(t, mainJob)
	groups := r.charts(0)
	var got [][2]string
	var all []Chart
	byID := map[string]Chart{}
	for _, g := range groups {
		got = append(got, [2]string{g.Scenario, g.Axis})
		all = append(all, g.Charts...)
		for _, c := range g.Charts {
			require.NotContains(t, byID, c.ID, "chart ids are unique")
			byID[c.ID] = c
		}
	}
	assert.Equal(t, [][2]string{
		{"BenchmarkOneHop", "c"}, {"BenchmarkTwoHop", "c"}, {"BenchmarkProtocols/c=8", "protocol"},
		{"BenchmarkPlacement/c=32", "placement"}, {"BenchmarkProxyThreads/c=16", "threads"},
		{"BenchmarkServiceTime/c=8", "service"}, {"BenchmarkPayload/c=8", "payload"}, {"BenchmarkRateLadder/c=16", "qps"},
		{"BenchmarkProxyKilled", "c"}, {"BenchmarkUserFlow", "users"}, {"BenchmarkTwoHop − BenchmarkOneHop", "c"},
	}, got)
	assert.Empty(t, mixedCharts(all))

	xs := func(id, series string) []string {
		var out []string
		for _, s := range byID[id].Series {
			if s.Name == series {
				for _, p := range s.Points {
					out = append(out, fmt.Sprintf("%g %s", p.X, p.Label))
				}
			}
		}
		return out
	}
	assert.Equal(t, []string{"1 c=1", "4 c=4", "16 c=16", "32 c=32"}, xs("latency-BenchmarkOneHop-one-hop", "meshed p99"))
	assert.Equal(t, []string{"20 users=20"}, xs("loss-BenchmarkUserFlow-two-hop", "meshed vs baseline"))
	assert.Equal(t, []string{"128 128B", "1024 1KiB", "16384 16KiB", "102400 100KiB"}, xs("throughput-BenchmarkPayload-c-8-one-hop", "meshed"))
	assert.Equal(t, []string{"0 in-mesh", "1 out-of-mesh", "2 in-mesh-x4"}, xs("latency-BenchmarkPlacement-c-32-one-hop", "baseline p50"))
	assert.Equal(t, Points, byID["latency-BenchmarkPlacement-c-32-one-hop"].Kind, "a category is points, never a line")
	assert.Equal(t, Points, byID["latency-BenchmarkProxyThreads-c-16-one-hop"].Kind, "threads=default is a category")
	assert.Equal(t, Lines, byID["latency-BenchmarkPayload-c-8-one-hop"].Kind)
	assert.Equal(t, []string{"1 c=1", "4 c=4", "16 c=16", "32 c=32"}, xs("extrahop-BenchmarkTwoHop---BenchmarkOneHop", "extra hop Δ p50"))
	assert.NotContains(t, byID, "loss-BenchmarkProxyKilled-one-hop", "a scenario of one arm has no loss to draw")

	cpu := byID["cpu-BenchmarkOneHop-one-hop"]
	require.NotEmpty(t, cpu.Series)
	assert.Len(t, cpu.Series[0].Points, 8, "4 concurrencies × 2 arms, not every one-hop scenario's")
	assert.Equal(t, "c=32 meshed", cpu.Series[0].Points[7].Label)
	for _, c := range byID {
		if c.Kind == Stacked {
			assert.LessOrEqual(t, len(c.Series[0].Points), 12, "%s: bars enough to read their labels", c.ID)
		}
	}
}

// The stored data of a chart are the comparison's figures, and the extra
// hop is the two-hop sweep's Δ minus the one-hop sweep's at the same c.
func TestSweepChartValues(t *testing.T) {
	r := runOf(t, mainJob)
	var payload, hop Chart
	for _, g := range r.charts(0) {
		for _, c := range g.Charts {
			switch c.ID {
			case "latency-BenchmarkPayload-c-8-one-hop":
				payload = c
			case "extrahop-BenchmarkTwoHop---BenchmarkOneHop":
				hop = c
			}
		}
	}
	var one16, two16, pay16 Comparison
	for _, c := range r.Comparisons {
		switch c.Scenario() {
		case "BenchmarkOneHop/c=16":
			one16 = c
		case "BenchmarkTwoHop/c=16":
			two16 = c
		case "BenchmarkPayload/payload=16KiB/c=8":
			pay16 = c
		}
	}
	require.Len(t, payload.Series, 6)
	assert.Equal(t, "meshed p99", payload.Series[4].Name)
	assert.Equal(t, Point{X: 16384, Y: pay16.Meshed.P99.Median, Lo: pay16.Meshed.P99.Lo, Hi: pay16.Meshed.P99.Hi, Label: "16KiB",
		Run: "BenchmarkPayload/payload=16KiB/c=8"}, payload.Series[4].Points[2])
	require.Len(t, hop.Series, 2)
	d := two16.P99Delta.Median - one16.P99Delta.Median
	assert.Equal(t, Point{X: 16, Y: d, Lo: d, Hi: d, Label: "c=16", Run: "BenchmarkTwoHop/c=16 − BenchmarkOneHop/c=16"}, hop.Series[1].Points[2])
}

// Comparing two runs draws each concurrency sweep apart, one series per
// run, and never joins two scenarios either.
func TestCompareChartsKeepScenariosApart(t *testing.T) {
	a := runOf(t, mainJob)
	b := runOf(t, "testdata/mainjob/20261201T200216Z-local.json.gz")
	charts := compareCharts([]run{a, b})
	var ids []string
	for _, c := range charts {
		ids = append(ids, c.ID)
	}
	assert.Equal(t, []string{"compare-latency-BenchmarkOneHop-one-hop", "compare-loss-BenchmarkOneHop-one-hop", "compare-cores-BenchmarkOneHop-one-hop",
		"compare-latency-BenchmarkTwoHop-two-hop", "compare-loss-BenchmarkTwoHop-two-hop", "compare-cores-BenchmarkTwoHop-two-hop",
		"compare-latency-BenchmarkProxyKilled-one-hop", "compare-loss-BenchmarkProxyKilled-one-hop", "compare-cores-BenchmarkProxyKilled-one-hop"}, ids)
	assert.Empty(t, mixedCharts(charts))
}

// The checks above would catch the old charts: one-hop's points of two
// scenarios on one line fail them.
func TestOneScenarioCheckCatchesAMixedLine(t *testing.T) {
	mixed := Chart{ID: "latency-one-hop", Kind: Lines, Scenario: "BenchmarkOneHop", Axis: "c", Series: []Series{{Name: "meshed p50", Scenario: "BenchmarkOneHop",
		Points: []Point{{X: 8, Run: "BenchmarkOneHop/c=8"}, {X: 8, Run: "BenchmarkPayload/payload=16KiB/c=8"}}}}}
	assert.Equal(t, []string{
		`latency-one-hop meshed p50: point of "BenchmarkPayload/payload=16KiB/c=8"`,
		"latency-one-hop meshed p50: two points at x=8 on one line",
	}, mixedCharts([]Chart{mixed}))
}
