// Package testbed is where a benchmark runs (the run's target): the
// embedded local target (real processes on loopback with real proxies as
// sidecars), a kind cluster, or a remote cluster. It is not called target:
// a global gitignore's target/ pattern, common among Maven and Cargo users,
// would hide the folder from their git. A Target deploys the baseline and
// meshed arms side by side and runs one load of one arm over one path at a
// time, returning what it measured together with the proof of which path
// the requests took.
package testbed

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/validity"
)

// Path is the route a request takes.
type Path string

// The two measured paths; their difference is the cost of one meshed hop.
const (
	OneHop Path = "one-hop" // loadgen → backend
	TwoHop Path = "two-hop" // loadgen → frontend → backend
)

// Arm is one side of the comparison.
type Arm string

// The arms: interleaved in one run, on the same machine.
const (
	Baseline Arm = "baseline" // no mesh
	Meshed   Arm = "meshed"   // injection on
	// Reference and Candidate are two versions or configurations of the
	// same mesh, gated one against the other (an upgrade).
	Reference Arm = "reference"
	Candidate Arm = "candidate"
)

// Arms lists both arms of an ordinary run in their interleaving order.
var Arms = []Arm{Baseline, Meshed}

// UpgradeArms are the arms of an upgrade gate, in interleaving order.
var UpgradeArms = []Arm{Baseline, Reference, Candidate}

// RoundOrder is the order the arms run in round rep (0-based): as listed
// in even rounds, reversed in odd ones (A B C, C B A, A B C, …). Arms
// measured back to back stay neighbours in every round, so each pair
// keeps its drift-cancelling pairing; and each arm runs first as often as
// it runs last over every two rounds, so a cost of running first or last
// (a cold cache, a machine still busy with the previous run) cancels out
// of the paired ratios instead of biasing them one way. With a fixed
// order, an A/A gate under contention measured p99 ×1.31 (1.24–1.39) for
// two identical arms.
// It takes any element type, so that a round's units (an arm alone, or
// a duet's two arms at once) alternate the same way.
func RoundOrder[T any](arms []T, rep int) []T {
	out := slices.Clone(arms)
	if rep%2 == 1 {
		slices.Reverse(out)
	}
	return out
}

// IsMeshed reports whether the arm runs with the mesh on.
func (a Arm) IsMeshed() bool { return a != Baseline }

// Armed is a target whose arms are not the ordinary two: an upgrade gate's
// baseline, reference and candidate.
type Armed interface {
	Arms() []Arm
}

// Target runs loads against a deployed pair of arms.
type Target interface {
	// Name is "local", "kind" or "remote".
	Name() string
	// Environment describes where the numbers come from.
	Environment() Environment
	// Run runs one warm-up plus measured window of one arm of a workload:
	// the loadgen's options are LoadOptions(s.Workload, s.Window), to
	// which the target adds only its URL (and a fault's timeline). It
	// reads the spec and writes into neither.
	Run(ctx context.Context, s Spec) (*Run, error)
	// Close stops and deletes everything the target started.
	Close(ctx context.Context) error
}

