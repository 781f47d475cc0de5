package suite

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/arms"
	"github.com/meshbench/meshbench/framework/gate"
	"github.com/meshbench/meshbench/framework/kernel"
	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/testbed/kube"
)

// Config is the harness settings, set by flags. Every field's default is
// documented on its flag.
type Config struct {
	// Target is where the run goes (-target): local, kind or remote.
	Target string `json:"target"`
	// Kubeconfig, KubeContext and Namespace come from e2e-framework's
	// -kubeconfig, -context and -namespace flags (or $KUBECONFIG).
	Kubeconfig  string `json:"kubeconfig,omitempty"`
	KubeContext string `json:"kubeContext,omitempty"` // the kubeconfig context; "" is its current one
	Namespace   string `json:"namespace,omitempty"`   // e2e-framework's -namespace; the arms get namespaces of their own
	// Concurrency is the connection counts swept (-concurrency; default
	// 1, 4, 16, 32).
	Concurrency []int `json:"concurrency"`
	// ConcurrencySet is true when -concurrency was given: it then wins
	// over every scenario's own default sweep.
	ConcurrencySet bool `json:"concurrencySet,omitempty"`
	// Duration is each run's measured window (-duration or go test's
	// -benchtime; 0: 1 s local, 3 s in a local gate, 10 s on a cluster).
	Duration time.Duration `json:"duration"`
	// Warmup is the load before a window, thrown away (-warmup;
	// ClusterWarmup, or LocalWarmup on the local target, where only an
	// arm's first window at each load has one).
	Warmup time.Duration `json:"warmup"`
	// Budget is how long the run may measure, from its start (0: only go
	// test's -timeout, less a 25 % margin, bounds it).
	Budget time.Duration `json:"budget,omitempty"`
	// QPS is the open-loop rate of a run, in req/s (-qps; 0: closed loop
	// at the maximum rate).
	QPS float64 `json:"qps"`
	// RateTolerance is the fraction (0-1) by which an open-loop run may
	// miss QPS and stay valid (-rate-tolerance; default 0.05).
	RateTolerance float64 `json:"rateTolerance"`
	// Protocol is what the client speaks (-protocol): http1, h2 or grpc.
	Protocol load.Protocol `json:"protocol"`
	// ResponseSize and RequestSize are the bodies in bytes (-payload,
	// default 128; -request-size, default 0: GETs).
	ResponseSize int `json:"responseSize"`
	RequestSize  int `json:"requestSize"` // bytes; non-zero sends POSTs
	// Sidecar is the local target's sidecar proxy as written on -sidecar
	// (name[@version][+variant…]; default caddy).
	Sidecar string `json:"sidecar"`
	// Candidate, when set, is an upgrade gate's candidate sidecar; Sidecar
	// is then the reference. The arms are baseline, reference, candidate.
	Candidate string `json:"candidate,omitempty"`
	// SidecarSpec and CandidateSpec are -sidecar and -candidate as the
	// targets read them, parsed once by Normalize: on the local target
	// both (arms.ParseLocal), on a cluster the candidate
	// (arms.ParseCluster). CandidateSpec is nil without a candidate.
	SidecarSpec   arms.Spec  `json:"-"`
	CandidateSpec *arms.Spec `json:"-"` // nil without -candidate
	// Gate is the gate fixture, "none" for no decision; MaxCount the
	// rounds a point may grow to while its gate is inconclusive.
	Gate     string `json:"gate,omitempty"`
	MaxCount int    `json:"maxCount,omitempty"` // rounds, -count's included
	// GateFraction, when set, is the open-loop rate of a gate's open
	// point (suite.GateLoad) as a fraction of the capacity the meshed arms
	// just showed, instead of the scenario's own.
	GateFraction float64 `json:"gateFraction,omitempty"`
	// GateMode is how a gate's rounds run its reference and candidate:
	// testbed.Sequential, one after another, testbed.Duet, both at once,
	// each with its own loadgen at the same offered load, or
	// testbed.OpenDuet, the open-loop points as duets and the others
	// sequential (-gate-mode; the default: defaultGateMode).
	GateMode testbed.Mode `json:"gateMode,omitempty"`
	// GateSeed is the seed of a duet's start order (testbed.DuetOrder),
	// recorded so that a run's orders can be replayed (-gate-seed; 0:
	// drawn by Normalize).
	GateSeed uint64 `json:"gateSeed,omitempty"`
	// GateFresh starts the reference's and the candidate's processes
	// afresh before each of their windows in a gate (testbed.Spec.Fresh;
	// -gate-fresh, the local target only; the default there with
	// -candidate: defaultGateFresh).
	GateFresh bool `json:"gateFresh,omitempty"`
	// gateFreshSet says -gate-fresh was given, true or false.
	gateFreshSet bool
	// Reference, when set, is a stored results file this run's meshed arm
	// is gated against (stored-reference mode, for meshes that cannot run
	// two versions at once), with the fixture of Gate.
	Reference string `json:"reference,omitempty"`
	// StoreReference measures a gate's scenario with the baseline and
	// meshed arms and decides nothing, for its results file to be a later
	// run's Reference: window and repeats are a gate's (LocalGateWindow,
	// GateRepeats), so that the two runs are comparable.
	StoreReference bool `json:"storeReference,omitempty"`
	// SidecarThreads is every sidecar's worker threads (-sidecar-threads;
	// 0: the proxy's default).
	SidecarThreads int `json:"sidecarThreads"`
	// ResultsDir is where results files go (-results; default
	// <module>/results).
	ResultsDir string `json:"resultsDir"`
	// Kubernetes targets.
	Mesh      string `json:"mesh,omitempty"`      // the meshed arm's mesh (-mesh): a registered adapter's name
	Placement string `json:"placement,omitempty"` // the loadgen's: in-mesh (default) or out-of-mesh
	Loadgens  int    `json:"loadgens,omitempty"`  // loadgen replicas a run is sharded over (default 1)
	// ControlPlaneChanges and ControlPlanePods ask every meshed run for its
	// mesh's control plane after the window (kube.ControlPlaneOptions):
	// that many routing changes timed to every loadgen's xDS client, and
	// a second phase with that many idle injected pods added.
	ControlPlaneChanges int    `json:"controlPlaneChanges,omitempty"`
	ControlPlanePods    int    `json:"controlPlanePods,omitempty"`
	NginxImage          string `json:"nginxImage,omitempty"`   // the backend's and frontend's image
	LoadgenImage        string `json:"loadgenImage,omitempty"` // the loadgen's image (built from ./cmd/mbloadgen)
	KindCluster         string `json:"kindCluster,omitempty"`  // the kind cluster's name (default meshbench); an existing one is reused and kept
	// NodeCPU is where a remote cluster's CPU is read (kube.Options.NodeCPU):
	// kubelet or agent; NodeCPUImage the agent's image.
	NodeCPU      string `json:"nodeCPU,omitempty"`
	NodeCPUImage string `json:"nodeCPUImage,omitempty"` // built from ./cmd/mbnodecpu
	// CheckExec, on a remote cluster with CPU from the kubelets, also
	// reads every node at the instant with it, beside each aligned read
	// of the kubelets (kube.Options.CheckExec): a test's check, set in
	// code (kind.NodeExec), not by a flag; each record's resources carry
	// its window as Check.
	CheckExec kube.NodeExec `json:"-"`
	// CiliumEncryption is the transparent encryption -mesh=cilium installs
	// and checks: ipsec, wireguard or none.
	CiliumEncryption string `json:"ciliumEncryption,omitempty"`
	// BaselineKubeconfig is the cluster the baseline arm runs on when the
	// mesh is on for a whole cluster (Cilium); kind makes a second cluster.
	BaselineKubeconfig string `json:"baselineKubeconfig,omitempty"`
	KindConfig         string `json:"kindConfig,omitempty"`  // kind's cluster config (default <module>/kind-config.yaml)
	NodeImage          string `json:"nodeImage,omitempty"`   // kind's node image (default the offline image when built)
	KeepCluster        bool   `json:"keepCluster,omitempty"` // keep a kind cluster this run created
	// MeshInstall installs the mesh from its Helm charts when it is not
	// there, and uninstalls it at the end.
	MeshInstall  bool   `json:"meshInstall,omitempty"`
	MeshVersion  string `json:"meshVersion,omitempty"`  // the release to install (default: the adapter's pinned one)
	MeshCharts   string `json:"meshCharts,omitempty"`   // a directory of its charts, for air-gapped clusters
	MeshRegistry string `json:"meshRegistry,omitempty"` // the registry its images come from (default upstream)
	// CandidateMeshVersion and CandidateMeshCharts are the release and
	// charts the candidate revision of an Istio canary gate is installed
	// from (default: -mesh-version's and -mesh-charts'), so that two
	// versions run side by side.
	CandidateMeshVersion string `json:"candidateMeshVersion,omitempty"`
	CandidateMeshCharts  string `json:"candidateMeshCharts,omitempty"`
	// MeshRevision is the Istio revision (istio.io/rev) the meshed arm is
	// injected by; Waypoint routes an ambient meshed arm through a waypoint.
	MeshRevision string `json:"meshRevision,omitempty"`
	Waypoint     bool   `json:"waypoint,omitempty"` // istio-ambient: through a waypoint
	// Thresholds is the threshold fixture (-thresholds; default
	// <module>/fixtures/thresholds/<target>.yaml; "none": off).
	Thresholds string `json:"thresholds"`
	// ThresholdsNote says why the default fixture was not used.
	ThresholdsNote string `json:"thresholdsNote,omitempty"`
	// Prices is the price fixture of the reports' cost model; "" is the
	// embedded fixtures/prices/example.yaml.
	Prices string `json:"prices,omitempty"`
	// DefaultRepeats is used for -count when the user does not set it.
	DefaultRepeats int `json:"defaultRepeats"`
	// Repeats, when > 0, is the number of interleaved pairs per
	// concurrency regardless of -count (for tests that drive a Suite
	// directly); 0 follows -count.
	Repeats int `json:"repeats,omitempty"`
	// MeshedBackendDelay slows the meshed arm on purpose, to show that a
	// fixture trips. Never set it for a real measurement.
	MeshedBackendDelay time.Duration `json:"meshedBackendDelay,omitempty"`
}

