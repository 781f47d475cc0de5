package testbed

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/meshbench/meshbench/framework/load"
)

// Chain returns the path of n hops: one-hop and two-hop for 1 and 2, the
// names the seed articles use, and "N-hop" beyond.
func Chain(n int) Path {
	switch n {
	case 1:
		return OneHop
	case 2:
		return TwoHop
	}
	return Path(strconv.Itoa(n) + "-hop")
}

// Hops is the number of hops of p: 1 for one-hop, 2 for two-hop, N for
// "N-hop", and 0 for a path that is none of these.
func (p Path) Hops() int {
	switch p {
	case OneHop:
		return 1
	case TwoHop:
		return 2
	}
	n, err := strconv.Atoi(strings.TrimSuffix(string(p), "-hop"))
	if err != nil || n < 1 || !strings.HasSuffix(string(p), "-hop") {
		return 0
	}
	return n
}

// Placement is where the loadgen sits relative to the mesh.
type Placement string

// Placements. In the mesh, the loadgen's own outbound proxy is on every
// path, so one hop crosses two proxies; out of the mesh, it calls the
// first workload's proxy in plain text, as an ingress or a client outside
// the cluster does.
const (
	InMesh    Placement = "in-mesh"
	OutOfMesh Placement = "out-of-mesh"
)

// Workload is what a scenario asks the target to deploy and drive. Every
// field is the same in every arm of a run; zero values mean the target's
// defaults (the flags). Two scenarios with equal Deployments share the
// deployed workloads.
type Workload struct {
	// Path is the route, from loadgen to backend; Chain(n) builds longer
	// ones. Default one-hop.
	Path Path `json:"path"`
	// ResponseSize is the backend's response body in bytes.
	ResponseSize int `json:"responseSize"`
	// RequestSize is the request body in bytes; non-zero sends POSTs.
	RequestSize int `json:"requestSize,omitempty"`
	// Protocol is http1, h2 or grpc (fortio's gRPC ping). The local target
	// speaks it on every hop: h2 and grpc are HTTP/2 end to end. On
	// clusters h2 is the loadgen's hop only, and grpc is one-hop only, to a
	// gRPC backend deployed for it (kube Options.Workloads.Protocol): the
	// baseline's loadgen dials grpc://, a proxyless mesh's (mesh.InApp) its
	// own scheme, xds:///, and a sidecar mesh's grpc:// through its proxy.
	// Run.Dial records which.
	Protocol load.Protocol `json:"protocol"`
	// NewConnections opens a new TCP connection for every request, as a
	// short-lived client does, instead of keeping one per unit of
	// concurrency alive: the churn is on the client's own hop (into its
	// sidecar, or into the first workload); the sidecars' mTLS hop between
	// them is pooled as before. http1 only, and not with a Flow.
	// Default false: keep-alive.
	NewConnections bool `json:"newConnections,omitempty"`
	// Headers are added to every request the client sends, name to value,
	// e.g. a tenant or an authorization header that a mesh's policy
	// reads; for grpc they are gRPC metadata (lower-cased). Names are
	// HTTP tokens, and none is one of the path proof's own headers
	// (workload.SourceHeader, PeerHeader, ProtoHeader), which would forge
	// it. Default none.
	Headers map[string]string `json:"headers,omitempty"`
	// ServiceTime is how long the backend takes per request, in every arm:
	// a realistic call instead of an echo.
	ServiceTime time.Duration `json:"serviceTime,omitempty"`
	// Replicas is the number of backend instances. Default 1.
	Replicas int `json:"replicas,omitempty"`
	// Placement is where the loadgen sits. Default in-mesh.
	Placement Placement `json:"placement"`
	// Loadgens is the number of loadgen shards a run's connections and
	// rate are split over; their histograms are merged. Default 1.
	Loadgens int `json:"loadgens"`
	// Threads is every proxy's worker threads; 0 is the proxy's default.
	Threads int `json:"threads,omitempty"`
	// Flow, when set, drives the path with users running a flow (see
	// load.Flow) instead of connections; a step's fan-out needs a frontend
	// on the path. The target copies it into the load's options. It
	// deploys nothing of its own.
	Flow *load.Flow `json:"flow,omitempty"`
}