// Run is one measured window of one arm over one path.
type Run struct {
	// Arm is the arm measured.
	Arm Arm `json:"arm"`
	// Path is the request path the load took.
	Path Path `json:"path"`
	// Workload is what ran, defaults filled in.
	Workload Workload `json:"workload"`
	// Fault is what was done during the window, and Recovery what it did.
	Fault    *Fault         `json:"fault,omitempty"`
	Recovery *load.Recovery `json:"recovery,omitempty"`
	// Load is the loadgen's result; for several loadgens, their merge.
	Load *load.Result `json:"load"`
	// Shards are the individual loadgens' results when there were several.
	Shards []*load.Result `json:"shards,omitempty"`
	// Resources is CPU and memory per process or container over the window.
	Resources measure.Window `json:"resources"`
	// Edges is the proof of the path: who called whom, and whether mTLS
	// verified the caller.
	Edges []Edge `json:"edges"`
	// Dial is the scheme the client dialled a grpc workload with: "grpc"
	// (plain gRPC, through the arm's sidecar when it has one) or a
	// proxyless mesh's "xds" (the app's own xDS client and server carry
	// the traffic and the mTLS: no proxy is measured). Empty for HTTP.
	Dial string `json:"dial,omitempty"`
	// Nodes are, per workload of the arm (backend, frontend, loadgen), the
	// cluster nodes its pods ran on over the window; nil locally. Two arms
	// on the same nodes per workload were placed alike (a duet's must be,
	// to compare them).
	Nodes map[string][]string `json:"nodes,omitempty"`
	// Encryption is the kernel's account of transparent encryption over
	// the window, where the target can read the nodes (kind); nil elsewhere.
	Encryption *Encryption `json:"encryption,omitempty"`
	// ControlPlane is the mesh's control plane measured after the window
	// (config propagation, CPU and RSS per connected proxy), for a meshed
	// run that asked for it; nil otherwise.
	ControlPlane *ControlPlane `json:"controlPlane,omitempty"`
	// Invalid lists every reason not to trust this run: the load's own
	// (errors, missed rate) plus the target's (restarts, unverified mesh,
	// saturated loadgen), each of a stable kind.
	Invalid validity.Reasons `json:"invalid,omitempty"`
	// Warnings are conditions a reader must know about that do not
	// invalidate the run, such as a saturated machine, each of a stable
	// kind.
	Warnings validity.Reasons `json:"warnings,omitempty"`
	// CPUInvalid lists every reason not to trust the run's CPU figures
	// alone (validity.CPUDiluted: the CPU counters' own span was under
	// load for less than 90 % of it). Its latency, throughput and memory
	// stand; its per-role millicores, CPU per 1k requests, node
	// utilisation and mesh cores are marked in the tables, left out of its
	// benchstat line, and undecided for the thresholds and the gate.
	CPUInvalid validity.Reasons `json:"cpuInvalid,omitempty"`
	// CPUProfiles are the sidecars' CPU profiles over the window, when
	// the spec asked for them (Spec.CPUProfile); never stored with the
	// run: whoever asked writes them where they belong.
	CPUProfiles []CPUProfile `json:"-"`
}

// Valid reports whether nothing invalidated the run.
func (r *Run) Valid() bool { return len(r.Invalid) == 0 }

// CPUValid reports whether nothing invalidated the run's CPU figures in
// particular: it has no CPUInvalid reason nor, read from a results file
// written before there were any, a warning of kind validity.CPUDiluted.
func (r *Run) CPUValid() bool { return len(r.CPUReasons()) == 0 }

// CPUReasons are the reasons not to trust the run's CPU figures: its
// CPUInvalid reasons, then an older results file's cpu-diluted warnings.
func (r *Run) CPUReasons() validity.Reasons {
	if old := r.Warnings.Of(validity.CPUDiluted); len(old) > 0 {
		return append(slices.Clone(r.CPUInvalid), old...)
	}
	return r.CPUInvalid
}

// Invalidate adds a reason of kind k, whose detail is format applied to
// args, not to trust the run.
func (r *Run) Invalidate(k validity.Kind, format string, args ...any) {
	r.Invalid.Add(k, format, args...)
}

// Warn adds a warning of kind k, whose detail is format applied to args.
func (r *Run) Warn(k validity.Kind, format string, args ...any) {
	r.Warnings.Add(k, format, args...)
}

// InvalidKinds lists the distinct kinds of the run's invalid reasons.
func (r *Run) InvalidKinds() []validity.Kind { return r.Invalid.Kinds() }

// InvalidOnly reports whether the run is invalid, and only for reasons of
// the given kinds.
func (r *Run) InvalidOnly(kinds ...validity.Kind) bool { return r.Invalid.Only(kinds...) }

