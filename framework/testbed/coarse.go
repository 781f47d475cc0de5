package testbed

import (
	"math"
	"slices"

	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/validity"
)

// MinTicks is the fewest 10 ms ticks a process's CPU, read in ticks, may
// count in a window before its CPU figures are not trusted
// (validity.CPUCoarse): below it one tick, the error of each read of each
// thread, is more than 10 % of the count. BenchmarkServiceTime's baseline
// app counted 4-9 ticks a 3 s window on 2026-12-02, and its sidecar:app
// CPU ratio spread 1.2-2.4 over three runs where ns read 1.48-1.70.
const MinTicks = 10

// CoarseTicks are the reasons not to trust a window's CPU figures read in
// ticks: one per process that counted fewer than MinTicks and is in a
// figure a limit reads. In a window without sidecars (a baseline arm)
// that is every process: the sidecars' CPU is judged over the whole
// baseline arm's, loadgen included. With sidecars, it is all but the
// loadgen, whose CPU no limit of that arm reads. nil when every one
// counted enough.
func CoarseTicks(w measure.Window) validity.Reasons {
	meshed := slices.ContainsFunc(w.Usage, func(u measure.Usage) bool { return u.Role == measure.RoleSidecar })
	var out validity.Reasons
	for _, u := range w.Usage {
		ticks := math.Round(u.CPUSeconds * measure.TicksPerSecond)
		if ticks >= MinTicks || meshed && u.Role == measure.RoleLoadgen {
			continue
		}
		out.Add(validity.CPUCoarse, "%s counted %.0f ticks of 10 ms in the window, fewer than %d: each tick is over 10 %% of its CPU", u.Name, ticks, MinTicks)
	}
	return out
}