// intList is a flag of comma-separated positive integers.
type intList struct{ v *[]int }

// String is the list joined by commas, "" when unbound (flag.Value).
func (l intList) String() string {
	if l.v == nil {
		return ""
	}
	s := make([]string, len(*l.v))
	for i, n := range *l.v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// Set replaces the list with s's comma-separated integers, each at least
// 1 (flag.Value).
func (l intList) Set(s string) error {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("%q is not a positive integer (want e.g. 1,2,4,8)", f)
		}
		out = append(out, n)
	}
	*l.v = out
	return nil
}

type protocolFlag struct{ v *load.Protocol }

// String is the protocol, "" when unbound (flag.Value).
func (p protocolFlag) String() string {
	if p.v == nil {
		return ""
	}
	return string(*p.v)
}

// Set parses s with load.ParseProtocol: http1, h2 or grpc, or an alias
// such as h2c (flag.Value).
func (p protocolFlag) Set(s string) error {
	v, err := load.ParseProtocol(s)
	if err != nil {
		return err
	}
	*p.v = v
	return nil
}

// gateModeFlag is -gate-mode: one of testbed.Modes, refused otherwise as
// the flag is parsed.
type gateModeFlag struct{ v *testbed.Mode }

// gateFreshFlag is -gate-fresh, a boolean flag that records whether it
// was given, so that its default can depend on the target.
type gateFreshFlag struct{ c *Config }