// CPUPer1k turns millicores held over the window into CPU-milliseconds
// per 1000 requests of the run (millicores × seconds = CPU-ms); 0 when no
// request completed. Every CPU-per-request figure comes from here. The
// seconds are the counters' span; for counters aligned to the kubelets'
// refreshes (measure.Window.Aligned), which spanned more than the window
// at its load, they are the window's own.
func (r *Run) CPUPer1k(milliCores float64) float64 {
	if r.Load == nil || r.Load.Requests == 0 {
		return 0
	}
	span := r.Resources.Elapsed
	if r.Resources.Aligned {
		span = r.Load.Elapsed
	}
	return milliCores * span.Seconds() / float64(r.Load.Requests) * 1000
}

// Edge is one observed caller → callee hop.
type Edge struct {
	// Src is the caller's name.
	Src string `json:"src"`
	// Dst is the callee's name.
	Dst string `json:"dst"`
	// Peer is the identity the callee's proxy verified with mTLS; empty
	// when the request did not come through a proxy.
	Peer string `json:"peer,omitempty"`
	// Secured is true when Peer was verified and is Src.
	Secured bool `json:"secured"`
	// Proto is the HTTP version the hop spoke into the callee's proxy (or
	// into the callee, without one), e.g. "HTTP/2.0"; empty when unknown.
	Proto string `json:"proto,omitempty"`
	// Requests counted at Dst from Src during the run, warm-up included
	// (0 when the evidence is a mesh's telemetry rather than a count).
	Requests int64 `json:"requests"`
	// Connections counts the connections that carried Src's requests into
	// Dst during the run, warm-up included, as the callee's side accepted
	// them: in a meshed arm the connections Dst's inbound proxy accepted
	// (the mTLS ones from Src's outbound proxy, not the client's own into
	// that proxy), in the baseline the ones Dst accepted. A connection
	// kept alive across runs counts in every run it carried requests in,
	// so Connections/Requests is the hop's connections per request. 0 means
	// not counted: the local target counts them (workload.Caller), the
	// kube targets do not.
	Connections int64 `json:"connections,omitempty"`
	// Evidence is the telemetry a mesh adapter's verdict rests on.
	Evidence string `json:"evidence,omitempty"`
	// Mechanism is what secured the hop when Secured: "" is mTLS; "IPsec"
	// or "WireGuard" is a mesh's transparent encryption between nodes.
	Mechanism string `json:"mechanism,omitempty"`
}

// Encryption is the growth of the nodes' transparent-encryption counters
// over a measured window: for IPsec, the bytes and packets of the
// kernel's XFRM states, summed over the nodes.
type Encryption struct {
	// Mechanism is "IPsec".
	Mechanism string `json:"mechanism"`
	// Source is where the counters were read.
	Source string `json:"source"`
	// Nodes is the number of nodes read; States the XFRM states on them.
	Nodes  int `json:"nodes"`
	States int `json:"states"`
	// Packets and Bytes are what the states carried during the window.
	Packets int64 `json:"packets"`
	Bytes   int64 `json:"bytes"`
}

