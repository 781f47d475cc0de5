// Package local is the embedded default target: every workload is a real OS
// process on loopback, and the meshed arm puts a real proxy beside each
// workload as its sidecar, talking mTLS with certificates made at run time.
// It needs nothing but Go.
//
// Baseline:  loadgen → backend              loadgen → frontend → backend
// Meshed:    loadgen → [sc] ⇒ [sc] → backend
//
//	loadgen → [sc] ⇒ [sc] → frontend → [sc] ⇒ [sc] → backend
//
// where [sc] is a sidecar proxy and ⇒ is mutual TLS. The workload's
// protocol is spoken on every hop: HTTP/1.1, or for h2 and grpc HTTP/2 end
// to end (h2c on the plain hops, h2 with ALPN over mTLS, the frontend
// proxying in h2c, and a gRPC backend for grpc).
package local

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"fortio.org/fortio/fgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/meshbench/meshbench/framework/arms"
	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/pki"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/validity"
	"github.com/meshbench/meshbench/framework/workload"
)

// Options configure the local target. Zero values mean the defaults.
type Options struct {
	// Sidecar is the proxy used as sidecar, with its version and
	// configuration variants (arms.ParseLocal): caddy (the default, built
	// from go.mod), or envoy, nginx or haproxy when on PATH.
	Sidecar arms.Spec
	// SidecarThreads caps each sidecar's worker threads; 0 is the proxy's
	// default.
	SidecarThreads int
	// Protocol of the default workload, on every hop: http1 (default), h2
	// or grpc (HTTP/2 end to end; needs a sidecar with HTTP/2 upstreams).
	Protocol load.Protocol
	// ResponseSize is the backend's response body in bytes. Default 0.
	ResponseSize int
	// Candidate, when set, is the sidecar of an upgrade gate's candidate
	// arm, a spec like Sidecar's; Sidecar is then the reference arm's.
	// Default nil: one meshed arm.
	Candidate *arms.Spec
	// MeshedBackendDelay slows the meshed arm's backend on purpose, to show
	// that a threshold fixture catches a regression. Never set it for a
	// real measurement.
	MeshedBackendDelay time.Duration
	// BinDir caches built binaries; default $MESHBENCH_CACHE/bin or the
	// user cache directory.
	BinDir string
	// Logf prints progress; default discards.
	Logf func(format string, args ...any)
	// Words say the settings the target's messages advise (e.g.
	// testbed.SettingTarget) as the user wrote them. Default nil: their
	// names in Go ("Target=kind").
	Words testbed.Words
	// StartTimeout bounds each process's start-up. Default 20s.
	StartTimeout time.Duration
}

func (o *Options) normalize() error {
	if o.Sidecar.String() == "" {
		o.Sidecar = arms.Spec{Proxy: "caddy"}
	}
	if o.Protocol == "" {
		o.Protocol = load.HTTP1
	}
	if _, err := load.ParseProtocol(string(o.Protocol)); err != nil {
		return err
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 20 * time.Second
	}
	if o.ResponseSize < 0 {
		return fmt.Errorf("response size %d: must be >= 0", o.ResponseSize)
	}
	return nil
}

// Target is the local target. It implements testbed.Target. Workloads are
// deployed on first use and kept for every later scenario that needs the
// same (testbed.Deployment).
type Target struct {
	o      Options
	dir    string
	sup    *supervisor
	env    testbed.Environment
	def    testbed.Workload
	meshes []meshArm // the meshed arms: meshed, or reference and candidate
	app    string    // mbapp binary
	ca     *pki.Authority
	caFile string

	mu   sync.Mutex
	ids  map[string]pki.Identity
	deps map[testbed.Deployment]*deployment
}

// deployment is both arms of one testbed.Deployment.
type deployment struct {
	arms map[testbed.Arm]*arm
}

// arm is one side's processes and addresses.
type arm struct {
	// urls are the loadgen's addresses per path, one per loadgen shard.
	urls  map[testbed.Path][]string
	apps  map[string]string // workload name → app address, for stats
	procs map[testbed.Path][]*process
	// byName finds a workload's app ("backend") or proxy ("backend/sidecar")
	// for faults.
	byName map[string]*process
	// warm are the loads the arm was warmed up at (warmups.warmOnce).
	warm warmups
}

