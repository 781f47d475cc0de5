package metric_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/metric"
	"github.com/meshbench/meshbench/framework/testbed"
)

// TestTableIsComplete: every entry names itself, its unit, direction and
// reader, and no name or limit key is used twice.
func TestTableIsComplete(t *testing.T) {
	names, keys := map[string]bool{}, map[string]bool{}
	for _, d := range metric.All() {
		assert.NotEmpty(t, d.Name)
		assert.NotEmpty(t, d.Label, d.Name)
		assert.NotEmpty(t, d.Unit, d.Name)
		assert.Contains(t, []metric.Direction{metric.HigherIsWorse, metric.LowerIsWorse}, d.Worse, d.Name)
		assert.NotNil(t, d.Read, d.Name)
		assert.False(t, names[d.Name], "%s twice", d.Name)
		names[d.Name] = true
		for _, l := range d.Limits {
			assert.False(t, keys[l.Key], "%s twice", l.Key)
			keys[l.Key] = true
			assert.NotEmpty(t, l.Label, l.Key)
			assert.NotZero(t, l.Of, l.Key)
			got, def, ok := metric.LimitOf(l.Key)
			require.True(t, ok, l.Key)
			assert.Equal(t, l, got)
			assert.Equal(t, d.Name, def.Name)
		}
		got, ok := metric.Lookup(d.Name)
		require.True(t, ok, d.Name)
		assert.Equal(t, d.Benchstat, got.Benchstat)
	}
	_, ok := metric.Lookup("nope")
	assert.False(t, ok)
}

// TestRead reads each metric of one meshed run.
func TestRead(t *testing.T) {
	run := &testbed.Run{
		Load: &load.Result{Requests: 1000, AchievedQPS: 500},
		Resources: measure.Window{Elapsed: 2 * time.Second, Usage: []measure.Usage{
			{Role: measure.RoleApp, MilliCores: 200, LoadRSS: 10 << 20},
			{Role: measure.RoleLoadgen, MilliCores: 50},
			{Role: measure.RoleSidecar, MilliCores: 300, LoadRSS: 64 << 20},
			{Role: measure.RoleSidecar, MilliCores: 100, LoadRSS: 48 << 20},
			{Role: measure.RoleControlPlane, MilliCores: 50},
		}},
	}
	want := map[string]float64{
		metric.Throughput:         500,
		metric.SidecarCPUPer1kReq: 800, // 400m × 2 s / 1000 req × 1000
		metric.SidecarRSS:         64,  // the largest one sidecar
		metric.MeshCores:          0.45,
		// 400m of sidecars over 250m of app and loadgen
		metric.SidecarCPUOverWorkloadCPU: 1.6,
		metric.WorkloadCPUPer1kReq:       500,
	}
	for name, v := range want {
		d, _ := metric.Lookup(name)
		got, ok := d.Read(run)
		assert.True(t, ok, name)
		assert.InDelta(t, v, got, 1e-9, name)
	}

	// Without sidecars there is no sidecar figure, and it reads as 0.
	run.Resources.Usage = run.Resources.Usage[:2]
	for _, name := range []string{metric.SidecarCPUPer1kReq, metric.SidecarRSS, metric.SidecarCPUOverWorkloadCPU} {
		d, _ := metric.Lookup(name)
		got, ok := d.Read(run)
		assert.False(t, ok, name)
		assert.Zero(t, got, name)
	}
}

func TestMiB(t *testing.T) {
	assert.Equal(t, 1.5, metric.MiB(3<<19))
	assert.Equal(t, 0.0, metric.MiB(0))
}

func TestDirectionString(t *testing.T) {
	assert.Equal(t, "higher is worse", metric.HigherIsWorse.String())
	assert.Equal(t, "lower is worse", metric.LowerIsWorse.String())
	assert.Equal(t, "Direction(0)", metric.Direction(0).String())
}
