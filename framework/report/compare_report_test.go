package report_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/report"
)

// candidate is the recorded run as if a new sidecar build had used twice
// the CPU for the same latencies.
func candidate(t *testing.T, ref report.Input) report.Input {
	t.Helper()
	data, err := json.Marshal(ref.Results)
	require.NoError(t, err)
	var r report.Results
	require.NoError(t, json.Unmarshal(data, &r))
	r.Environment.Mesh.Version = "v2-candidate"
	for _, rec := range r.Records {
		for i, u := range rec.Resources.Usage {
			if u.Role == measure.RoleSidecar {
				rec.Resources.Usage[i].MilliCores *= 2
			}
		}
	}
	return report.Input{File: "testdata/candidate.json", Results: &r}
}

// Two runs side by side: identical latencies are marked within noise, the
// doubled mesh cores are not, and the comparison charts carry each run's
// figures.
func TestComparisonSideBySide(t *testing.T) {
	ref := openRecorded(t)[0]
	cand := candidate(t, ref)
	ins := []report.Input{ref, cand}
	var md bytes.Buffer
	require.NoError(t, report.Markdown(&md, ins, report.Options{Prices: examplePrices(t)}))
	out := md.String()
	assert.Contains(t, out, "# meshbench comparison: sidecar/caddy v2.11.9 vs sidecar/caddy v2-candidate\n")
	assert.Contains(t, out, "| scenario | figure | sidecar/caddy v2.11.9 | sidecar/caddy v2-candidate |\n")
	assert.Contains(t, out, "### What differs between the runs\n\n|  | sidecar/caddy v2.11.9 | sidecar/caddy v2-candidate |\n| --- | --- | --- |\n| mesh | sidecar/caddy v2.11.9 | sidecar/caddy v2-candidate |\n\n",
		"only the version differs")

	cs := report.Compare(ref.Results.Records)
	for _, c := range cs {
		d := fmt.Sprintf("%.3f (%.3f–%.3f)", c.P50Delta.Median, c.P50Delta.Lo, c.P50Delta.Hi)
		assert.Contains(t, out, fmt.Sprintf("| %s | Δ p50 ms | %s | %s ≈ |\n", c.Scenario(), d, d))
		m := c.Meshed.MeshCores
		assert.Contains(t, out, fmt.Sprintf("| %s | mesh cores | %.3f (%.3f–%.3f) | %.3f (%.3f–%.3f) |\n",
			c.Scenario(), m.Median, m.Lo, m.Hi, 2*m.Median, 2*m.Lo, 2*m.Hi), "doubled cores are beyond noise")
	}

	var page bytes.Buffer
	require.NoError(t, report.HTML(&page, ins, report.Options{}))
	block := regexp.MustCompile(`<script type="application/json" id="data-cmp-compare-cores-BenchmarkOneHop-one-hop">([^<]*)</script>`).FindSubmatch(page.Bytes())
	require.NotNil(t, block)
	var ch report.Chart
	require.NoError(t, json.Unmarshal(block[1], &ch))
	require.Len(t, ch.Series, 2)
	assert.Equal(t, "sidecar/caddy v2-candidate cores", ch.Series[1].Name)
	for i, c := range cs[:2] { // one-hop c=1 and c=4
		s := c.Meshed.MeshCoresPer1kRPS
		assert.Equal(t, report.Point{X: float64(c.Concurrency), Y: s.Median, Lo: s.Lo, Hi: s.Hi, Label: fmt.Sprintf("c=%d", c.Concurrency), Run: c.Scenario()},
			ch.Series[0].Points[i])
		assert.InDelta(t, 2*s.Median, ch.Series[1].Points[i].Y, 1e-12)
	}
	assert.Equal(t, 2*(2*8+1)+2*3, bytes.Count(page.Bytes(), []byte(`type="application/json"`)),
		"per run 8 charts per sweep and the extra hop; 3 per concurrency sweep to compare")
}