var (
	_ testbed.Target    = (*Target)(nil)
	_ testbed.Supporter = (*Target)(nil)
)

// New builds the binaries and deploys the default workload (both arms, up
// to two hops). On error everything started so far is stopped.
func New(ctx context.Context, o Options) (_ *Target, err error) {
	if err := o.normalize(); err != nil {
		return nil, fmt.Errorf("local target: %w", err)
	}
	meshes, err := meshArms(o.Sidecar, o.Candidate)
	if err != nil {
		return nil, fmt.Errorf("local target: %w", err)
	}
	cleanStale(o.Logf)
	dir, err := newRunDir()
	if err != nil {
		return nil, fmt.Errorf("local target: run directory: %w", err)
	}
	t := &Target{o: o, dir: dir, meshes: meshes, sup: &supervisor{dir: dir}, ids: map[string]pki.Identity{}, deps: map[testbed.Deployment]*deployment{},
		def: testbed.Workload{ResponseSize: o.ResponseSize, Protocol: o.Protocol, Threads: o.SidecarThreads}}
	defer func() {
		if err != nil {
			err = errors.Join(err, t.Close(context.WithoutCancel(ctx)))
		}
	}()
	b, err := newBuilder(o.BinDir, o.Logf)
	if err != nil {
		return nil, err
	}
	o.Logf("local target: building mbapp and the %s sidecar", t.sidecarNames())
	if t.app, err = b.build(ctx, "mbapp", "github.com/meshbench/meshbench/cmd/mbapp"); err != nil {
		return nil, err
	}
	for i := range t.meshes {
		if t.meshes[i].bin, err = t.meshes[i].sc.Binary(ctx, b); err != nil {
			return nil, err
		}
	}
	if t.ca, err = pki.NewAuthority(0); err != nil {
		return nil, err
	}
	if t.caFile, err = t.ca.WriteCA(dir); err != nil {
		return nil, err
	}
	w := t.def
	if err := t.Supports(w, nil); err != nil {
		return nil, fmt.Errorf("local target: %w", err)
	}
	_ = w.Normalize(t.def) // checked by Supports
	if _, err := t.deploy(ctx, w.Deployment()); err != nil {
		return nil, err
	}
	t.env = t.environment(ctx)
	o.Logf("local target: up in %s (baseline and meshed arms, %d processes)", dir, len(t.sup.pids()))
	return t, nil
}

func (t *Target) environment(ctx context.Context) testbed.Environment {
	env := testbed.Host()
	env.Target = "local"
	env.CPUCounters = measure.CPUClock()
	env.Loadgen = "in-process fortio (meshbench test binary); in the meshed arm it has its own outbound sidecar, as an in-mesh client does"
	ref := t.meshes[0]
	env.Mesh = testbed.MeshInfo{
		Name:    "sidecar/" + ref.sc.Name(),
		Version: ref.sc.Version(ctx, ref.bin),
		Threads: t.o.SidecarThreads,
		Config: map[string]string{
			"mtls":         "ECDSA P-256 run-scoped CA, client certificate required and verified",
			"protocol":     string(t.o.Protocol),
			"peerProtocol": "between sidecars, over mTLS with keep-alive: HTTP/1.1 for http1; h2 (ALPN h2) for h2 and grpc, which are HTTP/2 on every hop",
			"responseSize": strconv.Itoa(t.o.ResponseSize),
			"cores":        strconv.Itoa(runtime.NumCPU()),
		},
	}
	if t.o.MeshedBackendDelay > 0 {
		env.Mesh.Config["meshedBackendDelay"] = t.o.MeshedBackendDelay.String()
	}
	for _, m := range t.meshes {
		env.Mesh.Config["arm."+string(m.arm)] = m.describe(ctx)
	}
	return env
}