// IsBoolFlag lets -gate-fresh stand alone (flag.boolFlag).
func (g gateFreshFlag) IsBoolFlag() bool { return true }

// String is the value, "false" when unset (flag.Value).
func (g gateFreshFlag) String() string {
	return strconv.FormatBool(g.c != nil && g.c.GateFresh)
}

// Set takes a boolean (flag.Value).
func (g gateFreshFlag) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("want true or false")
	}
	g.c.GateFresh, g.c.gateFreshSet = v, true
	return nil
}

// String is the mode, "sequential" when unset (flag.Value).
func (g gateModeFlag) String() string {
	if g.v == nil || *g.v == "" {
		return string(testbed.Sequential)
	}
	return string(*g.v)
}

// Set takes one of testbed.Modes (flag.Value).
func (g gateModeFlag) Set(s string) error {
	m := testbed.Mode(s)
	if !slices.Contains(testbed.Modes, m) {
		return fmt.Errorf("want %s", testbed.ModeList())
	}
	*g.v = m
	return nil
}

// NewMesh is the adapter of -mesh with the options the flags ask for
// (MeshOptions).
func (c *Config) NewMesh() (mesh.Mesh, error) { return mesh.New(c.Mesh, c.MeshOptions()...) }

// MeshOptions are the mesh adapter's options the flags ask for.
func (c *Config) MeshOptions() []mesh.Option {
	opts := []mesh.Option{mesh.WithWords(flagWords)}
	if c.MeshRevision != "" {
		opts = append(opts, mesh.WithRevision(c.MeshRevision))
	}
	if c.Waypoint {
		opts = append(opts, mesh.WithWaypoint(mesh.DefaultWaypoint))
	}
	if c.Mesh == "cilium" && c.CiliumEncryption != "" {
		opts = append(opts, mesh.WithEncryption(c.CiliumEncryption))
	}
	return opts
}

// checkMeshModes checks -mesh-revision and -waypoint against -mesh.
func (c *Config) checkMeshModes() []error {
	var errs []error
	if r := c.MeshRevision; r != "" {
		if c.Mesh != "istio" && c.Mesh != "istio-proxyless" {
			errs = append(errs, fmt.Errorf("-mesh-revision=%s: only used with -mesh=istio or -mesh=istio-proxyless (got -mesh=%q)", r, c.Mesh))
		} else if msgs := validation.IsDNS1123Label(r); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("-mesh-revision=%s: not a revision name: %s", r, strings.Join(msgs, "; ")))
		}
	}
	if e := c.CiliumEncryption; e != "ipsec" && e != "" && c.Mesh != "cilium" {
		errs = append(errs, fmt.Errorf("-cilium-encryption=%s: only used with -mesh=cilium (got -mesh=%q)", e, c.Mesh))
	} else if !slices.Contains(mesh.CiliumEncryptions, e) && e != "" {
		errs = append(errs, fmt.Errorf("-cilium-encryption=%s: want one of %s", e, strings.Join(mesh.CiliumEncryptions, ", ")))
	}
	if c.Waypoint && c.Mesh != "istio-ambient" {
		errs = append(errs, fmt.Errorf("-waypoint: only used with -mesh=istio-ambient (got -mesh=%q)", c.Mesh))
	}
	return append(errs, c.checkControlPlane()...)
}

// checkControlPlane checks -control-plane-changes and -control-plane-pods:
// not negative, the pods only with changes, and a mesh that measures its
// control plane (mesh.Propagator) on a cluster.
func (c *Config) checkControlPlane() []error {
	var errs []error
	for _, f := range []struct {
		name string
		n    int
	}{{"control-plane-changes", c.ControlPlaneChanges}, {"control-plane-pods", c.ControlPlanePods}} {
		if f.n < 0 {
			errs = append(errs, fmt.Errorf("-%s=%d: want 0 or more", f.name, f.n))
		}
	}
	if c.ControlPlanePods > 0 && c.ControlPlaneChanges <= 0 {
		errs = append(errs, fmt.Errorf("-control-plane-pods=%d: only used with -control-plane-changes", c.ControlPlanePods))
	}
	if c.ControlPlaneChanges <= 0 {
		return errs
	}
	if c.Target == "local" {
		return append(errs, fmt.Errorf("-control-plane-changes=%d: the local target has no control plane; use -target=kind or a kubeconfig with -mesh=%s",
			c.ControlPlaneChanges, strings.Join(mesh.Propagators(), " or -mesh=")))
	}
	if c.GateMode == testbed.Duet || c.GateMode == testbed.OpenDuet {
		errs = append(errs, fmt.Errorf("-control-plane-changes=%d: a duet runs both arms at once, so each arm's control plane would be timed beside the other's changes; use -gate-mode=%s",
			c.ControlPlaneChanges, testbed.Sequential))
	}
	if m, err := c.NewMesh(); err == nil {
		if _, ok := m.(mesh.Propagator); !ok {
			errs = append(errs, fmt.Errorf("-control-plane-changes=%d: -mesh=%s cannot change its routing for a probe and count its proxies; only -mesh=%s measures its control plane",
				c.ControlPlaneChanges, c.Mesh, strings.Join(mesh.Propagators(), ", -mesh=")))
		}
	}
	return errs
}

