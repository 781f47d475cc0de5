package report_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/stats"
)

// recorded is a real short local run: one-hop and two-hop at c=1 and c=4,
// two interleaved pairs each, Caddy sidecars.
const recorded = "testdata/local.json"

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func openRecorded(t *testing.T) []report.Input {
	t.Helper()
	ins, err := report.Open(recorded)
	require.NoError(t, err)
	return ins
}

// mainJob is a real default main job's results on the local target: every
// shipped scenario, two repeats, Caddy sidecars.
const mainJob = "testdata/mainjob/20261201T195250Z-local.json.gz"

func openMainJob(t *testing.T) []report.Input {
	t.Helper()
	ins, err := report.Open(mainJob)
	require.NoError(t, err)
	return ins
}

func examplePrices(t *testing.T) *report.Prices {
	t.Helper()
	p, err := report.LoadPrices("")
	require.NoError(t, err)
	return p
}

// The Markdown of the recorded run is compared with testdata/local.md;
// go test ./framework/report -run Golden -update rewrites it.
func TestMarkdownGolden(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, report.Markdown(&b, openRecorded(t), report.Options{Prices: examplePrices(t)}))
	golden := "testdata/local.md"
	if *update {
		require.NoError(t, os.WriteFile(golden, b.Bytes(), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), b.String())
}

var dataBlock = regexp.MustCompile(`<script type="application/json" id="data-r0-([^"]+)">([^<]*)</script>`)

// chartData reads every chart's embedded data out of the HTML page.
func chartData(t *testing.T, page []byte) map[string]report.Chart {
	t.Helper()
	out := map[string]report.Chart{}
	for _, m := range dataBlock.FindAllSubmatch(page, -1) {
		var c report.Chart
		require.NoError(t, json.Unmarshal(m[2], &c), "data of %s", m[1])
		require.Equal(t, string(m[1]), c.ID)
		out[c.ID] = c
	}
	return out
}

// The data behind each chart is the results file's: the comparisons the
// run stored, and the percentiles of the merged histograms it stored.
func TestHTMLChartDataMatchesResults(t *testing.T) {
	ins := openRecorded(t)
	var b bytes.Buffer
	require.NoError(t, report.HTML(&b, ins, report.Options{}))
	charts := chartData(t, b.Bytes())
	require.Len(t, charts, 8*2+1, "8 per sweep of one-hop and two-hop, and the extra hop")
	stored := ins[0].Results.Comparisons
	require.Len(t, stored, 4)
	for _, c := range stored {
		x := float64(c.Concurrency)
		p := c.Benchmark + "-" + string(c.Path) // the sweep: BenchmarkOneHop over c, on one-hop
		at := func(s stats.Summary) report.Point {
			return report.Point{X: x, Y: s.Median, Lo: s.Lo, Hi: s.Hi, Label: fmt.Sprintf("c=%d", c.Concurrency), Run: c.Scenario()}
		}
		lat := charts["latency-"+p]
		assert.Equal(t, at(c.Baseline.P50), find(t, lat, "baseline p50", x), c.Scenario())
		assert.Equal(t, at(c.Meshed.P99), find(t, lat, "meshed p99", x), c.Scenario())
		assert.Equal(t, at(c.Meshed.P999), find(t, lat, "meshed p99.9", x), c.Scenario())
		assert.Equal(t, at(c.Baseline.QPS), find(t, charts["throughput-"+p], "baseline", x), c.Scenario())
		assert.Equal(t, at(c.QPSLossPct), find(t, charts["loss-"+p], "meshed vs baseline", x), c.Scenario())
		rate := charts["rate-"+p]
		assert.Equal(t, report.Point{X: c.Meshed.QPS.Median, Y: c.Meshed.P99.Median, Lo: c.Meshed.P99.Lo, Hi: c.Meshed.P99.Hi,
			Label: fmt.Sprintf("c=%d", c.Concurrency), Run: c.Scenario()},
			find(t, rate, "meshed p99", c.Meshed.QPS.Median), c.Scenario())
		cpu := charts["cpu-"+p]
		for _, s := range cpu.Series {
			for _, pt := range s.Points {
				if pt.Label == fmt.Sprintf("c=%d meshed", c.Concurrency) {
					assert.Equal(t, c.Meshed.CPU[measure.Role(s.Name)].Median, pt.Y, "%s %s", c.Scenario(), s.Name)
				}
			}
		}
		for _, s := range charts["cpu1k-"+p].Series {
			for _, pt := range s.Points {
				if pt.Label == fmt.Sprintf("c=%d baseline", c.Concurrency) {
					assert.Equal(t, c.Baseline.CPUPer1k[measure.Role(s.Name)].Median, pt.Y, "%s %s", c.Scenario(), s.Name)
				}
			}
		}
		if c.Concurrency == 4 { // the spectrum is drawn at the highest c
			spec := charts["spectrum-"+p]
			require.Len(t, spec.Series, 2)
			for i, h := range []*report.ArmStats{&c.Baseline, &c.Meshed} {
				require.Len(t, spec.Series[i].Points, len(report.SpectrumPercentiles()))
				last := spec.Series[i].Points[len(spec.Series[i].Points)-1]
				assert.Equal(t, 99.99, last.X)
				assert.Equal(t, stats.Percentile(h.Merged, 99.99)*1e3, last.Y)
				assert.Equal(t, stats.Percentile(h.Merged, 50)*1e3, spec.Series[i].Points[0].Y)
			}
			rss := charts["rss-"+p].Series[0].Points
			assert.Equal(t, report.Point{X: 4, Y: c.Meshed.IdleRSS[measure.RoleSidecar].Median, Lo: c.Meshed.IdleRSS[measure.RoleSidecar].Lo,
				Hi: c.Meshed.IdleRSS[measure.RoleSidecar].Hi, Label: "sidecar idle", Run: c.Scenario()}, rss[4])
			assert.Equal(t, c.Meshed.RSS[measure.RoleSidecar].Median, rss[5].Y)
		}
	}
}