// Supports implements testbed.Supporter.
func (t *Target) Supports(w testbed.Workload, f *testbed.Fault) error {
	if err := w.Normalize(t.def); err != nil {
		return err
	}
	var why []string
	if w.Replicas > 1 {
		why = append(why, fmt.Sprintf("replicas=%d: the local target runs one backend per arm; use %s", w.Replicas, t.o.Words.Say(testbed.SettingTarget, "kind")))
	}
	if w.Placement == testbed.OutOfMesh {
		for _, m := range t.meshes {
			if _, ok := plain(m.sc).(permissive); !ok {
				why = append(why, fmt.Sprintf("out-of-mesh placement needs a sidecar that also takes plain text on its inbound side (caddy); %s does not", m.sc.Name()))
			}
		}
	}
	for _, m := range t.meshes {
		if _, ok := plain(m.sc).(h2Upstream); w.Protocol.HTTP2() && !ok {
			why = append(why, fmt.Sprintf("protocol %s runs HTTP/2 end to end and needs a sidecar that proxies HTTP/2 to its peers and app (caddy); %s proxies in HTTP/1.1", w.Protocol, m.sc.Name()))
		}
	}
	if f != nil {
		if err := f.Check(); err != nil {
			why = append(why, err.Error())
		}
	}
	if f != nil && f.NodeProxy {
		why = append(why, "fault on a node proxy: the local target runs a sidecar per workload and no per-node proxy; use "+
			t.o.Words.Say(testbed.SettingTarget, "kind")+" or a cluster with istio-ambient or cilium")
	}
	if f != nil && f.Workload != "loadgen" && !slices.Contains(testbed.Workloads(w.Path), f.Workload) {
		why = append(why, fmt.Sprintf("fault on %q: not on the %s path (%s)", f.Workload, w.Path, strings.Join(testbed.Workloads(w.Path), ", ")))
	}
	if f != nil && f.Workload == "loadgen" && (!f.Sidecar || w.Placement == testbed.OutOfMesh) {
		why = append(why, "fault on the loadgen: only its sidecar, in the mesh, is a process of the target")
	}
	if f != nil && w.Flow != nil {
		why = append(why, "fault during a user flow: a flow records no timeline to judge the recovery on")
	}
	if len(why) > 0 {
		return errors.New(strings.Join(why, "; "))
	}
	return nil
}

// deploy starts both arms of d, or returns them when already up.
func (t *Target) deploy(ctx context.Context, d testbed.Deployment) (*deployment, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if dep, ok := t.deps[d]; ok {
		return dep, nil
	}
	start := time.Now()
	dep := &deployment{arms: map[testbed.Arm]*arm{}}
	var err error
	if dep.arms[testbed.Baseline], err = t.startBaseline(ctx, d); err != nil {
		return nil, err
	}
	for _, m := range t.meshes {
		if dep.arms[m.arm], err = t.startMeshed(ctx, d, m); err != nil {
			return nil, err
		}
	}
	for _, a := range t.Arms() {
		for p, urls := range dep.arms[a].urls {
			for _, u := range urls {
				if err := probe(ctx, u, d.Protocol); err != nil {
					return nil, fmt.Errorf("local target: %s %s path does not answer: %w%s", a, p, err, t.logs())
				}
			}
		}
	}
	t.deps[d] = dep
	t.o.Logf("local target: deployed %+v in %v", d, time.Since(start).Round(time.Millisecond))
	return dep, nil
}

// probe sends one request, in the loadgen's protocol, and wants a 200 (a
// gRPC ping answered OK for grpc).
func probe(ctx context.Context, rawURL string, proto load.Protocol) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if proto == load.GRPC {
		return probeGRPC(ctx, rawURL)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return err
	}
	req.Header.Set(workload.SourceHeader, "probe")
	tr := &http.Transport{}
	if proto == load.H2 {
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetUnencryptedHTTP2(true)
	}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", rawURL, resp.Status)
	}
	return nil
}

// probeGRPC makes one gRPC ping call to the host of rawURL.
func probeGRPC(ctx context.Context, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return fmt.Errorf("probe %q: %w", rawURL, err)
	}
	conn, err := grpc.NewClient("passthrough:///"+u.Host, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("grpc client for %s: %w", u.Host, err)
	}
	defer conn.Close()
	ctx = metadata.AppendToOutgoingContext(ctx, strings.ToLower(workload.SourceHeader), "probe")
	if _, err := fgrpc.NewPingServerClient(conn).Ping(ctx, &fgrpc.PingMessage{}); err != nil {
		return fmt.Errorf("grpc ping %s: %w", u.Host, err)
	}
	return nil
}

