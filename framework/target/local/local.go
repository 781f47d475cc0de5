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
// where [sc] is a sidecar proxy and ⇒ is mutual TLS.
package local

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/pki"
	"github.com/meshbench/meshbench/framework/target"
	"github.com/meshbench/meshbench/framework/workload"
)

// Options configure the local target. Zero values mean the defaults.
type Options struct {
	// Sidecar is the proxy used as sidecar: "caddy" (default, built from
	// go.mod), or "nginx" when on PATH.
	Sidecar string
	// SidecarThreads caps each sidecar's worker threads; 0 is the proxy's
	// default.
	SidecarThreads int
	// Protocol the loadgen speaks; h2 makes the apps and the plain sides of
	// the sidecars accept cleartext HTTP/2. Default http1.
	Protocol load.Protocol
	// ResponseSize is the backend's response body in bytes. Default 0.
	ResponseSize int
	// MeshedBackendDelay slows the meshed arm's backend on purpose, to show
	// that a threshold fixture catches a regression. Never set it for a
	// real measurement.
	MeshedBackendDelay time.Duration
	// BinDir caches built binaries; default $MESHBENCH_CACHE/bin or the
	// user cache directory.
	BinDir string
	// Logf prints progress; default discards.
	Logf func(format string, args ...any)
	// StartTimeout bounds each process's start-up. Default 20s.
	StartTimeout time.Duration
}

