package verdict

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/stats"
)

const meshCoresFixture = `target: kind
limits:
  - path: one-hop
    concurrency: "1-4"
    p50DeltaMs: 5
    p99DeltaPct: 100
    throughputLossPct: 50
    sidecarCPUPer1kReqMs: 100
    sidecarRSSMiB: 100
    meshCores: 1.5
  - path: "*"
    concurrency: "*"
    p50DeltaMs: 5
    p99DeltaPct: 100
    throughputLossPct: 50
    sidecarCPUPer1kReqMs: 100
    sidecarRSSMiB: 100
`

// meshCores is optional: a rule that sets it gates it, one that leaves it
// out does not, and a bad value is located like any other limit.
func TestMeshCoresIsAnOptionalLimit(t *testing.T) {
	th, err := Parse("mesh.yaml", []byte(meshCoresFixture))
	require.NoError(t, err)
	require.Contains(t, th.Limits[0].Allowed, MeshCores)
	assert.Equal(t, 1.5, th.Limits[0].Allowed[MeshCores])
	assert.NotContains(t, th.Limits[1].Allowed, MeshCores)

	over := map[Metric]stats.Summary{MeshCores: {Median: 2.25, Lo: 2, Hi: 2.5, N: 2}}
	v := th.Check([]Observation{
		{Scenario: "BenchmarkOneHop/c=4", Path: OneHop, Concurrency: 4, Values: over},
		{Scenario: "BenchmarkTwoHop/c=4", Path: TwoHop, Concurrency: 4, Values: over},
	})
	assert.Equal(t, 1, v.Checked)
	require.Len(t, v.Breaches, 1)
	assert.Equal(t, "mesh.yaml:3: BenchmarkOneHop/c=4: too high mesh cores: got 2.25 cores (2.00–2.50, n=2) expected ≤ 1.50 cores", v.Breaches[0].Error())

	bad := []byte(meshCoresFixture[:len("target: kind\nlimits:\n  - path: one-hop\n    concurrency: \"1-4\"\n    p50DeltaMs: 5\n    p99DeltaPct: 100\n    throughputLossPct: 50\n    sidecarCPUPer1kReqMs: 100\n    sidecarRSSMiB: 100\n")] + "    meshCores: \"1.5\"\n")
	_, err = Parse("bad.yaml", bad)
	assert.EqualError(t, err, `bad.yaml:10: limits[0].meshCores: "1.5" is quoted, so YAML reads it as text; write 1.5 without quotes`)
}
