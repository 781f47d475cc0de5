package local

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/validity"
)

// TestBusyMachine: what the machine was busy with beyond the run's own
// processes, from the figures of the quiet A/A gate and of a CI run beside
// another package's tests.
func TestBusyMachine(t *testing.T) {
	none := func() []string { return nil }
	window := func(node float64, milli ...float64) measure.Window {
		w := measure.Window{Elapsed: 3 * time.Second, NodeUtilisation: map[string]float64{"local": node}, Cores: map[string]int{"local": 2}}
		for _, m := range milli {
			w.Usage = append(w.Usage, measure.Usage{MilliCores: m})
		}
		return w
	}
	// Quiet, at maximum rate: 1720m busy, the run's 693m + 964m.
	assert.Empty(t, busyMachine(window(86, 693, 964), 0, none))
	// Exactly a tenth of the machine beside the run is still allowed.
	assert.Empty(t, busyMachine(window(60, 1000), 0, none))
	// Beside another package's tests: 1860m busy, the run's 414m + 688m.
	// The target's other processes, settling after a start, are not foreign.
	assert.Empty(t, busyMachine(window(93, 414, 688), 600, none))
	why := busyMachine(window(93, 414, 688), 0, func() []string { return []string{"go (pid 42) 700m", "kworker/u4:1 (pid 7) 40m"} })
	require.Len(t, why, 1)
	assert.Equal(t, validity.BusyMachine, why[0].Kind)
	assert.Equal(t, "busy machine: processes outside the run used 758m of 2 cores during the window (the run's own 1102m), over 10 % of the machine, so the run measured them too (busiest: go (pid 42) 700m, kworker/u4:1 (pid 7) 40m); "+
		"stop them, or run one test package at a time (go test -p 1)", why[0].Detail)
	// A process of the run exited: its CPU is not in the usage, so the
	// rest cannot be told from it.
	w := window(93, 414)
	w.Restarts = []string{"backend/sidecar (pid 7) exited or restarted during the window"}
	assert.Empty(t, busyMachine(w, 0, none))
	assert.Empty(t, busyMachine(measure.Window{}, 0, none), "no machine figures")
	w = window(93, 414, 688)
	w.Elapsed = 999 * time.Millisecond
	assert.Empty(t, busyMachine(w, 0, none), "too short to judge in ticks of 10 ms")
	// A noisy host: 1860m busy of which 600m stolen by the hypervisor
	// (30 % of the machine), beside the run's 414m + 688m: 158m from
	// processes here, and the steal is none of them: valid.
	w = window(93, 414, 688)
	w.NodeSteal = map[string]float64{"local": 30}
	assert.Empty(t, busyMachine(w, 0, none))
	// Stolen 10 % (200m): 558m from processes here, none left by the end.
	w.NodeSteal["local"] = 10
	why = busyMachine(w, 0, none)
	require.Len(t, why, 1)
	assert.Contains(t, why[0].Detail, "processes outside the run used 558m of 2 cores during the window (the run's own 1102m), over 10 % of the machine, so the run measured them too (busiest: none left running)")
}

// A kernel that gives CPU time in ticks marks a window whose app or
// sidecar counted too few of them (testbed.CoarseTicks); in ns, none.
func TestCoarseOnlyInTicks(t *testing.T) {
	w := measure.Window{Usage: []measure.Usage{{Name: "baseline/backend", Role: measure.RoleApp, CPUSeconds: 0.04}}}
	got := (&procMeasurement{ticks: true}).coarse(w)
	require.Len(t, got, 1)
	assert.Equal(t, validity.CPUCoarse, got[0].Kind)
	assert.Nil(t, (&procMeasurement{}).coarse(w))
}