// RegisterFlags defines meshbench's flags on fs with their defaults.
func RegisterFlags(fs *flag.FlagSet) *Config {
	c := &Config{
		Target:         "local",
		Concurrency:    []int{1, 4, 16, 32},
		Protocol:       load.HTTP1,
		Sidecar:        "caddy",
		DefaultRepeats: 3,
	}
	fs.StringVar(&c.Target, "target", "", "where to run: local (default: processes on loopback with real sidecars); kind; remote (the default when -kubeconfig or $KUBECONFIG is set)")
	fs.Var(intList{&c.Concurrency}, "concurrency", "comma-separated connection counts to sweep")
	fs.Float64Var(&c.GateFraction, "gate-fraction", 0, "a gate's open-loop rate as a fraction of the capacity the meshed arms just showed, instead of the scenario's own (BenchmarkUpgradeGate: 0.25); docs/flags.md says what kind needs")
	fs.Var(gateModeFlag{&c.GateMode}, "gate-mode", "how a gate's rounds run the reference and the candidate: duet (both at once, each with its own loadgen at the same offered load, in an order drawn from -gate-seed; the default on the local target with -candidate), sequential (one after another; the default elsewhere), or open-duet (the open-loop points as duets, the maximum-rate points sequential)")
	fs.Var(gateFreshFlag{c}, "gate-fresh", "start the reference's and the candidate's sidecars and apps afresh before each of their windows in a gate, so that an offset one arm's processes got at start varies from pair to pair, inside the gate's interval, instead of lasting the whole run (the local target only, and its default with -candidate; -gate-fresh=false keeps them for the run)")
	fs.Uint64Var(&c.GateSeed, "gate-seed", 0, "with -gate-mode=duet, the seed of the arms' start order in each round, to replay a run's orders (0: drawn at random; the results' settings record it as gateSeed)")
	fs.DurationVar(&c.Budget, "budget", 0, "measure for at most this long from the start: scenarios that would not fit get shorter windows (locally, down to 1s), else are skipped, and the run says which (0: go test's -timeout less a 25 % margin bounds the run alone)")
	fs.DurationVar(&c.Duration, "duration", 0, "measured window of each run, also set by go test's -benchtime=3s (default 1s local, so that the main job fits 5 minutes; 3s for a local gate; 10s on a cluster, where kubelet CPU counters refresh about every 10s)")
	fs.DurationVar(&c.Warmup, "warmup", ClusterWarmup, "warm-up, thrown away: on a cluster before each window; locally before an arm's first window at each load (path, concurrency, rate), since the processes and the sidecars' mTLS connection pools live across runs and every window opens its own loadgen connections (default 150ms on the local target)")
	fs.Float64Var(&c.QPS, "qps", 0, "open-loop target rate in req/s per run; 0 is closed loop at maximum rate")
	fs.Float64Var(&c.RateTolerance, "rate-tolerance", 0.05, "fraction by which an open-loop run may miss -qps and stay valid")
	fs.Var(protocolFlag{&c.Protocol}, "protocol", "http1, h2 or grpc: h2 and grpc are HTTP/2 on every hop on the local target (h2c in plain text, h2 over mTLS); on clusters h2 is the loadgen's hop, and grpc deploys gRPC backends and runs one-hop only (a proxyless mesh's meshed arm dials xds:///)")
	fs.IntVar(&c.ResponseSize, "payload", 128, "response body size in bytes")
	fs.IntVar(&c.RequestSize, "request-size", 0, "request body size in bytes (non-zero sends POSTs)")
	fs.StringVar(&c.Sidecar, "sidecar", c.Sidecar, "local target's sidecar proxy: caddy, or envoy, nginx or haproxy when on PATH; caddy@VERSION builds that release; a +no-keepalive suffix turns keep-alive between sidecars off, +access-log writes an access log line per request")
	fs.StringVar(&c.Candidate, "candidate", "", "an upgrade gate's candidate sidecar; arms baseline, reference, candidate. local: written like -sidecar, which is then the reference (caddy@v2.11.9, caddy+no-keepalive, caddy+access-log); kind/remote: with -mesh=sidecar, IMAGE, IMAGE+no-keepalive, or +no-keepalive for the reference's image (-nginx-image) with keep-alive between sidecars off; with -mesh=istio, rev=NAME: the Istio revision that injects the candidate arm (the reference's is -mesh-revision, or the default injector)")
	fs.StringVar(&c.Gate, "gate", "", "gate fixture for -candidate or -reference (default <module>/fixtures/gates/<target>-<mesh>.yaml if there is one, else <target>.yaml; none: no decision)")
	fs.StringVar(&c.Reference, "reference", "", "a stored results file (results/<run>.json) to gate this run's meshed arm against, for meshes that cannot run two versions at once; judged with -gate's fixture")
	fs.BoolVar(&c.StoreReference, "store-reference", false, "measure an upgrade-gate scenario (BenchmarkUpgradeGate) without a candidate, baseline and meshed arms, deciding nothing, with a gate's window and repeats, so that its results file can be a later run's -reference (a mesh release measured before the upgrade)")
	fs.IntVar(&c.MaxCount, "max-count", 0, "with -candidate or -reference: add rounds at a point while its gate is undecided, up to this many in all, at least -count (0: with -candidate, 60 on the local target and 30 on a cluster (looked at after every round); with -reference, -count only); against a stored reference the rounds add repeats of this run only")
	fs.IntVar(&c.SidecarThreads, "sidecar-threads", 0, "worker threads per sidecar; 0 is the proxy's default")
	fs.StringVar(&c.Mesh, "mesh", "", "kind/remote: the meshed arm's mesh: "+strings.Join(mesh.Names(), ", ")+" (default sidecar on kind; required on remote)")
	fs.BoolVar(&c.MeshInstall, "mesh-install", false, "kind/remote: install the mesh from its Helm charts when it is missing, and uninstall it at the end")
	fs.StringVar(&c.MeshVersion, "mesh-version", "", "kind/remote: with -mesh-install, the mesh release (chart version) to install (default: the adapter's pinned one)")
	fs.StringVar(&c.MeshCharts, "mesh-charts", "", "kind/remote: with -mesh-install, a directory holding the charts (air-gapped; default: download from the mesh's Helm repository)")
	fs.StringVar(&c.MeshRegistry, "mesh-registry", "", "kind/remote: with -mesh-install, the registry to pull the mesh's images from (default upstream)")
	fs.StringVar(&c.CandidateMeshVersion, "candidate-mesh-version", "", "kind/remote: with -mesh-install and -candidate=rev=NAME, the release the candidate revision is installed at, for a canary of another version (default: -mesh-version)")
	fs.StringVar(&c.CandidateMeshCharts, "candidate-mesh-charts", "", "kind/remote: with -mesh-install and -candidate=rev=NAME, a directory holding the candidate revision's charts (default: -mesh-charts)")
	fs.StringVar(&c.MeshRevision, "mesh-revision", "", "kind/remote: with -mesh=istio or istio-proxyless, the Istio revision (istio.io/rev) that injects the meshed arm, and that -mesh-install installs (default: the default injector)")
	fs.BoolVar(&c.Waypoint, "waypoint", false, "kind/remote: with -mesh=istio-ambient, route the meshed arm through a waypoint proxy created in its namespace (Gateway API CRDs installed when missing)")
	fs.StringVar(&c.Placement, "placement", "in-mesh", "kind/remote: loadgen placement, in-mesh or out-of-mesh")
	fs.IntVar(&c.Loadgens, "loadgens", 1, "kind/remote: loadgen replicas a run is sharded over (histograms merged)")
	fs.IntVar(&c.ControlPlaneChanges, "control-plane-changes", 0, "kind/remote: with -mesh=istio-proxyless, after each meshed window, time this many routing changes (a VirtualService rule toggled) until every loadgen's xDS client routes by them, and read istiod's CPU and RSS per connected proxy (0: not measured)")
	fs.IntVar(&c.ControlPlanePods, "control-plane-pods", 0, "kind/remote: with -control-plane-changes, measure again with this many idle injected pods added (the second pod count; 0: only the run's own pods)")
	fs.StringVar(&c.NginxImage, "nginx-image", manifests.DefaultImages.Nginx, "kind/remote: backend and frontend image")
	fs.StringVar(&c.LoadgenImage, "loadgen-image", manifests.DefaultImages.Loadgen, "kind/remote: loadgen image (built from ./cmd/mbloadgen)")
	fs.StringVar(&c.NodeCPU, "node-cpu", kube.NodeCPUKubelet, "remote: where CPU is read: kubelet (the kubelets' cached counters, refreshed every 10-15 s) or agent (the mbnodecpu DaemonSet, read at the instant); kind reads on its nodes")
	fs.StringVar(&c.NodeCPUImage, "nodecpu-image", nodeCPUImage(), "remote: with -node-cpu=agent, the agent's image (built from ./cmd/mbnodecpu; default $MESHBENCH_NODECPU_IMAGE)")
	fs.StringVar(&c.KindCluster, "kind-cluster", "meshbench", "kind: cluster name; an existing cluster of that name is reused and kept")
	fs.StringVar(&c.CiliumEncryption, "cilium-encryption", "ipsec", "kind/remote: with -mesh=cilium, its transparent encryption: ipsec, wireguard, or none (Cilium as the CNI only, for kernels without ESP or WireGuard)")
	fs.StringVar(&c.BaselineKubeconfig, "baseline-kubeconfig", "", "remote: with a mesh that is on for a whole cluster (cilium), the kubeconfig of the cluster the baseline arm runs on (kind makes <kind-cluster>-baseline)")
	fs.StringVar(&c.KindConfig, "kind-config", "", "kind: cluster config (default <module>/kind-config.yaml)")
	fs.StringVar(&c.NodeImage, "node-image", "", "kind: node image (default the offline image when built, else kind's)")
	fs.BoolVar(&c.KeepCluster, "keep-cluster", false, "kind: keep the cluster this run creates")
	fs.StringVar(&c.ResultsDir, "results", "", "results directory (default <module>/results)")
	fs.StringVar(&c.Prices, "prices", "", "price fixture of the reports' cost model (default the embedded fixtures/prices/example.yaml)")
	fs.StringVar(&c.Thresholds, "thresholds", "", "threshold fixture (default <module>/fixtures/thresholds/<target>.yaml; none turns the gate off)")
	return c
}