// Normalize fills in the defaults from def (the target's settings) and
// validates w, naming the field that is wrong.
func (w *Workload) Normalize(def Workload) error {
	w.Path = cmp.Or(w.Path, def.Path, OneHop)
	if w.ResponseSize == 0 {
		w.ResponseSize = def.ResponseSize
	}
	if w.RequestSize == 0 {
		w.RequestSize = def.RequestSize
	}
	w.Protocol = cmp.Or(w.Protocol, def.Protocol, load.HTTP1)
	w.NewConnections = w.NewConnections || def.NewConnections
	w.ServiceTime = cmp.Or(w.ServiceTime, def.ServiceTime)
	w.Replicas = cmp.Or(w.Replicas, def.Replicas, 1)
	w.Placement = cmp.Or(w.Placement, def.Placement, InMesh)
	w.Loadgens = cmp.Or(w.Loadgens, def.Loadgens, 1)
	w.Threads = cmp.Or(w.Threads, def.Threads)
	var errs []error
	if w.Path.Hops() == 0 {
		errs = append(errs, fmt.Errorf("path %q: want one-hop, two-hop or N-hop", w.Path))
	}
	if w.ResponseSize < 0 || w.RequestSize < 0 {
		errs = append(errs, fmt.Errorf("sizes: response %d, request %d: must be >= 0", w.ResponseSize, w.RequestSize))
	}
	if _, err := load.ParseProtocol(string(w.Protocol)); err != nil {
		errs = append(errs, fmt.Errorf("protocol: %w", err))
	}
	if w.ServiceTime < 0 {
		errs = append(errs, fmt.Errorf("service time %v: must be >= 0", w.ServiceTime))
	}
	if w.Replicas < 1 || w.Loadgens < 1 || w.Threads < 0 {
		errs = append(errs, fmt.Errorf("replicas %d, loadgens %d, threads %d: want replicas and loadgens >= 1, threads >= 0", w.Replicas, w.Loadgens, w.Threads))
	}
	if w.Placement != InMesh && w.Placement != OutOfMesh {
		errs = append(errs, fmt.Errorf("placement %q: want in-mesh or out-of-mesh", w.Placement))
	}
	if w.Flow != nil {
		errs = append(errs, w.normalizeFlow()...)
	}
	errs = append(errs, w.normalizeHeaders(def.Headers)...)
	client := LoadOptions(*w, Window{})
	if err := client.CheckClient(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// normalizeFlow replaces w.Flow with a normalized copy and checks that
// every fan-out has a frontend to fan out from.
func (w *Workload) normalizeFlow() []error {
	f := *w.Flow
	f.Steps = slices.Clone(f.Steps)
	w.Flow = &f
	if err := f.Normalize(); err != nil {
		return []error{fmt.Errorf("flow: %w", err)}
	}
	var errs []error
	for _, s := range f.Steps {
		if s.Fanout > 1 && w.Path.Hops() < 2 {
			errs = append(errs, fmt.Errorf("flow step %s: fan-out %d needs a frontend on the path; %s has none (use two-hop)", s.Name, s.Fanout, w.Path))
		}
	}
	return errs
}

// Deployment is the part of a workload that decides what runs: workloads
// with equal deployments are served by the same processes or pods. The
// request size and the path are per run.
type Deployment struct {
	// ResponseSize is the backend's response body, bytes (Workload.ResponseSize).
	ResponseSize int
	// Protocol is what the backends serve.
	Protocol load.Protocol
	// ServiceTime is how long the backend takes per request.
	ServiceTime time.Duration
	// Replicas is the number of backend instances.
	Replicas int
	// Hops is the longest path deployed, in hops: at least 2.
	Hops int
	// Placement is where the loadgen sits.
	Placement Placement
	// Loadgens is the number of loadgen shards.
	Loadgens int
	// Threads is every proxy's worker threads; 0 is the proxy's default.
	Threads int
}

// Deployment returns what w needs deployed. Every path up to w's is
// deployed, so one-hop and two-hop share a deployment.
func (w Workload) Deployment() Deployment {
	return Deployment{
		ResponseSize: w.ResponseSize, Protocol: w.Protocol, ServiceTime: w.ServiceTime, Replicas: w.Replicas,
		Hops: max(w.Path.Hops(), 2), Placement: w.Placement, Loadgens: w.Loadgens, Threads: w.Threads,
	}
}

// Action is what a fault does to a process or container.
type Action string

// Fault actions.
const (
	// Kill ends the process with SIGKILL; the target's supervisor (or the
	// kubelet) restarts it, as a crash would be.
	Kill Action = "kill"
	// Restart stops the process gracefully, as `kubectl rollout restart`
	// or a container stop does: SIGTERM, on which a proxy drains or stops
	// at once, then the target's supervisor (or the kubelet) starts it
	// again, whatever its exit code.
	Restart Action = "restart"
)

// Actions lists the fault actions every target knows.
func Actions() []Action { return []Action{Kill, Restart} }

// Validate refuses an action that is none of Actions, naming them.
func (a Action) Validate() error {
	known := Actions()
	if slices.Contains(known, a) {
		return nil
	}
	names := make([]string, len(known))
	for i, k := range known {
		names[i] = string(k)
	}
	return fmt.Errorf("fault action %q is unknown: want %s", a, strings.Join(names, " or "))
}

// Past is the action done, for what a run reports: "killed",
// "restarted".
func (a Action) Past() string {
	switch a {
	case Kill:
		return "killed"
	case Restart:
		return "restarted"
	}
	return "hit by " + strconv.Quote(string(a))
}

// Fault acts on one workload's role in the measured arm during the window.
// The run is then in expected-disruption mode: failed requests are
// measured, not a reason to distrust the run, and the result carries the
// recovery.
type Fault struct {
	// Action is what happens.
	Action Action `json:"action"`
	// Workload names whose process is hit: "backend", "frontend" or
	// "loadgen".
	Workload string `json:"workload"`
	// Sidecar hits the workload's proxy rather than its app.
	Sidecar bool `json:"sidecar"`
	// NodeProxy hits the mesh's per-node proxy (ztunnel, cilium-envoy, a
	// Cilium agent: mesh.Roles.NodeProxies) on the node that runs the
	// workload's pod, rather than the workload: every pod of that node
	// loses its proxy at once. Only a cluster with such a mesh has one.
	NodeProxy bool `json:"nodeProxy,omitempty"`
	// After is how far into the measured window the fault happens.
	After time.Duration `json:"after"`
}

// String reads like the scenario: "kill backend's sidecar after 1s",
// "restart the node proxy of backend after 1s".
func (f Fault) String() string {
	what := f.Workload
	switch {
	case f.NodeProxy:
		what = "the node proxy of " + what
	case f.Sidecar:
		what += "'s sidecar"
	}
	return fmt.Sprintf("%s %s after %v", f.Action, what, f.After)
}

// Check refuses a fault that names two things to hit, or an unknown
// action; what a target can hit is its own Supports.
func (f Fault) Check() error {
	if f.Sidecar && f.NodeProxy {
		return fmt.Errorf("fault %s: Sidecar and NodeProxy are both set; a fault hits one container", f)
	}
	return f.Action.Validate()
}

// Spec is one run: an arm, the workload, the window and an optional
// fault.
type Spec struct {
	// Arm is the arm to run.
	Arm Arm `json:"arm"`
	// Workload is what to run; the target fills in its defaults.
	Workload Workload `json:"workload"`
	// Window is how the run drives the workload: connections, rate and
	// durations. The target builds the loadgen's options from Workload
	// and Window with LoadOptions, and writes into neither.
	Window Window `json:"-"`
	// Fault, when set, happens during the window of this arm.
	Fault *Fault `json:"fault,omitempty"`
	// CPUProfile asks a Profiler for a CPU profile of each of the arm's
	// sidecars over the measured window (Run.CPUProfiles). Profiling
	// costs CPU: a run that takes one measures the profiler too.
	CPUProfile bool `json:"-"`
	// Fresh asks the target to start the arm's processes afresh before
	// the window (the suite asks it for a gate's arms), so that no placement, memory
	// layout or connection state the arm got at start lasts a whole run:
	// an offset between the arms then varies from pair to pair, where the
	// gate's interval covers it. Only the local target does; the suite
	// refuses it elsewhere.
	Fresh bool `json:"-"`
	// Barrier, when set, makes the run wait for the other arms of its duet
	// at each Stage (Spec.Sync): a target that runs arms at once calls
	// Sync at every stage, in order: before the warm-up, before the
	// window's resource accounting and before the loadgens' window.
	// Default nil: the run waits for nothing.
	Barrier Barrier `json:"-"`
}

// Profiler is a target that can take CPU profiles of an arm's sidecars
// over a measured window (Spec.CPUProfile). CanProfile is nil when it
// can, else why not, e.g. "nginx is not a Go program with a pprof
// endpoint".
type Profiler interface {
	CanProfile() error
}

// CPUProfile is one process's CPU profile over a measured window, as Go
// writes it (gzipped protobuf).
type CPUProfile struct {
	// Process names the profiled process, e.g. its sidecar.
	Process string
	// Data is the profile, gzipped protobuf (pprof format).
	Data []byte
}

// Supporter is a target that can tell, before anything runs, whether it
// can serve a workload. The reason names what is missing and how to get
// it; the scenario is skipped with it.
type Supporter interface {
	Supports(w Workload, f *Fault) error
}
