// Package validity is what makes a measured run untrustworthy, or worth a
// reader's caution: a typed reason, of a small set of stable kinds, that
// travels with the run's data so that nothing measured is lost when a run
// is judged invalid. A run's invalid reasons and its warnings are both
// [Reasons]: an invalid reason breaks the run, a warning is what a reader
// must know about a run that stands. Most kinds are one or the other; a
// kind such as [Throttled] is either, by how far it went. A run's CPU
// reasons are Reasons too, of kind [CPUDiluted]: they break its CPU
// figures alone.
package validity

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Kind is the stable class of an invalid reason. Its value is what the
// results file stores; a kind is never renamed.
type Kind string

// The kinds of invalid reasons, derived from every reason meshbench gives
// not to trust a run.
const (
	// NoRequests: no request completed in the window, or a flow step
	// started none.
	NoRequests Kind = "no-requests"
	// Errors: more requests failed than the run allows.
	Errors Kind = "errors"
	// MissedRate: an open loop achieved less than its target rate, so its
	// latency is understated (coordinated omission). A rate ladder reads
	// it as the knee, not as a failure.
	MissedRate Kind = "missed-rate"
	// StoppedEarly: a loadgen ran a shorter window than asked.
	StoppedEarly Kind = "stopped-early"
	// ShardsApart: a run's loadgen shards did not run together.
	ShardsApart Kind = "shards-apart"
	// SaturatedLoadgen: the loadgen, or one of its threads, used its
	// whole CPU budget, so the run measured the loadgen.
	SaturatedLoadgen Kind = "saturated-loadgen"
	// Throttled: a container on the request path was CPU-throttled, so it
	// measured its limit, not its work.
	Throttled Kind = "throttled"
	// Restart: a process or container restarted during the window.
	Restart Kind = "restart"
	// MeshNotOn: the meshed arm's mTLS or transparent encryption was not
	// proven on a hop.
	MeshNotOn Kind = "mesh-not-on"
	// PathNotVerified: a hop of the path served fewer requests than the
	// run completed.
	PathNotVerified Kind = "path-not-verified"
	// WrongProtocol: a hop spoke another protocol than the workload's.
	WrongProtocol Kind = "wrong-protocol"
	// UnexpectedRoute: requests took a hop that is not on the path.
	UnexpectedRoute Kind = "unexpected-route"
	// BaselineMeshed: the baseline arm went through a proxy or was
	// encrypted.
	BaselineMeshed Kind = "baseline-meshed"
	// UnverifiedArm: the mesh could not verify the arm's deployment.
	UnverifiedArm Kind = "unverified-arm"
	// FaultFailed: a fault run's fault failed, did not happen within the
	// window, or could not be followed (no timeline).
	FaultFailed Kind = "fault-failed"
	// FaultNotRecovered: the system did not recover from the fault within
	// the window, or the killed container was not back.
	FaultNotRecovered Kind = "fault-not-recovered"
	// BusyMachine: processes outside the run used a share of the machine
	// during the window, so the run measured them too.
	BusyMachine Kind = "busy-machine"
	// DuetApart: the two halves of a duet pair (the reference and the
	// candidate run at once) did not share enough of their windows, so the
	// machine's wander no longer hit both alike.
	DuetApart Kind = "duet-apart"
	// ControlPlaneFailed: the run's control-plane measurement
	// (testbed.ControlPlane) could not finish: a routing change that did
	// not reach every loadgen in time, or a control plane it could not
	// read. Its window stands measured, but a gate must not pass a
	// control plane that did not propagate.
	ControlPlaneFailed Kind = "control-plane-failed"
	// Unknown is the kind of a reason or a warning read from a results
	// file written before they were typed.
	Unknown Kind = "unknown"
)

