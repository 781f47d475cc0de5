package metric

import (
	"fmt"
	"slices"
	"strings"

	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/testbed"
)

// table is every metric, in the order of All.
var table = []Def{
	{Name: P50, Label: "p50 latency", Unit: "ms", Benchstat: "p50-ms", Worse: HigherIsWorse, Read: percentile(50),
		Limits: []Limit{
			{Key: P50DeltaMs, Of: Delta, Label: "p50 delta", Unit: "ms", Prec: 2, Want: "milliseconds", Sample: "2",
				Optional: true, OneOf: OneOfP50, Units: MachineUnits},
			// The delta in units of the same run's baseline p50, which a
			// slower machine raises alike.
			{Key: P50DeltaPct, Of: RelativeDelta, Label: "p50 delta over baseline p50", Unit: "%", Prec: 1, Want: "a percentage of the baseline p50", Sample: "900",
				Optional: true, OneOf: OneOfP50, Units: BaselineUnits},
		}},
	{Name: P90, Label: "p90 latency", Unit: "ms", Benchstat: "p90-ms", Worse: HigherIsWorse, Read: percentile(90)},
	{Name: P99, Label: "p99 latency", Unit: "ms", Benchstat: "p99-ms", Worse: HigherIsWorse, Read: percentile(99),
		Limits: []Limit{
			{Key: P99DeltaPct, Of: Increase, Label: "p99 increase", Unit: "%", Prec: 1, Want: "a percentage", Sample: "600"},
			// The tail a client of the mesh sees: it does not move with
			// the baseline's tail, which on a shared machine can differ
			// ×2 between quiet runs and then hides a doubled meshed p99
			// from p99DeltaPct.
			{Key: MeshedP99Ms, Of: Meshed, Label: "meshed p99", Unit: "ms", Prec: 2, Want: "milliseconds", Sample: "5", Optional: true, Units: MachineUnits},
			// The same tail in units of the baseline's p50: the baseline's
			// median measures the machine's speed and is far steadier than
			// its tail.
			{Key: MeshedP99OverBaselineP50, Of: Ratio, Over: P50, Label: "meshed p99 over baseline p50", Unit: "×", Prec: 2, Want: "a ratio", Sample: "40",
				Optional: true, Units: BaselineUnits},
		}},
	{Name: P999, Label: "p99.9 latency", Unit: "ms", Benchstat: "p99.9-ms", Worse: HigherIsWorse, Read: percentile(99.9)},
	// Gate it on closed-loop scenarios, where it is the maximum.
	{Name: Throughput, Label: "max throughput", Unit: "req/s", Benchstat: "req/s", Worse: LowerIsWorse, Read: throughput,
		Limits: []Limit{{Key: ThroughputLossPct, Of: Loss, Label: "throughput loss", Unit: "%", Prec: 1, Want: "a percentage", Sample: "85"}}},
	// The cost of the mesh per request, the steadiest figure there is.
	{Name: SidecarCPUPer1kReq, Label: "sidecar CPU per 1k req", Unit: "CPU-ms", Benchstat: "sidecar-cpu-ms/kreq", Worse: HigherIsWorse, CPU: true, Read: sidecarCPUPer1k,
		Limits: []Limit{
			{Key: SidecarCPUPer1kReqMs, Of: Meshed, Label: "sidecar CPU per 1k requests", Unit: " CPU-ms", Prec: 1, Want: "CPU-milliseconds per 1000 requests", Sample: "1500",
				Optional: true, OneOf: OneOfSidecarCPU, Units: MachineUnits},
			// Per request, over what the whole baseline arm (apps and
			// load generator, no mesh) used per request in the same pair.
			{Key: SidecarCPUOverBaselineCPU, Of: Ratio, Over: WorkloadCPUPer1kReq, Label: "sidecar CPU over baseline CPU per request", Unit: "×", Prec: 2, Want: "a ratio", Sample: "9",
				Optional: true, OneOf: OneOfSidecarCPU, Units: BaselineUnits},
		}},
	{Name: SidecarRSS, Label: "sidecar RSS", Unit: "MiB", Benchstat: "sidecar-rss-MiB", Worse: HigherIsWorse, Read: sidecarRSS,
		Limits: []Limit{{Key: SidecarRSSMiB, Of: Meshed, Label: "sidecar RSS", Unit: " MiB", Prec: 1, Want: "MiB", Sample: "300"}}},
	// Sidecars, node proxies, waypoints and control plane: the benchmark
	// line reports their CPU per role (<role>-mcpu), and the gate compares
	// the sidecars', so neither has this sum.
	{Name: MeshCores, Label: "mesh cores", Unit: "cores", Worse: HigherIsWorse, CPU: true, NotGated: true, Read: meshCores,
		Limits: []Limit{{Key: MeshCoresLimit, Of: Meshed, Label: "mesh cores", Unit: " cores", Prec: 2, Want: "cores", Sample: "1.5", Optional: true, NotCalibrated: true}}},
	// What the workload itself costs per request, sidecars left out: in a
	// baseline arm, everything the arm ran. It is the machine's yardstick
	// for the sidecar's CPU (SidecarCPUOverBaselineCPU). A proxyless mesh
	// (istio-proxyless) runs its data plane, xDS and mTLS, inside the apps
	// and the loadgen: there it is the mesh's cost per request, which its
	// gate fixture gates.
	{Name: WorkloadCPUPer1kReq, Label: "workload CPU per 1k req", Unit: "CPU-ms", Benchstat: "workload-cpu-ms/kreq", Worse: HigherIsWorse, CPU: true, Read: workloadCPUPer1k},
	// The sidecars' CPU in units of the same window's workload CPU: the
	// apps and the loadgen run the same binaries in both arms of a gate,
	// so at a fixed rate their CPU per request measures the machine's
	// speed in that window, and the ratio cancels it. On kind, with the
	// arms one after another, every role's CPU per request moved
	// together by up to 16 % from one window to the next; the ratio's
	// per-pair spread was a fifth to a quarter of sidecarCPUPer1kReq's.
	// Not at maximum rate: there the workload's CPU per request moves
	// with the rate its arm reached, and hides part of a slower sidecar's
	// cost (×1.11 with an access log, locally). docs/gate.md.
	{Name: SidecarCPUOverWorkloadCPU, Label: "sidecar CPU over workload CPU", Unit: "×", Benchstat: "sidecar/workload-cpu", Worse: HigherIsWorse, CPU: true, Read: sidecarOverWorkloadCPU},
	// The control plane, measured after a meshed run's window when asked
	// (kube.ControlPlaneOptions.Changes): at the run's own pods, then with
	// the idle pods added (ControlPlaneOptions.ExtraPods). Its CPU
	// is read around the changes, not over the window, so a window's
	// diluted counters do not void it.
	propagation(PropagationP50, 0.5, 0, ""),
	propagation(PropagationP99, 0.99, 0, ""),
	perProxyCPU(ControlPlaneCPUPerProxy, 0, ""),
	perProxyRSS(ControlPlaneRSSPerProxy, 0, ""),
	propagation(PropagationP50Scaled, 0.5, 1, scaled),
	propagation(PropagationP99Scaled, 0.99, 1, scaled),
	perProxyCPU(ControlPlaneCPUPerProxyScaled, 1, scaled),
	perProxyRSS(ControlPlaneRSSPerProxyScaled, 1, scaled),
}