// logs returns the tail of every process log, for start-up errors.
func (t *Target) logs() string {
	var s string
	t.sup.mu.Lock()
	defer t.sup.mu.Unlock()
	for _, p := range t.sup.procs {
		if tail := p.tail(5); tail != "" {
			s += fmt.Sprintf("\n--- %s (%s)\n%s", p.name, p.log, tail)
		}
	}
	return s
}

// Name implements testbed.Target.
func (t *Target) Name() string { return "local" }

// Environment implements testbed.Target.
func (t *Target) Environment() testbed.Environment { return t.env }

// URL is the address the loadgen uses for arm and path in the default
// workload (the first loadgen shard's).
func (t *Target) URL(a testbed.Arm, p testbed.Path) string {
	w := t.def
	_ = w.Normalize(t.def)
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.deps[w.Deployment()].arms[a].urls[p][0]
}

// Restarts counts, per process name, how often the supervisor started a
// process again after it died.
func (t *Target) Restarts() map[string]int {
	out := map[string]int{}
	t.sup.mu.Lock()
	defer t.sup.mu.Unlock()
	for _, p := range t.sup.procs {
		if n := p.Restarts(); n > 0 {
			out[p.name] += n
		}
	}
	return out
}

// PIDs lists the target's running child processes (for leak checks).
func (t *Target) PIDs() []int { return t.sup.pids() }

// Run implements testbed.Target: the workload deployed (or reused), the
// loadgen shards warmed up together before the arm's first window at
// this load (warmups.warmOnce), then the measured window with /proc
// accounting of the loadgen (this process) and every process on the path,
// the spec's fault on time, and the path proof from the apps' counters.
func (t *Target) Run(ctx context.Context, s testbed.Spec) (_ *testbed.Run, err error) {
	w := s.Workload
	if err := t.Supports(w, s.Fault); err != nil {
		return nil, fmt.Errorf("local target: %w", err)
	}
	_ = w.Normalize(t.def) // checked by Supports
	dep, err := t.deploy(ctx, w.Deployment())
	if err != nil {
		return nil, err
	}
	ar, ok := dep.arms[s.Arm]
	if !ok {
		return nil, fmt.Errorf("local target: unknown arm %q", s.Arm)
	}
	if err := t.settleFor(ctx, s, w.Path, ar); err != nil {
		return nil, err
	}
	shards := t.shards(s, w, ar)
	ar.warm.warmOnce(w, shards)
	defer func() {
		if err != nil { // the next window at this load warms up again
			ar.warm.forget()
		}
	}()
	before, err := t.traffic(ctx, ar)
	if err != nil {
		return nil, err
	}
	// The warm-up, or a flow's ramp, whose users keep running into the
	// window; in a duet, both arms' at once.
	if err := s.Sync(ctx, testbed.StageWarmup); err != nil {
		return nil, fmt.Errorf("%s %s: %w", s.Arm, w.Path, err)
	}
	sess, err := load.Start(ctx, shards)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", s.Arm, w.Path, err)
	}
	defer sess.Close()
	run, err := t.window(ctx, s, w, ar, shards, sess)
	if err != nil {
		return nil, err
	}
	if s.Fault != nil || len(run.Resources.Restarts) > 0 {
		ar.warm.forget()
	}
	after, err := t.traffic(ctx, ar)
	if err != nil {
		return nil, err
	}
	run.Edges = edges(before, after)
	var plain []testbed.Hop
	if w.Placement == testbed.OutOfMesh {
		plain = testbed.Hops(w.Path)[:1]
	}
	run.Invalid = append(run.Invalid, testbed.CheckEdges(s.Arm, w.Path, run.Edges, run.Load.Requests-run.Load.Errors, plain...)...)
	run.Invalid = append(run.Invalid, checkProto(w.Protocol, run.Edges)...)
	testbed.Judge(run, float64(runtime.GOMAXPROCS(0))*1000)
	return run, nil
}

// settleFor waits until every process runs and listens, after starting the
// arm's on path afresh when the spec asks (Spec.Fresh).
func (t *Target) settleFor(ctx context.Context, s testbed.Spec, path testbed.Path, ar *arm) error {
	if s.Fresh {
		if err := ar.refresh(ctx, path); err != nil {
			return fmt.Errorf("local target: %s %s: %w", s.Arm, path, err)
		}
	}
	if err := t.sup.settle(ctx, t.o.StartTimeout); err != nil {
		return fmt.Errorf("local target: before the run: %w", err)
	}
	return nil
}