// PrintEdges writes a SRC / DST / SECURED table, with the verified peer,
// protocol, request count, connection count (ConnectionsPerRequest) and
// evidence columns when any edge has them.
func PrintEdges(w io.Writer, edges []Edge) {
	var peer, proto, requests, conns, evidence bool
	for _, e := range edges {
		peer = peer || e.Peer != ""
		proto = proto || e.Proto != ""
		requests = requests || e.Requests > 0
		conns = conns || e.Connections > 0
		evidence = evidence || e.Evidence != ""
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	cols := []string{"SRC", "DST", "SECURED"}
	if peer {
		cols = append(cols, "VERIFIED PEER")
	}
	if proto {
		cols = append(cols, "PROTO")
	}
	if requests {
		cols = append(cols, "REQUESTS")
	}
	if conns {
		cols = append(cols, "CONNECTIONS")
	}
	if evidence {
		cols = append(cols, "EVIDENCE")
	}
	fmt.Fprintln(tw, strings.Join(cols, "\t"))
	for _, e := range edges {
		row := []string{e.Src, e.Dst, "no"}
		if e.Secured {
			row[2] = "yes (" + cmp.Or(e.Mechanism, "mTLS") + ")"
		}
		if peer {
			row = append(row, cmp.Or(e.Peer, "-"))
		}
		if proto {
			row = append(row, cmp.Or(e.Proto, "-"))
		}
		if requests {
			row = append(row, strconv.FormatInt(e.Requests, 10))
		}
		if conns {
			row = append(row, e.ConnectionsPerRequest())
		}
		if evidence {
			row = append(row, e.Evidence)
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	_ = tw.Flush()
}

// ConnectionsPerRequest is Connections with its share of Requests,
// to three significant digits, "1000 (1 per request)", "4 (0.004 per
// request)", or "-" when the connections were not counted.
func (e Edge) ConnectionsPerRequest() string {
	if e.Connections <= 0 {
		return "-"
	}
	if e.Requests <= 0 {
		return strconv.FormatInt(e.Connections, 10)
	}
	return fmt.Sprintf("%d (%.3g per request)", e.Connections, float64(e.Connections)/float64(e.Requests))
}

// Hop is an expected caller → callee pair on a path.
type Hop struct {
	// Src and Dst are the caller's and the callee's workload names
	// ("loadgen" for the first hop's caller).
	Src, Dst string
}

// Hops lists the hops a path takes, by workload name.
func Hops(p Path) []Hop {
	names := Workloads(p)
	hops := make([]Hop, len(names))
	src := "loadgen"
	for i, n := range names {
		hops[i] = Hop{src, n}
		src = n
	}
	return hops
}

// Workloads names the callees along p, in order: backend for one-hop;
// frontend, backend for two-hop; and for N hops frontend-(N-1) … frontend-2,
// frontend, backend, so that a longer chain ends like the shorter ones.
func Workloads(p Path) []string {
	n := max(p.Hops(), 1)
	names := make([]string, n)
	for i := range n {
		names[i] = FrontendName(n - 1 - i)
	}
	return names
}

// FrontendName is the name of the k-th proxy from the backend: 0 is the
// backend itself, 1 "frontend", k "frontend-k".
func FrontendName(k int) string {
	switch k {
	case 0:
		return "backend"
	case 1:
		return "frontend"
	}
	return fmt.Sprintf("frontend-%d", k)
}

// CheckEdges verifies that every hop of path was taken by at least minReq
// requests, secured in the meshed arm and not secured in the baseline, and
// that no request took any other route. Hops listed in plain may be
// unsecured in the meshed arm too (an out-of-mesh loadgen's first hop). It
// returns one reason per problem.
func CheckEdges(arm Arm, path Path, edges []Edge, minReq int64, plain ...Hop) validity.Reasons {
	expected := map[Hop]bool{}
	for _, h := range Hops(path) {
		expected[h] = true
	}
	var why validity.Reasons
	var stray []string
	good := map[Hop]int64{}
	for _, e := range edges {
		h := Hop{e.Src, e.Dst}
		switch {
		case e.Requests == 0:
		case !expected[h]:
			stray = append(stray, fmt.Sprintf("%s → %s (%d requests, verified peer %q)", e.Src, e.Dst, e.Requests, e.Peer))
		case arm.IsMeshed() && !e.Secured && !slices.Contains(plain, h):
			why.Add(validity.MeshNotOn, "mesh not really on: %d requests %s → %s were not mTLS-verified as %s (verified peer %q)", e.Requests, e.Src, e.Dst, e.Src, e.Peer)
		case arm == Baseline && e.Peer != "":
			why.Add(validity.BaselineMeshed, "baseline is meshed: %d requests %s → %s went through a proxy (verified peer %q)", e.Requests, e.Src, e.Dst, e.Peer)
		default:
			good[h] += e.Requests
		}
	}
	for _, h := range Hops(path) {
		if good[h] < minReq {
			why.Add(validity.PathNotVerified, "path not verified: %s → %s served %d %s requests, want at least %d", h.Src, h.Dst, good[h], arm, minReq)
		}
	}
	if len(stray) > 0 {
		sort.Strings(stray)
		why.Add(validity.UnexpectedRoute, "requests took an unexpected route: %s", strings.Join(stray, ", "))
	}
	return why
}