// scaled is what the labels of the second pod count's metrics add.
const scaled = " with the extra pods"

// phaseSuffix tells the second pod count's keys and benchstat units.
func phaseSuffix(phase int) string {
	if phase == 0 {
		return ""
	}
	return "Scaled"
}

// scaledUnit starts the benchstat units of the second pod count's
// metrics: "scaled-propagation-p99-ms".
func scaledUnit(phase int) string {
	if phase == 0 {
		return ""
	}
	return "scaled-"
}

// propagation is the metric of the q-quantile of config propagation at a
// phase of the control plane's measurement.
func propagation(name string, q float64, phase int, label string) Def {
	pct := fmt.Sprintf("p%.0f", q*100)
	return atPhase(Def{Name: name, Label: "config propagation " + pct + label, Unit: "ms", Benchstat: scaledUnit(phase) + "propagation-" + pct + "-ms",
		Limits: []Limit{{Key: "propagation" + strings.ToUpper(pct[:1]) + pct[1:] + "Ms" + phaseSuffix(phase), Of: Meshed, Label: "config propagation " + pct + label,
			Unit: " ms", Prec: 1, Want: "milliseconds", Sample: "500", Optional: true, NotCalibrated: true, Units: MachineUnits}}},
		phase, func(ph testbed.ControlPlanePhase) (float64, bool) { return ph.PropagationQuantile(q) })
}

