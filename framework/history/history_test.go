package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/testbed"
)

// recorded is a real local run: BenchmarkOneHop and BenchmarkTwoHop at
// c=1 and c=4, baseline and meshed, with raw histograms.
const recorded = "../report/testdata/local.json"

var t0 = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// runs are n copies of the recorded run, a day apart, each with its
// meshed arm's sidecar CPU scaled by cpu(i) (figures per 1k requests
// scale with it; everything else stays as recorded).
func runs(t *testing.T, n int, cpu func(i int) float64) []report.Input {
	t.Helper()
	ins, err := report.Open(recorded)
	require.NoError(t, err)
	data, err := json.Marshal(ins[0].Results)
	require.NoError(t, err)
	out := make([]report.Input, n)
	for i := range n {
		var r report.Results
		require.NoError(t, json.Unmarshal(data, &r))
		r.Started = t0.Add(time.Duration(i) * 24 * time.Hour)
		scaleSidecar(&r, cpu(i))
		out[i] = report.Input{File: fmt.Sprintf("results/%s.json", r.RunID()), Results: &r}
	}
	return out
}

func scaleSidecar(r *report.Results, f float64) {
	for _, rec := range r.Records {
		if rec.Arm != testbed.Meshed {
			continue
		}
		for k, u := range rec.Resources.Usage {
			if u.Role == measure.RoleSidecar {
				rec.Resources.Usage[k].MilliCores *= f
			}
		}
	}
}

// noisy is a level per run with 2 % seeded noise.
func noisy(seed uint64, level func(i int) float64) func(int) float64 {
	r := rand.New(rand.NewPCG(seed, 0))
	return func(i int) float64 { return level(i) * (1 + 0.02*r.NormFloat64()) }
}

func stepAt(at int, by float64) func(int) float64 {
	return func(i int) float64 {
		if i >= at {
			return by
		}
		return 1
	}
}

func build(t *testing.T, ins []report.Input, cfg Config) *History {
	t.Helper()
	h, err := Build(ins, cfg)
	require.NoError(t, err)
	return h
}

func TestAStepInSidecarCPUIsFoundAtItsRun(t *testing.T) {
	ins := runs(t, 12, noisy(1, stepAt(6, 1.4)))
	h := build(t, ins, Config{})
	require.Len(t, h.Groups, 1)
	g := h.Groups[0]
	assert.Len(t, g.Runs, 12)
	assert.Len(t, g.Series, 4*len(Metrics))
	found := 0
	for _, s := range g.Series {
		if s.Metric != SidecarCPUPer1k {
			assert.Empty(t, s.Changes, "%s %s: unchanged figures", s.Scenario, s.Metric)
			continue
		}
		require.Len(t, s.Changes, 1, s.Scenario)
		c := s.Changes[0]
		found++
		assert.Equal(t, 6, c.Index)
		assert.Equal(t, 6, c.Run)
		assert.Equal(t, ins[6].File, c.File)
		assert.Equal(t, t0.Add(6*24*time.Hour), c.Started)
		assert.InDelta(t, 40, c.Percent, 3, s.Scenario)
		assert.True(t, c.Worse)
		assert.Less(t, c.PValue, 0.001)
		require.NotNil(t, c.Interval)
		assert.Less(t, c.Interval.Lo, c.Interval.Ratio)
		assert.Greater(t, c.Interval.Hi, c.Interval.Ratio)
		assert.InDelta(t, 1.4, c.Interval.Ratio, 0.04)
	}
	assert.Equal(t, 4, found)
	assert.Len(t, h.Regressions(30), 4)
	assert.Empty(t, h.Regressions(50))
}

func TestAFlatSeriesHasNoChangeAndNoRegression(t *testing.T) {
	h := build(t, runs(t, 12, noisy(1, func(int) float64 { return 1 })), Config{})
	for _, s := range h.Groups[0].Series {
		assert.Empty(t, s.Changes, "%s %s", s.Scenario, s.Metric)
	}
	assert.Empty(t, h.Regressions(0))
}

func TestAnImprovementIsNoRegression(t *testing.T) {
	h := build(t, runs(t, 12, noisy(1, stepAt(6, 0.6))), Config{})
	assert.Empty(t, h.Regressions(0))
	s := h.Groups[0].Series[3]
	require.Equal(t, SidecarCPUPer1k, s.Metric)
	require.Len(t, s.Changes, 1)
	assert.False(t, s.Changes[0].Worse)
}