// The kinds of warnings, derived from every warning meshbench gives: a run
// with only these stands, and its reader is told. [Throttled] is also a
// warning when the container is off the request path or was throttled
// little.
const (
	// NodeSaturated: a node's CPU was near full, so the machine, not only
	// the mesh, may be the ceiling.
	NodeSaturated Kind = "node-saturated"
	// PinnedThread: a process or container had a thread at a whole core,
	// a bottleneck that more cores do not lift.
	PinnedThread Kind = "pinned-thread"
	// CPUIncomplete: CPU counters were missing, not refreshed within the
	// window or went backwards, so some CPU is not in the figures.
	CPUIncomplete Kind = "cpu-incomplete"
	// CPUDiluted: the CPU counters' own window was under load for less
	// than 90 % of it, so per-role CPU is diluted by idle time. It is a
	// reason not to trust the run's CPU figures alone (a run's
	// cpuInvalid list): its latency and throughput stand. Results files
	// written before that hold it among the warnings, where it means the
	// same.
	CPUDiluted Kind = "cpu-diluted"
	// CPUCoarse: a process's CPU was read in 10 ms ticks (a kernel without
	// schedstat, or a local results file written before the local target
	// read ns) and counted too few of them for one tick to be a small
	// error: a reason not to trust the run's CPU figures alone.
	CPUCoarse Kind = "cpu-coarse"
	// FaultNoFailures: a fault happened but failed no request.
	FaultNoFailures Kind = "fault-no-failures"
	// FaultSettledLower: after a fault the load settled at under 90 % of
	// its rate before it (but at half of it or more), and its recovery was
	// judged against the settled rate: a machine that slowed down, or a
	// restarted proxy that is slower.
	FaultSettledLower Kind = "fault-settled-lower"
	// FaultKilled: a fault killed a process or container, or stopped it
	// for a restart, whose CPU is then not in the run's figures.
	FaultKilled Kind = "fault-killed"
	// FaultRestarted: the killed (or stopped) container was restarted,
	// and when it ran and was ready again.
	FaultRestarted Kind = "fault-restarted"
	// LostLogs: a killed sidecar lost the logs that prove the path, so
	// that many requests are allowed without its record.
	LostLogs Kind = "lost-logs"
	// SecondBaseline: the meshed arm ran without a mesh (mesh none), an
	// A/A run.
	SecondBaseline Kind = "second-baseline"
	// PlainByDesign: the mesh, as configured, does not encrypt the hops
	// (Cilium without encryption).
	PlainByDesign Kind = "plain-by-design"
	// LoadgenOutOfMesh: the loadgen ran out of the mesh, so its first hop
	// is plain text by design.
	LoadgenOutOfMesh Kind = "loadgen-out-of-mesh"
	// PlacedApart: a workload of the arm ran on other nodes than the same
	// workload of the arm it is compared with, so their ratio measures the
	// placement too.
	PlacedApart Kind = "placed-apart"
	// LoadgenLogs: the loadgens' logs of a run that failed requests could
	// not be read, or were read only in part, so its log file and its
	// count of errors by message lack some lines.
	LoadgenLogs Kind = "loadgen-logs"
)

// Reason is one reason not to trust a run.
type Reason struct {
	// Kind is what kind of reason it is.
	Kind Kind `json:"kind"`
	// Detail is the exact message a reader sees.
	Detail string `json:"detail"`
}

// New returns a reason of kind k whose detail is format applied to args.
func New(k Kind, format string, args ...any) Reason {
	return Reason{Kind: k, Detail: fmt.Sprintf(format, args...)}
}

// String is the reason's detail.
func (r Reason) String() string { return r.Detail }

// UnmarshalJSON reads a reason as {"kind":…,"detail":…}, or as the plain
// string that results files held before reasons were typed (kind Unknown).
func (r *Reason) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err == nil {
		*r = Reason{Kind: Unknown, Detail: s}
		return nil
	}
	type plain Reason
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return fmt.Errorf("invalid reason: want a string or {\"kind\",\"detail\"}: %w", err)
	}
	*r = Reason(p)
	return nil
}

// Reasons are every reason not to trust one run, empty when it is valid;
// or every warning on one run.
type Reasons []Reason

// Add appends a reason of kind k whose detail is format applied to args.
func (rs *Reasons) Add(k Kind, format string, args ...any) {
	*rs = append(*rs, New(k, format, args...))
}

// Kinds lists the distinct kinds of rs, in the order they first appear.
func (rs Reasons) Kinds() []Kind {
	var ks []Kind
	for _, r := range rs {
		if !slices.Contains(ks, r.Kind) {
			ks = append(ks, r.Kind)
		}
	}
	return ks
}

// Has reports whether rs holds a reason of kind k.
func (rs Reasons) Has(k Kind) bool {
	return slices.ContainsFunc(rs, func(r Reason) bool { return r.Kind == k })
}

// Only reports whether rs is not empty and every reason is of one of
// kinds.
func (rs Reasons) Only(kinds ...Kind) bool {
	for _, r := range rs {
		if !slices.Contains(kinds, r.Kind) {
			return false
		}
	}
	return len(rs) > 0
}

// Of returns the reasons of kind k.
func (rs Reasons) Of(k Kind) Reasons {
	var out Reasons
	for _, r := range rs {
		if r.Kind == k {
			out = append(out, r)
		}
	}
	return out
}

// Strings are the reasons' details.
func (rs Reasons) Strings() []string {
	if rs == nil {
		return nil
	}
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Detail
	}
	return out
}

// String joins the details with "; ".
func (rs Reasons) String() string { return strings.Join(rs.Strings(), "; ") }
