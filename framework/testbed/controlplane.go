package testbed

import (
	"slices"

	"gonum.org/v1/gonum/stat"
)

// ControlPlane is what a meshed run measured of its mesh's control plane
// after its window, with the load stopped (kube.Options.ControlPlane): how
// long a routing change took to reach every loadgen's xDS client, and what
// the control plane used per connected proxy, first with the run's own
// pods and then with idle injected pods added.
type ControlPlane struct {
	// Change says what each change was, e.g. "VirtualService
	// meshbench-propagation: the x-meshbench-probe fault rule toggled".
	Change string `json:"change"`
	// Phases are the pod counts measured, the run's own pods first.
	Phases []ControlPlanePhase `json:"phases"`
}

// ControlPlanePhase is one pod count's measurement.
type ControlPlanePhase struct {
	// ExtraPods are the idle injected pods added for the phase; 0 for
	// the run's own pods.
	ExtraPods int `json:"extraPods"`
	// Proxies are the xDS clients connected to the control plane as it
	// counts them (istiod's pilot_xds), read at the phase's end.
	Proxies int `json:"proxies"`
	// PropagationMs are, change by change in order, the milliseconds from
	// the start of the change's apply call to the API server until the
	// last loadgen's probe answered that its route had the change. Each
	// includes one probe's round trip through the tunnel (ProbeRTTMs).
	PropagationMs []float64 `json:"propagationMs"`
	// ProbeRTTMs is the round trip of a probe that matched at once, read
	// before the first change: the resolution of PropagationMs.
	ProbeRTTMs float64 `json:"probeRttMs"`
	// CPUSeconds is the core-seconds the control plane's containers used
	// between their counters' reads before the first change and after the
	// last; Seconds is the span of those counters.
	CPUSeconds float64 `json:"cpuSeconds"`
	Seconds    float64 `json:"seconds"`
	// RSSBytes is the control plane's resident memory at the phase's end,
	// summed over its containers.
	RSSBytes int64 `json:"rssBytes"`
}

// PropagationQuantile is the q-th quantile (0..1) of PropagationMs, the
// empirical one (the smallest sample at or above q of them: with fewer
// than 100 changes the 0.99 quantile is the largest); false without one.
func (p ControlPlanePhase) PropagationQuantile(q float64) (float64, bool) {
	if len(p.PropagationMs) == 0 {
		return 0, false
	}
	x := slices.Clone(p.PropagationMs)
	slices.Sort(x)
	return stat.Quantile(q, stat.Empirical, x, nil), true
}

// MilliCoresPerProxy is the control plane's average CPU over the phase,
// in millicores, per connected proxy; false without proxies or a span.
func (p ControlPlanePhase) MilliCoresPerProxy() (float64, bool) {
	if p.Proxies <= 0 || p.Seconds <= 0 {
		return 0, false
	}
	return p.CPUSeconds / p.Seconds * 1000 / float64(p.Proxies), true
}

// RSSMiBPerProxy is the control plane's RSS in MiB per connected proxy;
// false without proxies or a read.
func (p ControlPlanePhase) RSSMiBPerProxy() (float64, bool) {
	if p.Proxies <= 0 || p.RSSBytes <= 0 {
		return 0, false
	}
	return float64(p.RSSBytes) / (1 << 20) / float64(p.Proxies), true
}

// Phase is the i-th phase, or false when the run has none.
func (c *ControlPlane) Phase(i int) (ControlPlanePhase, bool) {
	if c == nil || i < 0 || i >= len(c.Phases) {
		return ControlPlanePhase{}, false
	}
	return c.Phases[i], true
}