func find(t *testing.T, c report.Chart, series string, x float64) report.Point {
	t.Helper()
	for _, s := range c.Series {
		if s.Name != series {
			continue
		}
		for _, p := range s.Points {
			if p.X == x {
				return p
			}
		}
	}
	t.Fatalf("chart %s has no point at %g in series %q", c.ID, x, series)
	return report.Point{}
}

// A file that is missing, truncated, of another schema or without what a
// report needs is named with the field, and nothing is written.
func TestBadInputIsNamedAndNothingIsWritten(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(recorded)
	require.NoError(t, err)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b, 0o644))
		return p
	}
	truncated := write("truncated.json", data[:len(data)/2])
	other := write("other.json", bytes.Replace(data, []byte(`"meshbench.results/v2"`), []byte(`"meshbench.results/v0"`), 1))
	nohist := write("nohist.json", []byte(`{"schema":"meshbench.results/v2","records":[{"benchmark":"BenchmarkOneHop","concurrency":1,"repeat":0,"arm":"baseline","path":"one-hop","load":{"requests":1}}]}`))
	badtype := write("badtype.json", []byte(`{"schema":"meshbench.results/v2","records":[{"benchmark":"BenchmarkOneHop","concurrency":"one"}]}`))

	_, err = report.Open(filepath.Join(dir, "missing.json"))
	assert.EqualError(t, err, filepath.Join(dir, "missing.json")+": open "+filepath.Join(dir, "missing.json")+": no such file or directory")
	_, err = report.Open(truncated)
	assert.EqualError(t, err, truncated+`: records[12].arm: truncated at byte 85898 (the file ends inside it)`)
	_, err = report.Open(other)
	assert.EqualError(t, err, other+`: schema: "meshbench.results/v0", this meshbench reads "meshbench.results/v2"`)
	_, err = report.Open(nohist)
	assert.EqualError(t, err, nohist+`: records[0].load.latency: missing; the raw histogram is needed`)
	_, err = report.Open(badtype)
	assert.EqualError(t, err, badtype+`: records.concurrency: got a JSON string, want int`)
	_, err = report.Open(recorded, other)
	assert.EqualError(t, err, other+`: schema: "meshbench.results/v0", this meshbench reads "meshbench.results/v2"`, "one bad file of several fails them all")

	out := filepath.Join(dir, "out")
	_, err = report.WriteFiles(out, nil, report.Formats, report.Options{})
	assert.EqualError(t, err, "write report: no results")
	_, err = os.Stat(out)
	assert.True(t, os.IsNotExist(err), "no directory, no half-written report")
}

// The HTML path proof shows a CONNECTIONS column, per request, only for
// proofs whose edges counted their connections.
func TestHTMLProofConnections(t *testing.T) {
	ins := openRecorded(t)
	var b bytes.Buffer
	require.NoError(t, report.HTML(&b, ins, report.Options{}))
	assert.NotContains(t, b.String(), "<th>CONNECTIONS</th>", "the recorded runs did not count connections")
	var counted int
	for _, r := range ins[0].Results.Records {
		if r.Run != nil && r.Path == "one-hop" && r.Arm == "meshed" {
			r.Run.Edges[0].Requests, r.Run.Edges[0].Connections = 250, 1
			counted++
		}
	}
	require.Equal(t, 4, counted, "c=1 and c=4, two repeats each")
	b.Reset()
	require.NoError(t, report.HTML(&b, ins, report.Options{}))
	assert.Equal(t, 1, strings.Count(b.String(), "<th>CONNECTIONS</th>"), "one proof counted them")
	assert.Contains(t, b.String(), "<td>1000</td><td>4 (0.004 per request)</td></tr>")
}