func TestThroughputIsWorseWhenItDrops(t *testing.T) {
	g := &Group{ID: 1, Runs: runs(t, 8, func(int) float64 { return 1 })}
	s := Series{Metric: ThroughputRatio}
	for i, v := range []float64{0.9, 0.91, 0.9, 0.89, 0.7, 0.71, 0.7, 0.69} {
		s.Points = append(s.Points, Point{Run: i, Value: v})
	}
	require.NoError(t, s.detect(g, Options{}))
	require.Len(t, s.Changes, 1)
	assert.Equal(t, 4, s.Changes[0].Run)
	assert.InDelta(t, -22.2, s.Changes[0].Percent, 0.05)
	assert.True(t, s.Changes[0].Worse)
}

// with returns a copy of in changed by f.
func with(t *testing.T, in report.Input, f func(r *report.Results)) report.Input {
	t.Helper()
	data, err := json.Marshal(in.Results)
	require.NoError(t, err)
	var r report.Results
	require.NoError(t, json.Unmarshal(data, &r))
	f(&r)
	return report.Input{File: in.File + "-changed", Results: &r}
}

func setting(key string, v any) func(r *report.Results) {
	return func(r *report.Results) { r.Settings.(map[string]any)[key] = v }
}

func TestIncomparableRunsAreGroupedApartAndSayWhy(t *testing.T) {
	base := runs(t, 4, func(int) float64 { return 1 })
	for _, tc := range []struct {
		name   string
		change func(r *report.Results)
		want   []Difference
	}{
		{"more cores", func(r *report.Results) { r.Environment.Cores = 4 }, []Difference{{Field: "environment.cores", Here: "4", There: "2"}}},
		{"another CPU", func(r *report.Results) { r.Environment.CPUModel = "AMD EPYC" },
			[]Difference{{Field: "environment.cpuModel", Here: "AMD EPYC", There: "Intel(R) Xeon(R) Processor"}}},
		{"another target", func(r *report.Results) { r.Environment.Target = "kind" }, []Difference{{Field: "environment.target", Here: "kind", There: "local"}}},
		{"longer windows", setting("duration", 3e9), []Difference{{Field: "settings.duration", Here: "3s", There: "1s"}}},
		{"another sidecar variant", setting("sidecar", "caddy+access-log"), []Difference{{Field: "settings.sidecar", Here: "caddy+access-log", There: "caddy"}}},
		{"another sidecar version", func(r *report.Results) { r.Environment.Mesh.Version = "v2.10.2" },
			[]Difference{{Field: "environment.mesh.version", Here: "v2.10.2", There: "v2.11.9"}}},
	} {
		ins := append(base[:2:2], with(t, base[2], tc.change), base[3])
		h := build(t, ins, Config{})
		require.Len(t, h.Groups, 2, tc.name)
		assert.Len(t, h.Groups[0].Runs, 3, tc.name)
		assert.Empty(t, h.Groups[0].Apart, tc.name)
		apart := h.Groups[1]
		assert.Equal(t, []report.Input{ins[2]}, apart.Runs, tc.name)
		assert.Equal(t, 1, apart.Nearest, tc.name)
		assert.Equal(t, tc.want, apart.Apart, tc.name)

		var md bytes.Buffer
		require.NoError(t, h.Markdown(&md))
		assert.Contains(t, md.String(), "- **apart from group 1**: "+tc.want[0].String()+"\n", tc.name)
	}
}

func TestAScenarioOnlySomeRunsHaveStaysInTheGroup(t *testing.T) {
	ins := runs(t, 3, func(int) float64 { return 1 })
	ins[1] = with(t, ins[1], func(r *report.Results) {
		var keep []report.Record
		for _, rec := range r.Records {
			if rec.Benchmark == "BenchmarkOneHop" {
				keep = append(keep, rec)
			}
		}
		r.Records = keep
	})
	h := build(t, ins, Config{})
	require.Len(t, h.Groups, 1)
	for _, s := range h.Groups[0].Series {
		want := []int{0, 1, 2}
		if strings.HasPrefix(s.Scenario, "BenchmarkTwoHop") {
			want = []int{0, 2}
		}
		var got []int
		for _, p := range s.Points {
			got = append(got, p.Run)
		}
		assert.Equal(t, want, got, "%s %s", s.Scenario, s.Metric)
	}
}

func TestFollowVersionKeepsASidecarChangeInOneSeries(t *testing.T) {
	ins := runs(t, 12, noisy(2, stepAt(6, 1.5)))
	for i := 6; i < 12; i++ {
		ins[i] = with(t, ins[i], setting("sidecar", "caddy+access-log"))
	}
	assert.Len(t, build(t, ins, Config{}).Groups, 2)

	h := build(t, ins, Config{FollowVersion: true})
	require.Len(t, h.Groups, 1)
	g := h.Groups[0]
	assert.Equal(t, []string{"run 7 (" + ins[6].File + "): sidecar sidecar/caddy v2.11.9 (caddy+access-log), after sidecar/caddy v2.11.9 (caddy)"}, g.Notes)
	regs := h.Regressions(25)
	require.Len(t, regs, 4)
	for _, r := range regs {
		assert.Equal(t, 6, r.Change.Run)
	}
	assert.Equal(t, "mesh sidecar/caddy, followed across sidecars from sidecar/caddy v2.11.9 (caddy)", g.Holds()[1])
}

