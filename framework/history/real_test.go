package history

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/report"
)

// A real series (issue 19's proof): 12 short runs of BenchmarkOneHop at
// c=16 on the local target of a 2-core machine, one after the other, the
// sidecar switched to caddy+access-log from run 7 on and nothing else
// changed (go test ./benchmarks -run '^$' -bench 'OneHop$/c=16$'
// [-sidecar caddy+access-log], 3 interleaved pairs each, 2026-12-01).
// History, following the sidecar, finds the change at run 7 and nowhere
// else: sidecar CPU per 1k requests worse by about what the upgrade gate
// measures for +access-log (×1.21–1.26 at c=8), and no change point in
// the first six runs.
func TestARealSeriesFindsTheAccessLogAtRun7(t *testing.T) {
	files, err := filepath.Glob("testdata/access-log/*.json.gz")
	require.NoError(t, err)
	require.Len(t, files, 12)
	ins, err := report.Open(files...)
	require.NoError(t, err)
	h := build(t, ins, Config{FollowVersion: true})
	require.Len(t, h.Groups, 1, "one group, across the sidecar's variants")
	g := h.Groups[0]
	require.Len(t, g.Runs, 12)
	var cpu *Change
	for _, s := range g.Series {
		for i, c := range s.Changes {
			assert.Equal(t, 6, c.Run, "%s %s: a change only where the sidecar changed (run 7)", s.Scenario, s.Metric)
			assert.True(t, c.Worse, "%s %s: access logging makes it worse", s.Scenario, s.Metric)
			if s.Metric == SidecarCPUPer1k {
				cpu = &s.Changes[i]
			}
		}
	}
	require.NotNil(t, cpu, "sidecar CPU per 1k requests changed at run 7")
	assert.InDelta(t, 17.4, cpu.Percent, 0.05, "as measured: 326.4 → 383.4 CPU-ms")
	assert.Less(t, cpu.PValue, 0.001)
	require.NotNil(t, cpu.Interval)
	assert.Less(t, cpu.Interval.Lo, 1.21, "the gate's figure for +access-log lies within")
	assert.Greater(t, cpu.Interval.Hi, 1.21)
	assert.Greater(t, cpu.Interval.Lo, 1.0)
}