// Normalize validates c and fills in paths relative to the module root.
func (c *Config) Normalize() error {
	c.defaultTarget()
	errs := c.checkTarget()
	errs = append(errs, c.checkMesh()...)
	errs = append(errs, c.checkLoad()...)
	errs = append(errs, c.checkSidecars()...)
	switch c.NodeCPU {
	case "", kube.NodeCPUKubelet, kube.NodeCPUAgent:
	default:
		errs = append(errs, fmt.Errorf("-node-cpu=%s: want %s or %s", c.NodeCPU, kube.NodeCPUKubelet, kube.NodeCPUAgent))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	c.fillPaths(moduleRoot())
	if err := c.checkReference(); err != nil {
		return err
	}
	if err := c.checkGateMode(); err != nil {
		return err
	}
	if err := c.checkGateFresh(); err != nil {
		return err
	}
	if _, err := report.LoadPrices(c.Prices); err != nil { // fail now, not after the sweep
		return fmt.Errorf("-prices: %w", err)
	}
	return nil
}

// CheckMaxCount checks -max-count against -count (count, the rounds every
// point gets), once -count's default is known: the budget includes them.
func (c *Config) CheckMaxCount(count int) error {
	if c.MaxCount > 0 && c.MaxCount < count {
		return fmt.Errorf("-max-count=%d: must be at least -count (%d), or 0", c.MaxCount, count)
	}
	return nil
}

// defaultMaxCount sets -max-count, when not given, for a gate with a
// candidate in the run: gate.DefaultLocalMaxPairs on the local target,
// gate.DefaultMaxPairs on a cluster, or -count when that is more.
func (c *Config) defaultMaxCount(count int) {
	if c.MaxCount != 0 || c.Candidate == "" || c.Gate == "none" {
		return
	}
	budget := gate.DefaultMaxPairs
	if c.Target == "local" {
		budget = gate.DefaultLocalMaxPairs
	}
	c.MaxCount = max(budget, count)
}

// checkReference checks -reference and -store-reference against the other
// gate flags; the -reference file itself is read and checked by
// CheckFixtures.
func (c *Config) checkReference() error {
	switch {
	case c.StoreReference && (c.Candidate != "" || c.Reference != ""):
		return errors.New("-store-reference: not with -candidate or -reference: it measures the run a later -reference is gated against")
	case c.Reference == "":
		return nil
	case c.Candidate != "":
		return fmt.Errorf("-reference=%s: not with -candidate: the stored run is the reference, and this run's meshed arm the candidate", c.Reference)
	case c.Gate == "none":
		return fmt.Errorf("-reference=%s: needs a gate fixture (-gate), and there is none for target %s; pass -gate FILE", c.Reference, c.Target)
	}
	return nil
}

// defaultGateMode is duet where a duet can run: on the local target, with
// a candidate in this run and no stored reference. There, on 2026-12-03,
// with the machine's per-pair noise at 9-13 % in sequential rounds, duet
// passed 6 A/A gates of 7 (one inconclusive) in 82-115 s and failed
// +access-log and the Caddy bump 2 of 2 each, where sequential decided
// none of 3 A/A gates in 319-354 s (docs/gate.md, "Duet mode").
// Sequential elsewhere: a cluster runs a duet too (-gate-mode=duet or
// open-duet, each arm with its own loadgens, their workloads on the same
// nodes), but on kind, on 2026-12-05, no mode decided a gate within 8
// pairs, and a duet was the noisier at maximum rate (docs/gate.md, "On
// kind: duet, sequential and open-duet").
func (c *Config) defaultGateMode() testbed.Mode {
	if c.Target == "local" && c.Candidate != "" && c.Reference == "" && !c.StoreReference {
		return testbed.Duet
	}
	return testbed.Sequential
}

// checkGateMode checks -gate-mode against the target and the gate flags,
// and draws -gate-seed for a duet when it was not given.
func (c *Config) checkGateMode() error {
	switch c.GateMode {
	case "":
		c.GateMode = c.defaultGateMode()
	case testbed.Sequential, testbed.Duet, testbed.OpenDuet:
	default:
		return fmt.Errorf("-gate-mode=%s: want %s", c.GateMode, testbed.ModeList())
	}
	if c.GateMode == testbed.Sequential {
		return nil
	}
	switch {
	case c.Reference != "" || c.StoreReference:
		return fmt.Errorf("-gate-mode=%s: not with -reference or -store-reference: a stored run cannot run at the same time as this one", c.GateMode)
	case c.Candidate == "":
		return fmt.Errorf("-gate-mode=%s: needs -candidate: a duet runs the reference and the candidate at the same time, in this run", c.GateMode)
	}
	if c.GateSeed == 0 {
		c.GateSeed = testbed.NewSeed()
	}
	return nil
}

// checkGateFresh checks -gate-fresh: the local target's gate only, whose
// processes start in a second; a cluster's pods are not redeployed
// between rounds. Not given, it is on where it can be: a local gate with
// a candidate. On the emulated bad day of 2026-12-07 it removed the
// run-level offsets of 20 duet A/A gates (F 3.3-34.7 without, 0.26-1.25
// with; docs/gate.md, "Do the runs agree?").
func (c *Config) checkGateFresh() error {
	if !c.gateFreshSet {
		c.GateFresh = c.Target == "local" && c.Candidate != ""
	}
	switch {
	case !c.GateFresh:
		return nil
	case c.Target != "local":
		return fmt.Errorf("-gate-fresh: the local target only (-target=%s): a cluster's pods are not redeployed between rounds", c.Target)
	case c.Candidate == "":
		return errors.New("-gate-fresh: needs -candidate: it starts the reference's and the candidate's processes afresh in a gate's rounds")
	}
	return nil
}

// defaultTarget is local, or remote when a kubeconfig is given.
func (c *Config) defaultTarget() {
	if c.Kubeconfig == "" {
		c.Kubeconfig = os.Getenv("KUBECONFIG")
	}
	if c.Target == "" {
		c.Target = "local"
		if c.Kubeconfig != "" {
			c.Target = "remote"
		}
	}
}

func (c *Config) checkTarget() []error {
	switch c.Target {
	case "local":
	case "kind":
		if c.Mesh == "" {
			c.Mesh = "sidecar"
		}
	case "remote":
		if c.Mesh == "" {
			return []error{fmt.Errorf("-mesh: required with a remote cluster (%s): one of %s", c.Kubeconfig, strings.Join(mesh.Names(), ", "))}
		}
	default:
		return []error{fmt.Errorf("-target=%s: want local, kind or remote", c.Target)}
	}
	return nil
}

// checkMesh checks the mesh flags before any cluster is made.
func (c *Config) checkMesh() []error {
	errs := c.checkMeshModes()
	if c.Target != "local" && c.Mesh != "" {
		m, err := c.NewMesh()
		switch inst, installs := m.(mesh.Installer); {
		case err != nil:
			errs = append(errs, fmt.Errorf("-mesh=%s: %w", c.Mesh, err))
		case c.MeshInstall && !installs:
			errs = append(errs, fmt.Errorf("-mesh-install: the %s mesh has nothing to install", c.Mesh))
		case c.MeshInstall:
			if _, err := inst.Charts(c.meshRelease()); err != nil {
				errs = append(errs, fmt.Errorf("-mesh-version=%s: %w", c.MeshVersion, err))
			}
		}
	}
	errs = append(errs, c.checkClusterWide()...)
	for _, f := range []struct{ name, value string }{{"mesh-version", c.MeshVersion}, {"mesh-charts", c.MeshCharts}, {"mesh-registry", c.MeshRegistry}} {
		if f.value != "" && !c.MeshInstall {
			errs = append(errs, fmt.Errorf("-%s=%s: only used with -mesh-install", f.name, f.value))
		}
	}
	if c.MeshInstall && c.Target == "local" {
		errs = append(errs, errors.New("-mesh-install: the local target has no mesh to install; use -target=kind or a kubeconfig"))
	}
	for _, f := range []struct{ name, dir string }{{"mesh-charts", c.MeshCharts}, {"candidate-mesh-charts", c.CandidateMeshCharts}} {
		if st, err := os.Stat(f.dir); f.dir != "" && (err != nil || !st.IsDir()) {
			errs = append(errs, fmt.Errorf("-%s=%s: not a directory", f.name, f.dir))
		}
	}
	return append(errs, c.checkCandidateRelease()...)
}

// checkCandidateRelease checks -candidate-mesh-version and
// -candidate-mesh-charts: only for a candidate revision that -mesh-install
// installs, and a version the adapter installs.
func (c *Config) checkCandidateRelease() []error {
	var errs []error
	for _, f := range []struct{ name, value string }{{"candidate-mesh-version", c.CandidateMeshVersion}, {"candidate-mesh-charts", c.CandidateMeshCharts}} {
		if f.value != "" && (!c.MeshInstall || !strings.HasPrefix(c.Candidate, arms.RevisionPrefix)) {
			errs = append(errs, fmt.Errorf("-%s=%s: only used with -mesh-install and -candidate=%sNAME (a canary revision of another release)", f.name, f.value, arms.RevisionPrefix))
		}
	}
	if c.CandidateMeshVersion == "" || len(errs) > 0 || c.Target == "local" {
		return errs
	}
	if m, err := c.NewMesh(); err == nil {
		if inst, ok := m.(mesh.Installer); ok {
			if _, err := inst.Charts(c.candidateRelease()); err != nil {
				errs = append(errs, fmt.Errorf("-candidate-mesh-version=%s: %w", c.CandidateMeshVersion, err))
			}
		}
	}
	return errs
}

// checkClusterWide checks that a mesh that is on for a whole cluster has
// a cluster for its baseline, and on kind is installed as the CNI.
func (c *Config) checkClusterWide() []error {
	m, why := c.clusterWide()
	if m == nil {
		if c.BaselineKubeconfig != "" {
			return []error{fmt.Errorf("-baseline-kubeconfig=%s: only used with a mesh that is on for a whole cluster (-mesh=cilium) on a remote cluster", c.BaselineKubeconfig)}
		}
		return nil
	}
	switch {
	case c.Target == "kind" && !c.MeshInstall:
		return []error{fmt.Errorf("-mesh=%s on kind: add -mesh-install: %s is the cluster's CNI, installed when the cluster is made", c.Mesh, c.Mesh)}
	case c.Target == "kind" && c.BaselineKubeconfig != "":
		return []error{fmt.Errorf("-baseline-kubeconfig=%s: kind makes the baseline cluster %s-baseline itself", c.BaselineKubeconfig, c.KindCluster)}
	case c.Target == "remote" && c.BaselineKubeconfig == "":
		return []error{fmt.Errorf("-mesh=%s: -baseline-kubeconfig is required: %s, so the baseline needs a cluster without it", c.Mesh, why)}
	case c.Target == "kind":
		// kind's nodes run on this kernel: what it lacks, they lack.
		if err := kernel.Supports(kernel.ConfigPath, c.CiliumEncryption); err != nil {
			return []error{fmt.Errorf("-mesh=%s -cilium-encryption=%s on kind: %w; use -cilium-encryption=none to measure Cilium as the CNI only", c.Mesh, c.CiliumEncryption, err)}
		}
	}
	return nil
}

// setFlags are the flags given on the command line.
func setFlags() map[string]bool {
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// checkZeros refuses a zero the user wrote where zero would otherwise
// stand for the default: -duration 0s is not the default window, and -count 0
// measures nothing anyone can compare.
func (c *Config) checkZeros(set map[string]bool) error {
	var errs []error
	if set["duration"] && c.Duration == 0 {
		errs = append(errs, errors.New("-duration=0s: a window must be > 0; leave -duration out for the default (1s on the local target, 3s for a local gate, 10s on a cluster)"))
	}
	if set["test.count"] {
		if f := flag.Lookup("test.count"); f != nil && f.Value.String() == "0" {
			errs = append(errs, fmt.Errorf("-count=0: measures no round to compare; leave -count out for the default (%d interleaved rounds), or give at least 1", c.DefaultRepeats))
		}
	}
	return errors.Join(errs...)
}

// The default windows (-duration). The main job's local windows are short
// so that the whole default run, every scenario at 3 interleaved rounds,
// measures within 5 minutes on 2 cores; -duration (or go test's
// -benchtime=3s) makes them longer on purpose. A local gate keeps 3 s
// windows: its error rates were measured at 3 s. On a cluster the kubelet's
// CPU counters refresh about every 10 s.
const (
	MainJobWindow   = time.Second
	LocalGateWindow = 3 * time.Second
	ClusterWindow   = 10 * time.Second
)

// The default warm-ups (-warmup). Locally an arm warms up only before its
// first window at each load (local.warmups), and a window's own start
// settled within 100 ms there: on the 2-core machine, 2026-12-06, two
// main jobs' 50 ms timelines read an arm's first window without a warm-up
// at 0.56, 0.89 and 1.00 of its steady rate in its first three buckets.
// So 150 ms, with half again as margin. On a cluster, every window.
const (
	LocalWarmup   = 150 * time.Millisecond
	ClusterWarmup = 300 * time.Millisecond
)

// localWarmup sets the local target's warm-up when -warmup was left at
// its default (set: the flags given).
func (c *Config) localWarmup(set map[string]bool) {
	if c.Target == "local" && !set["warmup"] && c.Warmup == ClusterWarmup {
		c.Warmup = LocalWarmup
	}
}

// defaultWindow is the window when -duration and -benchtime leave it open.
func (c *Config) defaultWindow() time.Duration {
	switch {
	case c.Target != "local":
		return ClusterWindow
	case c.Candidate != "" || c.Reference != "" || c.StoreReference:
		return LocalGateWindow
	}
	return MainJobWindow
}

// benchtimeWindow reads go test's -benchtime as the window when it is a
// duration (-benchtime=3s), as a Go user asks for longer benchmarks; the
// load, not b.N, decides how long a run takes, so -benchtime=Nx is b.N
// alone. -benchtime and -duration together are refused.
func (c *Config) benchtimeWindow(set map[string]bool) error {
	bt := flagValue("test.benchtime")
	if !set["test.benchtime"] || strings.HasSuffix(bt, "x") {
		return nil
	}
	d, err := time.ParseDuration(bt)
	if err != nil || d <= 0 {
		return fmt.Errorf("-benchtime=%s: want a window such as 3s (or Nx, which meshbench ignores: the load decides a run's length)", bt)
	}
	if set["duration"] {
		return fmt.Errorf("-benchtime=%s and -duration=%v: give one (both set the measured window)", bt, c.Duration)
	}
	c.Duration = d
	return nil
}

// checkLoad checks the load flags and fills in the window's default.
func (c *Config) checkLoad() []error {
	var errs []error
	if len(c.Concurrency) == 0 {
		errs = append(errs, errors.New("-concurrency: empty"))
	}
	if c.Duration == 0 {
		c.Duration = c.defaultWindow()
	}
	for _, bad := range []struct {
		bad  bool
		what string
	}{
		{c.Duration < 0, fmt.Sprintf("-duration=%v: must be > 0", c.Duration)},
		{c.Warmup < 0, fmt.Sprintf("-warmup=%v: must be >= 0", c.Warmup)},
		{c.GateFraction < 0 || c.GateFraction >= 1, fmt.Sprintf("-gate-fraction=%v: a fraction of the capacity, in (0, 1)", c.GateFraction)},
		{c.Budget < 0, fmt.Sprintf("-budget=%v: must be >= 0 (0: no budget but go test's -timeout)", c.Budget)},
		{c.QPS < 0, fmt.Sprintf("-qps=%v: must be >= 0", c.QPS)},
		{c.RateTolerance <= 0 || c.RateTolerance >= 1, fmt.Sprintf("-rate-tolerance=%v: must be in (0, 1)", c.RateTolerance)},
		{c.ResponseSize < 0, fmt.Sprintf("-payload=%d: must be >= 0", c.ResponseSize)},
		{c.RequestSize < 0, fmt.Sprintf("-request-size=%d: must be >= 0", c.RequestSize)},
		{c.SidecarThreads < 0, fmt.Sprintf("-sidecar-threads=%d: must be >= 0", c.SidecarThreads)},
		{c.MaxCount < 0 || (c.MaxCount > 0 && c.Candidate == "" && c.Reference == ""), fmt.Sprintf("-max-count=%d: a number of rounds, only with -candidate or -reference", c.MaxCount)},
	} {
		if bad.bad {
			errs = append(errs, errors.New(bad.what))
		}
	}
	return errs
}

// checkSidecars parses and checks -sidecar and -candidate before
// anything is built.
func (c *Config) checkSidecars() []error {
	if c.Target != "local" {
		return c.checkClusterCandidate()
	}
	if err := c.checkLocalSidecars(); err != nil {
		return []error{err}
	}
	return nil
}

// fillPaths resolves the file flags against the module root and fills in
// the default fixtures.
func (c *Config) fillPaths(root string) {
	// go test runs in the package directory: a relative path the user
	// typed from the module root is found there too.
	for _, p := range []*string{&c.Thresholds, &c.KindConfig, &c.MeshCharts, &c.Gate, &c.Reference} {
		if *p != "" && *p != "none" && !filepath.IsAbs(*p) {
			if _, err := os.Stat(*p); err != nil {
				if _, err := os.Stat(filepath.Join(root, *p)); err == nil {
					*p = filepath.Join(root, *p)
				}
			}
		}
	}
	if c.ResultsDir == "" {
		c.ResultsDir = filepath.Join(root, "results")
	}
	if c.Gate == "" && (c.Candidate != "" || c.Reference != "") {
		c.Gate = defaultGate(root, c.Target, c.Mesh)
	}
	if c.KindConfig == "" {
		c.KindConfig = filepath.Join(root, "kind-config.yaml")
	}
	if c.Thresholds == "" {
		// One fixture per target; on a remote cluster, one per mesh; on
		// kind, kind.yaml is the bring-your-own sidecar's, and another
		// mesh's is kind-<mesh>.yaml.
		name, where := c.Target, ""
		switch {
		case c.Target == "remote":
			name, where = c.Mesh, "on a remote cluster"
		case c.Target == "kind" && c.Mesh != "" && c.Mesh != "sidecar":
			name, where = "kind-"+c.Mesh, "on kind"
		}
		c.Thresholds = filepath.Join(root, "fixtures", "thresholds", name+".yaml")
		if _, err := os.Stat(c.Thresholds); err != nil && where != "" {
			// No limits are shipped for this mesh: say so rather than
			// judge it by another mesh's, or fail at the end of the sweep.
			c.ThresholdsNote = fmt.Sprintf("no fixture for -mesh=%s %s (%s): thresholds off; pass -thresholds FILE to gate", c.Mesh, where, c.Thresholds)
			c.Thresholds = "none"
		}
	}
}

// moduleRoot walks up from the working directory to go.mod; "." if none.
func moduleRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return "."
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}

// nodeCPUImage is -nodecpu-image's default: $MESHBENCH_NODECPU_IMAGE, else
// the image hack/offline/images.sh mbnodecpu builds.
func nodeCPUImage() string {
	if v := os.Getenv("MESHBENCH_NODECPU_IMAGE"); v != "" {
		return v
	}
	return manifests.DefaultNodeCPUImage
}