func TestRunsAreOrderedByStartAndReadOnce(t *testing.T) {
	ins := runs(t, 3, func(int) float64 { return 1 })
	journal := report.Input{File: "results/" + ins[1].Results.RunID() + report.JournalExt, Results: ins[1].Results}
	h := build(t, []report.Input{ins[2], journal, ins[0], ins[1]}, Config{})
	require.Len(t, h.Groups, 1)
	assert.Equal(t, []report.Input{ins[0], ins[1], ins[2]}, h.Groups[0].Runs)
	assert.Equal(t, []string{journal.File + ": run " + ins[1].Results.RunID() + ", read from " + ins[1].File}, h.Skipped)
}

func TestMarkdownListsChangesAndGroups(t *testing.T) {
	ins := runs(t, 12, noisy(1, stepAt(6, 1.4)))
	h := build(t, ins, Config{})
	var b bytes.Buffer
	require.NoError(t, h.Markdown(&b))
	md := b.String()
	c := h.Groups[0].Series[3].Changes[0]
	row := fmt.Sprintf("| 1 | BenchmarkOneHop/c=1/path=one-hop | sidecar CPU per 1k req (CPU-ms) | run 7: %s (2026-12-07 00:00) | %s → %s | **%+.1f %% worse** | %+.1f %% … %+.1f %% | %.2g |\n",
		ins[6].File[len("results/"):], num(c.MeanBefore), num(c.MeanAfter), c.Percent, (c.Interval.Lo-1)*100, (c.Interval.Hi-1)*100, c.PValue)
	assert.Contains(t, md, row)
	assert.Equal(t, 4, strings.Count(md, "**+"), "four change points, all worse")
	assert.Contains(t, md, "## Group 1: 12 run(s), local\n\n- target local: 2 core(s), Intel(R) Xeon(R) Processor, 1 node(s)\n- mesh sidecar/caddy v2.11.9 (caddy)\n- settings: concurrency [1 4], duration 1s, warmup 300ms, qps 0, protocol http1, responseSize 128, requestSize 0, placement in-mesh, loadgens 1\n")
	assert.Contains(t, md, "| 12 | 2026-12-12 00:00 | "+ins[11].File[len("results/"):]+" | sidecar/caddy v2.11.9 (caddy) |\n")

	b.Reset()
	require.NoError(t, build(t, runs(t, 3, func(int) float64 { return 1 }), Config{}).Markdown(&b))
	assert.Contains(t, b.String(), "## Change points\n\nNo change points.\n")
}

func TestHTMLIsSelfContainedWithAChartPerSeries(t *testing.T) {
	h := build(t, runs(t, 12, noisy(1, stepAt(6, 1.4))), Config{})
	var b bytes.Buffer
	require.NoError(t, h.HTML(&b))
	page := b.String()
	assert.Equal(t, 4*len(Metrics), strings.Count(page, "<svg"))
	assert.NotRegexp(t, `(src|href)=["']?(https?:)?//`, page, "nothing loaded from elsewhere")
	blocks := regexp.MustCompile(`(?s)<script type="application/json" id="data-g1-s3">(.*?)</script>`).FindStringSubmatch(page)
	require.Len(t, blocks, 2)
	var c report.Chart
	require.NoError(t, json.Unmarshal([]byte(blocks[1]), &c))
	assert.Equal(t, "sidecar CPU per 1k req", c.Title)
	require.Len(t, c.Series, 3, "values, segment means, one change point")
	assert.Len(t, c.Series[0].Points, 12)
	assert.Equal(t, []float64{1, 6, 7, 12}, []float64{c.Series[1].Points[0].X, c.Series[1].Points[1].X, c.Series[1].Points[2].X, c.Series[1].Points[3].X})
	assert.Equal(t, 7.0, c.Series[2].Points[0].X)
	assert.Contains(t, c.Series[2].Name, "change at run 7: +")
	assert.Contains(t, page, `<td class="worse">&#43;40.7 %</td>`, "html/template writes + as &#43;")
}

func TestBuildRejectsBadOptions(t *testing.T) {
	_, err := Build(runs(t, 1, func(int) float64 { return 1 }), Config{Options: Options{PValue: 2}})
	assert.EqualError(t, err, "p-value 2: want a level between 0 and 1, e.g. 0.001")
}