// refresh starts afresh every process of the arm on path, its sidecars
// and apps (Spec.Fresh): each is stopped gracefully and started again at
// once; the supervisor's settle waits until all listen again. The next
// window warms up first, as after a deployment.
func (ar *arm) refresh(ctx context.Context, path testbed.Path) error {
	for _, p := range ar.procs[path] {
		if err := p.refresh(ctx); err != nil {
			return err
		}
	}
	ar.warm.forget()
	return nil
}

// shards splits the load of w in the spec's window over the workload's
// loadgens, each to its own URL (its own outbound sidecar in the mesh).
func (t *Target) shards(s testbed.Spec, w testbed.Workload, ar *arm) []load.Options {
	o := testbed.LoadOptions(w, s.Window)
	// the workload's own headers go on the wire (o's copy of them); the
	// source header says the request came from the loadgen (the path
	// proof reads it)
	if o.Headers == nil {
		o.Headers = map[string]string{}
	}
	o.Headers[workload.SourceHeader] = "loadgen"
	if s.Fault != nil {
		o.ExpectErrors = true
		o.Timeline = cmp.Or(o.Timeline, 50*time.Millisecond)
	}
	urls := ar.urls[w.Path]
	shards := load.Split(o, w.Loadgens)
	for i := range shards {
		shards[i].URL = urls[i%len(urls)]
	}
	return shards
}

// otherPIDs are the target's processes that are not in procs.
func (t *Target) otherPIDs(procs []measure.Proc) []int {
	var rest []int
	for _, pid := range t.sup.pids() {
		if pid > 0 && !slices.ContainsFunc(procs, func(p measure.Proc) bool { return p.PID == pid }) {
			rest = append(rest, pid)
		}
	}
	return rest
}

// window measures the shards with /proc accounting, acting out the fault;
// in a duet, it opens together with the other arm's.
func (t *Target) window(ctx context.Context, s testbed.Spec, w testbed.Workload, ar *arm, shards []load.Options, sess *load.Session) (*testbed.Run, error) {
	resources, err := t.account(ctx, s, w, ar)
	if err != nil {
		return nil, err
	}
	fault, err := t.fault(ctx, s, ar)
	if err != nil {
		return nil, err
	}
	profiles := func() ([]testbed.CPUProfile, error) { return nil, nil }
	if s.CPUProfile {
		profiles = profileSidecars(ctx, ar.procs[w.Path], profileSeconds(s.Window.Duration))
	}
	if err := s.Sync(ctx, testbed.StageWindow); err != nil {
		fault.wait()
		_, _ = profiles()
		return nil, fmt.Errorf("%s %s: %w", s.Arm, w.Path, err)
	}
	results, err := sess.Measure(ctx)
	fault.wait()
	cpu, perr := profiles()
	if err = errors.Join(err, perr); err != nil {
		return nil, fmt.Errorf("%s %s: %w", s.Arm, w.Path, err)
	}
	measured, err := resources.Stop(ctx)
	if err != nil {
		return nil, err
	}
	o := shards[0]
	o.Concurrency, o.QPS, o.URL, o.Labels, o.Flow = s.Window.Concurrency, s.Window.QPS, "", "", w.Flow
	res, err := load.Merge(o, results, shardNames(len(results)))
	if err != nil {
		return nil, err
	}
	run := &testbed.Run{Arm: s.Arm, Path: w.Path, Workload: w, Fault: s.Fault, Load: res, CPUProfiles: cpu}
	if len(results) > 1 {
		run.Shards = results
	}
	run.Invalid = append(run.Invalid, res.Invalid...)
	run.Measured(measured)
	if s.Fault != nil {
		judgeFault(run, fault, t.o.Words)
	}
	return run, nil
}