func (o *Options) normalize() error {
	if o.Sidecar == "" {
		o.Sidecar = "caddy"
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

// Target is the local target. It implements target.Target. Workloads are
// deployed on first use and kept for every later scenario that needs the
// same (target.Deployment).
type Target struct {
	o      Options
	dir    string
	sup    *supervisor
	env    target.Environment
	def    target.Workload
	sc     Sidecar
	app    string // mbapp binary
	scBin  string // sidecar binary
	ca     *pki.Authority
	caFile string

	mu   sync.Mutex
	ids  map[string]pki.Identity
	deps map[target.Deployment]*deployment
}

// deployment is both arms of one target.Deployment.
type deployment struct {
	arms map[target.Arm]*arm
}

// arm is one side's processes and addresses.
type arm struct {
	// urls are the loadgen's addresses per path, one per loadgen shard.
	urls  map[target.Path][]string
	apps  map[string]string // workload name → app address, for stats
	procs map[target.Path][]*process
	// byName finds a workload's app ("backend") or proxy ("backend/sidecar")
	// for faults.
	byName map[string]*process
}

var (
	_ target.Target    = (*Target)(nil)
	_ target.Supporter = (*Target)(nil)
)

// New builds the binaries and deploys the default workload (both arms, up
// to two hops). On error everything started so far is stopped.
func New(ctx context.Context, o Options) (_ *Target, err error) {
	if err := o.normalize(); err != nil {
		return nil, fmt.Errorf("local target: %w", err)
	}
	sc, err := lookSidecar(o.Sidecar)
	if err != nil {
		return nil, fmt.Errorf("local target: %w", err)
	}
	dir, err := os.MkdirTemp("", "meshbench-local-")
	if err != nil {
		return nil, fmt.Errorf("local target: run directory: %w", err)
	}
	t := &Target{o: o, dir: dir, sc: sc, sup: &supervisor{dir: dir}, ids: map[string]pki.Identity{}, deps: map[target.Deployment]*deployment{},
		def: target.Workload{ResponseSize: o.ResponseSize, Protocol: o.Protocol, Threads: o.SidecarThreads}}
	defer func() {
		if err != nil {
			err = errors.Join(err, t.Close(context.WithoutCancel(ctx)))
		}
	}()
	b, err := newBuilder(o.BinDir, o.Logf)
	if err != nil {
		return nil, err
	}
	o.Logf("local target: building mbapp and the %s sidecar", sc.Name())
	if t.app, err = b.build(ctx, "mbapp", "github.com/meshbench/meshbench/cmd/mbapp"); err != nil {
		return nil, err
	}
	if t.scBin, err = sc.Binary(ctx, b); err != nil {
		return nil, err
	}
	if t.ca, err = pki.NewAuthority(0); err != nil {
		return nil, err
	}
	if t.caFile, err = t.ca.WriteCA(dir); err != nil {
		return nil, err
	}
	w := t.def
	if err := w.Normalize(t.def); err != nil {
		return nil, fmt.Errorf("local target: %w", err)
	}
	if _, err := t.deploy(ctx, w.Deployment()); err != nil {
		return nil, err
	}
	t.env = t.environment(ctx)
	o.Logf("local target: up in %s (baseline and meshed arms, %d processes)", dir, len(t.sup.pids()))
	return t, nil
}

func (t *Target) environment(ctx context.Context) target.Environment {
	env := target.Host()
	env.Target = "local"
	env.Loadgen = "in-process fortio (meshbench test binary); in the meshed arm it has its own outbound sidecar, as an in-mesh client does"
	env.Mesh = target.MeshInfo{
		Name:    "sidecar/" + t.sc.Name(),
		Version: t.sc.Version(ctx, t.scBin),
		Threads: t.o.SidecarThreads,
		Config: map[string]string{
			"mtls":         "ECDSA P-256 run-scoped CA, client certificate required and verified",
			"protocol":     string(t.o.Protocol),
			"peerProtocol": "HTTP/1.1 over mTLS with keep-alive, between sidecars",
			"responseSize": strconv.Itoa(t.o.ResponseSize),
			"cores":        strconv.Itoa(runtime.NumCPU()),
		},
	}
	if t.o.MeshedBackendDelay > 0 {
		env.Mesh.Config["meshedBackendDelay"] = t.o.MeshedBackendDelay.String()
	}
	return env
}

// Supports implements target.Supporter.
func (t *Target) Supports(w target.Workload, f *target.Fault) error {
	if err := w.Normalize(t.def); err != nil {
		return err
	}
	var why []string
	if w.Replicas > 1 {
		why = append(why, fmt.Sprintf("replicas=%d: the local target runs one backend per arm; use -target=kind", w.Replicas))
	}
	if w.Placement == target.OutOfMesh {
		if _, ok := t.sc.(permissive); !ok {
			why = append(why, fmt.Sprintf("out-of-mesh placement needs a sidecar that also takes plain text on its inbound side (caddy); -sidecar=%s does not", t.sc.Name()))
		}
	}
	if f != nil && f.Action != target.Kill {
		why = append(why, fmt.Sprintf("fault %q: the local target can only kill", f.Action))
	}
	if f != nil && f.Workload != "loadgen" && !slices.Contains(target.Workloads(w.Path), f.Workload) {
		why = append(why, fmt.Sprintf("fault on %q: not on the %s path (%s)", f.Workload, w.Path, strings.Join(target.Workloads(w.Path), ", ")))
	}
	if f != nil && f.Workload == "loadgen" && (!f.Sidecar || w.Placement == target.OutOfMesh) {
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
func (t *Target) deploy(ctx context.Context, d target.Deployment) (*deployment, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if dep, ok := t.deps[d]; ok {
		return dep, nil
	}
	start := time.Now()
	dep := &deployment{arms: map[target.Arm]*arm{}}
	var err error
	if dep.arms[target.Baseline], err = t.startBaseline(ctx, d); err != nil {
		return nil, err
	}
	if dep.arms[target.Meshed], err = t.startMeshed(ctx, d); err != nil {
		return nil, err
	}
	h2c := d.Protocol == load.H2
	for _, a := range target.Arms {
		for p, urls := range dep.arms[a].urls {
			for _, u := range urls {
				if err := probe(ctx, u, h2c); err != nil {
					return nil, fmt.Errorf("local target: %s %s path does not answer: %w%s", a, p, err, t.logs())
				}
			}
		}
	}
	t.deps[d] = dep
	t.o.Logf("local target: deployed %+v in %v", d, time.Since(start).Round(time.Millisecond))
	return dep, nil
}

// probe sends one request, in the loadgen's protocol, and wants a 200.
func probe(ctx context.Context, url string, h2c bool) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set(workload.SourceHeader, "probe")
	tr := &http.Transport{}
	if h2c {
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
		return fmt.Errorf("GET %s: %s", url, resp.Status)
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

// Name implements target.Target.
func (t *Target) Name() string { return "local" }

// Environment implements target.Target.
func (t *Target) Environment() target.Environment { return t.env }

// URL is the address the loadgen uses for arm and path in the default
// workload (the first loadgen shard's).
func (t *Target) URL(a target.Arm, p target.Path) string {
	w := t.def
	_ = w.Normalize(t.def)
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.deps[w.Deployment()].arms[a].urls[p][0]
}

// PIDs lists the target's running child processes (for leak checks).
func (t *Target) PIDs() []int { return t.sup.pids() }

// Run implements target.Target: the workload deployed (or reused), the
// loadgen shards warmed up together, then the measured window with /proc
// accounting of the loadgen (this process) and every process on the path,
// the spec's fault on time, and the path proof from the apps' counters.
func (t *Target) Run(ctx context.Context, s target.Spec) (*target.Run, error) {
	w := s.Workload
	if err := t.Supports(w, s.Fault); err != nil {
		return nil, fmt.Errorf("local target: %w", err)
	}
	_ = w.Normalize(t.def) // checked by Supports
	if s.Load.Protocol != "" && s.Load.Protocol != w.Protocol {
		return nil, fmt.Errorf("local target: load protocol %s differs from the workload's %s: set Workload.Protocol", s.Load.Protocol, w.Protocol)
	}
	dep, err := t.deploy(ctx, w.Deployment())
	if err != nil {
		return nil, err
	}
	if err := t.sup.settle(ctx, t.o.StartTimeout); err != nil {
		return nil, fmt.Errorf("local target: before the run: %w", err)
	}
	ar, ok := dep.arms[s.Arm]
	if !ok {
		return nil, fmt.Errorf("local target: unknown arm %q", s.Arm)
	}
	shards := t.shards(s, w, ar)
	before, err := t.traffic(ctx, ar)
	if err != nil {
		return nil, err
	}
	// The warm-up, or a flow's ramp, whose users keep running into the
	// window.
	sess, err := load.Start(ctx, shards)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", s.Arm, w.Path, err)
	}
	defer sess.Close()
	run, err := t.window(ctx, s, w, ar, shards, sess)
	if err != nil {
		return nil, err
	}
	after, err := t.traffic(ctx, ar)
	if err != nil {
		return nil, err
	}
	run.Edges = edges(before, after)
	var plain []target.Hop
	if w.Placement == target.OutOfMesh {
		plain = target.Hops(w.Path)[:1]
	}
	run.Invalid = append(run.Invalid, target.CheckEdges(s.Arm, w.Path, run.Edges, run.Load.Requests, plain...)...)
	target.Judge(run, float64(runtime.GOMAXPROCS(0))*1000)
	return run, nil
}

// shards splits the spec's load over the workload's loadgens, each to its
// own URL (its own outbound sidecar in the mesh).
func (t *Target) shards(s target.Spec, w target.Workload, ar *arm) []load.Options {
	o := s.Load
	o.Protocol, o.RequestSize, o.Flow = w.Protocol, w.RequestSize, w.Flow
	o.Headers = map[string]string{workload.SourceHeader: "loadgen"}
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

// window measures the shards with /proc accounting, acting out the fault.
func (t *Target) window(ctx context.Context, s target.Spec, w target.Workload, ar *arm, shards []load.Options, sess *load.Session) (*target.Run, error) {
	procs := []measure.Proc{{Name: "loadgen", Role: measure.RoleLoadgen, PID: os.Getpid()}}
	for _, pr := range ar.procs[w.Path] {
		procs = append(procs, measure.Proc{Name: pr.name, Role: pr.role, PID: pr.pid(), IdleRSS: pr.idleRSS, Children: true})
	}
	rec, err := measure.StartProcs(procs)
	if err != nil {
		return nil, err
	}
	fault, err := t.fault(ctx, s, ar)
	if err != nil {
		return nil, err
	}
	results, err := sess.Measure(ctx)
	fault.wait()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", s.Arm, w.Path, err)
	}
	win, err := rec.Stop()
	if err != nil {
		return nil, err
	}
	o := shards[0]
	o.Concurrency, o.QPS, o.URL, o.Labels, o.Flow = s.Load.Concurrency, s.Load.QPS, "", s.Load.Labels, w.Flow
	res, err := load.Merge(o, results, shardNames(len(results)))
	if err != nil {
		return nil, err
	}
	run := &target.Run{Arm: s.Arm, Path: w.Path, Workload: w, Fault: s.Fault, Load: res, Resources: win}
	if len(results) > 1 {
		run.Shards = results
	}
	run.Invalid = append(run.Invalid, res.Invalid...)
	if s.Fault != nil {
		judgeFault(run, fault)
	}
	return run, nil
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

// edges turns the counter difference into caller → callee edges.
func edges(before, after map[string]workload.Stats) []target.Edge {
	var out []target.Edge
	for _, dst := range []string{"frontend", "backend"} {
		prev := map[workload.Caller]int64{}
		for _, c := range before[dst].Callers {
			prev[workload.Caller{Source: c.Source, Peer: c.Peer}] = c.Requests
		}
		for _, c := range after[dst].Callers {
			n := c.Requests - prev[workload.Caller{Source: c.Source, Peer: c.Peer}]
			if n <= 0 || c.Source == "probe" {
				continue
			}
			e := target.Edge{Src: c.Source, Dst: dst, Requests: n}
			if c.Peer != workload.Direct {
				e.Peer = c.Peer
				e.Secured = c.Peer == c.Source
			}
			out = append(out, e)
		}
	}
	return out
}

// Close stops every process and removes the run directory.
func (t *Target) Close(context.Context) error {
	err := t.sup.stopAll(3 * time.Second)
	if rmErr := os.RemoveAll(t.dir); rmErr != nil {
		err = errors.Join(err, fmt.Errorf("remove %s: %w", t.dir, rmErr))
	}
	return err
}