// perProxyCPU is the control plane's CPU per connected proxy over a
// phase's changes.
func perProxyCPU(name string, phase int, label string) Def {
	return atPhase(Def{Name: name, Label: "control plane CPU per proxy" + label, Unit: "mcores", Benchstat: scaledUnit(phase) + "cp-mcpu/proxy",
		Limits: []Limit{{Key: "controlPlaneMcoresPerProxy" + phaseSuffix(phase), Of: Meshed, Label: "control plane CPU per proxy" + label,
			Unit: " mcores", Prec: 2, Want: "millicores per connected proxy", Sample: "20", Optional: true, NotCalibrated: true, Units: MachineUnits}}},
		phase, testbed.ControlPlanePhase.MilliCoresPerProxy)
}

// perProxyRSS is the control plane's RSS per connected proxy at a
// phase's end.
func perProxyRSS(name string, phase int, label string) Def {
	return atPhase(Def{Name: name, Label: "control plane RSS per proxy" + label, Unit: "MiB", Benchstat: scaledUnit(phase) + "cp-rss-MiB/proxy",
		Limits: []Limit{{Key: "controlPlaneRSSMiBPerProxy" + phaseSuffix(phase), Of: Meshed, Label: "control plane RSS per proxy" + label,
			Unit: " MiB", Prec: 2, Want: "MiB per connected proxy", Sample: "10", Optional: true, NotCalibrated: true}}},
		phase, testbed.ControlPlanePhase.RSSMiBPerProxy)
}

// atPhase makes d a figure of the control plane's measurement, worse when
// higher, read by read from the run's phase (0: the run's own pods, 1:
// with the idle pods added); a run without that phase has none.
func atPhase(d Def, phase int, read func(testbed.ControlPlanePhase) (float64, bool)) Def {
	d.Worse, d.ControlPlane = HigherIsWorse, phase+1
	d.Read = func(r *testbed.Run) (float64, bool) {
		ph, ok := r.ControlPlane.Phase(phase)
		if !ok {
			return 0, false
		}
		return read(ph)
	}
	return d
}

// percentile reads the q-th latency percentile in ms, as
// load.Result.Percentile reads it (corrected in open loop).
func percentile(q float64) func(*testbed.Run) (float64, bool) {
	return func(r *testbed.Run) (float64, bool) { return r.Load.Percentile(q) * 1e3, true }
}

func throughput(r *testbed.Run) (float64, bool) { return r.Load.AchievedQPS, true }

// sidecarCPUPer1k is the CPU all sidecars used per 1000 requests over the
// measured window; a run without sidecars or requests has none.
func sidecarCPUPer1k(r *testbed.Run) (float64, bool) {
	u, ok := r.Resources.Role(measure.RoleSidecar)
	return r.CPUPer1k(u.MilliCores), ok && r.Load.Requests > 0
}

// workloadCPUPer1k is the CPU the apps and the load generator used per
// 1000 requests over the measured window; a run without either, or
// without requests, has none.
func workloadCPUPer1k(r *testbed.Run) (float64, bool) {
	app, okApp := r.Resources.Role(measure.RoleApp)
	gen, okGen := r.Resources.Role(measure.RoleLoadgen)
	return r.CPUPer1k(app.MilliCores + gen.MilliCores), (okApp || okGen) && r.Load.Requests > 0
}

// sidecarOverWorkloadCPU is the sidecars' CPU over the apps' and the
// loadgen's in the same window; a run without either has none.
func sidecarOverWorkloadCPU(r *testbed.Run) (float64, bool) {
	sc, okSc := sidecarCPUPer1k(r)
	w, okW := workloadCPUPer1k(r)
	if !okSc || !okW || w <= 0 {
		return 0, false
	}
	return sc / w, true
}

// sidecarRSS is the largest resident memory of any one sidecar under load.
func sidecarRSS(r *testbed.Run) (float64, bool) {
	u, ok := r.Resources.Role(measure.RoleSidecar)
	return MiB(u.MaxLoadRSS), ok
}

// meshCores is the CPU of every mesh process or container (MeshRoles).
func meshCores(r *testbed.Run) (float64, bool) {
	cores := 0.0
	for _, u := range r.Resources.Usage {
		if IsMeshRole(u.Role) {
			cores += u.MilliCores / 1000
		}
	}
	return cores, true
}

// MeshRoles are the roles whose CPU and memory the mesh costs: every
// sidecar (the loadgen's own included), per-node proxies, waypoints and
// the control plane. Apps and the load generator are not the mesh.
// "waypoint" is kubelet.RoleWaypoint, named here so that this package does
// not import the Kubernetes client.
var MeshRoles = []measure.Role{measure.RoleSidecar, measure.RoleNodeProxy, "waypoint", measure.RoleControlPlane}

// IsMeshRole reports whether r is one of MeshRoles.
func IsMeshRole(r measure.Role) bool { return slices.Contains(MeshRoles, r) }