// account starts the /proc accounting of the window: the loadgen (this
// process) and the arm's processes on the path, the target's others
// apart; in a duet, once both arms are ready to start theirs.
func (t *Target) account(ctx context.Context, s testbed.Spec, w testbed.Workload, ar *arm) (testbed.Measurement, error) {
	if err := s.Sync(ctx, testbed.StageAccounting); err != nil {
		return nil, fmt.Errorf("%s %s: %w", s.Arm, w.Path, err)
	}
	procs := []measure.Proc{{Name: "loadgen", Role: measure.RoleLoadgen, PID: os.Getpid()}}
	for _, pr := range ar.procs[w.Path] {
		procs = append(procs, measure.Proc{Name: pr.name, Role: pr.role, Pod: pr.pod, PID: pr.pid(), IdleRSS: pr.idleRSS, Children: true})
	}
	resources := &procMeasurement{procs: procs, rest: t.otherPIDs(procs), ticks: measure.ReadsTicks()}
	if err := resources.Start(ctx); err != nil {
		return nil, fmt.Errorf("%s %s: start the window's accounting: %w", s.Arm, w.Path, err)
	}
	return resources, nil
}

func shardNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("in-process loadgen %d", i+1)
	}
	return names
}

// traffic reads every app's caller counters.
func (t *Target) traffic(ctx context.Context, ar *arm) (map[string]workload.Stats, error) {
	out := map[string]workload.Stats{}
	for name, addr := range ar.apps {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+workload.StatsPath, nil)
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, fmt.Errorf("read %s counters: %w", name, err)
		}
		var s workload.Stats
		err = json.NewDecoder(resp.Body).Decode(&s)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("decode %s counters: %w", name, err)
		}
		out[name] = s
	}
	return out, nil
}

// edges turns the counter difference into caller → callee edges, with the
// connections each caller's requests came on into the callee's inbound
// sidecar (workload.ConnHeader), or into the callee without one.
func edges(before, after map[string]workload.Stats) []testbed.Edge {
	var out []testbed.Edge
	// In path order: the outermost frontend first, the backend last.
	dsts := slices.SortedFunc(maps.Keys(after), func(a, b string) int { return hopRank(b) - hopRank(a) })
	for _, dst := range dsts {
		prev := map[workload.Caller]workload.Caller{}
		for _, c := range before[dst].Callers {
			prev[workload.Caller{Source: c.Source, Peer: c.Peer, Proto: c.Proto}] = c
		}
		for _, c := range after[dst].Callers {
			p := prev[workload.Caller{Source: c.Source, Peer: c.Peer, Proto: c.Proto}]
			n := c.Requests - p.Requests
			if n <= 0 || c.Source == "probe" {
				continue
			}
			e := testbed.Edge{Src: c.Source, Dst: dst, Proto: c.Proto, Requests: n, Connections: c.Connections - p.Connections}
			if c.Peer != workload.Direct {
				e.Peer = c.Peer
				e.Secured = c.Peer == c.Source
			}
			out = append(out, e)
		}
	}
	return out
}

// checkProto wants every edge of an h2 or grpc workload to have spoken
// HTTP/2 into its callee, as the callee's sidecar (or, without one, the
// callee) saw it: h2 end to end, not only on the loadgen's hop.
func checkProto(p load.Protocol, edges []testbed.Edge) validity.Reasons {
	if !p.HTTP2() {
		return nil
	}
	var why validity.Reasons
	for _, e := range edges {
		if e.Proto != "HTTP/2.0" {
			why.Add(validity.WrongProtocol, "%s → %s: %d requests arrived in %s, not HTTP/2: protocol %s must be HTTP/2 on every hop",
				e.Src, e.Dst, e.Requests, cmp.Or(e.Proto, "an unknown protocol"), p)
		}
	}
	return why
}

// hopRank is how far a workload sits from the backend: 0 for the backend,
// k for FrontendName(k).
func hopRank(name string) int {
	for k := range 64 {
		if testbed.FrontendName(k) == name {
			return k
		}
	}
	return 64
}

// Dir is the run directory: the processes' configuration and logs (and a
// sidecar's access log, with +access-log). Close removes it.
func (t *Target) Dir() string { return t.dir }

// Close stops every process and removes the run directory.
func (t *Target) Close(context.Context) error {
	err := t.sup.stopAll(stopGrace)
	if rmErr := os.RemoveAll(t.dir); rmErr != nil {
		err = errors.Join(err, fmt.Errorf("remove %s: %w", t.dir, rmErr))
	}
	return err
}
