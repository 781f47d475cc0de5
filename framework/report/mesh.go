package report

import (
	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/metric"
	"github.com/meshbench/meshbench/framework/stats"
)

// MeshRoles are the roles whose CPU and memory the mesh costs
// (metric.MeshRoles): every sidecar (the loadgen's own included), per-node
// proxies, waypoints and the control plane.
var MeshRoles = metric.MeshRoles

// MeshUsage is what the mesh cost in one run's window.
type MeshUsage struct {
	// Cores is the CPU of every mesh process or container, in cores.
	Cores float64
	// RSSMiB is their resident memory (on a cluster, each container's RSS,
	// or its working set when the counters had no RSS: measure.Usage.Memory)
	// summed, at the end of the window, in MiB.
	RSSMiB float64
}

// Mesh sums the mesh roles of a run's window.
func Mesh(w measure.Window) MeshUsage {
	var m MeshUsage
	for _, u := range w.Usage {
		if metric.IsMeshRole(u.Role) {
			m.Cores += u.MilliCores / 1000
			m.RSSMiB += metric.MiB(u.LoadRSS)
		}
	}
	return m
}

// PodRatios returns, for every pod that has both a sidecar and an app, the
// sidecar's CPU divided by the app's beside it. The loadgen's sidecar has
// no app beside it and is left out, unlike in the pooled ratio. Pods come in
// the window's order; usages without a Pod (results written before it was
// recorded) give no ratio.
func PodRatios(w measure.Window) map[string]float64 {
	sidecar, app := map[string]float64{}, map[string]float64{}
	for _, u := range w.Usage {
		switch {
		case u.Pod == "":
		case u.Role == measure.RoleSidecar:
			sidecar[u.Pod] += u.MilliCores
		case u.Role == measure.RoleApp:
			app[u.Pod] += u.MilliCores
		}
	}
	out := map[string]float64{}
	for pod, sc := range sidecar {
		if a, ok := app[pod]; ok && a > 0 {
			out[pod] = sc / a
		}
	}
	return out
}

// addMeshFigures fills the comparison's mesh figures from the paired runs.
func (c *Comparison) addMeshFigures(base, mesh []Record) {
	c.Baseline.addMesh(base)
	c.Meshed.addMesh(mesh)
	var pods []float64
	for _, r := range mesh {
		for _, v := range PodRatios(r.Resources) {
			pods = append(pods, v)
		}
	}
	c.PodSidecarAppRatio = stats.Summarize(pods)
	if d, err := paired(metric.P999, metric.Delta, base, mesh); err == nil {
		c.P999Delta = d
	}
	if r, err := paired(metric.P999, metric.Increase, base, mesh); err == nil {
		c.P999Pct = r
	}
}

func (a *ArmStats) addMesh(rs []Record) {
	var cores, per1k, rss []float64
	for _, r := range rs {
		m := Mesh(r.Resources)
		cores = append(cores, m.Cores)
		rss = append(rss, m.RSSMiB)
		if q := r.Load.AchievedQPS; q > 0 {
			per1k = append(per1k, m.Cores/(q/1000))
		}
	}
	a.MeshCores, a.MeshCoresPer1kRPS, a.MeshRSSMiB = stats.Summarize(cores), stats.Summarize(per1k), stats.Summarize(rss)
}

func pick(rs []Record, f func(Record) float64) []float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	return v
}
