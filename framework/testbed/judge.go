package testbed

import (
	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/validity"
)

// Saturation limits used by Judge.
const (
	// LoadgenSaturated is the fraction of its own CPU budget at which a
	// loadgen is saturated: the run then measures the loadgen.
	LoadgenSaturated = 0.9
	// NodeSaturatedPct is the node utilisation, in percent, above which the
	// machine rather than the mesh may be the ceiling.
	NodeSaturatedPct = 95.0
)

// Judge adds the resource-based verdicts to r: restarts during the window
// and a saturated loadgen invalidate the run; a saturated node and a pinned
// proxy thread are warnings the reader must see. loadgenBudgetMilli is the
// loadgen's CPU budget in millicores (its limit, or its cores).
func Judge(r *Run, loadgenBudgetMilli float64) {
	w := r.Resources
	for _, s := range w.Restarts {
		r.Invalidate(validity.Restart, "restart during the window: %s", s)
	}
	if lg, ok := w.Role(measure.RoleLoadgen); ok && loadgenBudgetMilli > 0 && lg.MilliCores >= LoadgenSaturated*loadgenBudgetMilli {
		r.Invalidate(validity.SaturatedLoadgen, "loadgen saturated: %.0fm of its %.0fm budget; add loadgen shards or cores", lg.MilliCores, loadgenBudgetMilli)
	}
	for _, u := range w.Usage {
		if u.Role == measure.RoleLoadgen && u.MaxThreadMilliCores >= measure.PinnedThreshold {
			r.Invalidate(validity.SaturatedLoadgen, "loadgen thread pinned at %.0fm: the loadgen is the bottleneck", u.MaxThreadMilliCores)
		}
	}
	for node, pct := range w.NodeUtilisation {
		if pct >= NodeSaturatedPct {
			r.Warn(validity.NodeSaturated, "node %s CPU at %.0f%% of %d cores: the machine, not only the mesh, is the ceiling", node, pct, w.Cores[node])
		}
	}
	for _, b := range w.Bottlenecks() {
		r.Warn(validity.PinnedThread, "pinned thread: %s", b)
	}
}
