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
	"path/filepath"
	"runtime"
	"strconv"
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

// Target is the local target. It implements target.Target.
type Target struct {
	o    Options
	dir  string
	sup  *supervisor
	env  target.Environment
	arms map[target.Arm]*arm
}

// arm is one side's processes and addresses.
type arm struct {
	urls  map[target.Path]string
	apps  map[string]string // workload name → app address, for stats
	procs map[target.Path][]*process
}

var _ target.Target = (*Target)(nil)

// New starts both arms. On error everything started so far is stopped.
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
	t := &Target{o: o, dir: dir, sup: &supervisor{dir: dir}, arms: map[target.Arm]*arm{}}
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
	app, err := b.build(ctx, "mbapp", "github.com/meshbench/meshbench/cmd/mbapp")
	if err != nil {
		return nil, err
	}
	scBin, err := sc.Binary(ctx, b)
	if err != nil {
		return nil, err
	}
	ca, err := pki.NewAuthority(0)
	if err != nil {
		return nil, err
	}
	caFile, err := ca.WriteCA(dir)
	if err != nil {
		return nil, err
	}
	h2c := o.Protocol == load.H2
	if t.arms[target.Baseline], err = t.startBaseline(ctx, app, h2c); err != nil {
		return nil, err
	}
	if t.arms[target.Meshed], err = t.startMeshed(ctx, app, scBin, sc, ca, caFile, h2c); err != nil {
		return nil, err
	}
	for _, a := range target.Arms {
		for _, p := range []target.Path{target.OneHop, target.TwoHop} {
			if err := probe(ctx, t.arms[a].urls[p], h2c); err != nil {
				return nil, fmt.Errorf("local target: %s %s path does not answer: %w%s", a, p, err, t.logs())
			}
		}
	}
	t.env = target.Host()
	t.env.Target = "local"
	t.env.Loadgen = "in-process fortio (meshbench test binary); in the meshed arm it has its own outbound sidecar, as an in-mesh client does"
	threads := o.SidecarThreads
	t.env.Mesh = target.MeshInfo{
		Name:    "sidecar/" + sc.Name(),
		Version: sc.Version(ctx, scBin),
		Threads: threads,
		Config: map[string]string{
			"mtls":         "ECDSA P-256 run-scoped CA, client certificate required and verified",
			"protocol":     string(o.Protocol),
			"peerProtocol": "HTTP/1.1 over mTLS with keep-alive, between sidecars",
			"responseSize": strconv.Itoa(o.ResponseSize),
			"cores":        strconv.Itoa(runtime.NumCPU()),
		},
	}
	if o.MeshedBackendDelay > 0 {
		t.env.Mesh.Config["meshedBackendDelay"] = o.MeshedBackendDelay.String()
	}
	o.Logf("local target: up in %s (baseline and meshed arms, %d processes)", dir, len(t.sup.pids()))
	return t, nil
}

func (t *Target) addr(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

func (t *Target) startApp(ctx context.Context, name, bin string, args []string, h2c bool, listen string) (*process, error) {
	argv := append([]string{bin}, args...)
	argv = append(argv, "-listen", listen)
	if h2c {
		argv = append(argv, "-h2c")
	}
	p, err := t.sup.start(name, measure.RoleApp, argv, nil)
	if err != nil {
		return nil, err
	}
	p.pod = name
	return p, t.ready(ctx, p, listen)
}

// ready waits for p's listeners and records its idle memory.
func (t *Target) ready(ctx context.Context, p *process, addrs ...string) error {
	if err := p.waitListening(ctx, t.o.StartTimeout, addrs...); err != nil {
		return err
	}
	rss, err := measure.RSS(p.cmd.Process.Pid, true)
	p.idleRSS = rss
	return err
}

func (t *Target) startBaseline(ctx context.Context, app string, h2c bool) (*arm, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	be, fe := t.addr(ports[0]), t.addr(ports[1])
	beP, err := t.startApp(ctx, "baseline/backend", app, []string{"echo", "-size", strconv.Itoa(t.o.ResponseSize)}, h2c, be)
	if err != nil {
		return nil, err
	}
	feP, err := t.startApp(ctx, "baseline/frontend", app, []string{"proxy", "-upstream", "http://" + be}, h2c, fe)
	if err != nil {
		return nil, err
	}
	return &arm{
		urls:  map[target.Path]string{target.OneHop: "http://" + be + "/", target.TwoHop: "http://" + fe + "/"},
		apps:  map[string]string{"backend": be, "frontend": fe},
		procs: map[target.Path][]*process{target.OneHop: {beP}, target.TwoHop: {feP, beP}},
	}, nil
}

// startMeshed wires: loadgen sidecar (outbound to backend and frontend),
// frontend sidecar (inbound, and outbound to backend), backend sidecar
// (inbound).
func (t *Target) startMeshed(ctx context.Context, app, scBin string, sc Sidecar, ca *pki.Authority, caFile string, h2c bool) (*arm, error) {
	ports, err := freePorts(8)
	if err != nil {
		return nil, err
	}
	var (
		beApp, beIn        = t.addr(ports[0]), t.addr(ports[1])
		feApp, feIn, feOut = t.addr(ports[2]), t.addr(ports[3]), t.addr(ports[4])
		lgOut1, lgOut2     = t.addr(ports[5]), t.addr(ports[6])
	)
	ids := map[string]pki.Identity{}
	for _, n := range []string{"loadgen", "frontend", "backend"} {
		if ids[n], err = ca.Issue(n, t.dir); err != nil {
			return nil, err
		}
	}
	echoArgs := []string{"echo", "-size", strconv.Itoa(t.o.ResponseSize)}
	if t.o.MeshedBackendDelay > 0 {
		echoArgs = append(echoArgs, "-delay", t.o.MeshedBackendDelay.String())
	}
	beP, err := t.startApp(ctx, "meshed/backend", app, echoArgs, h2c, beApp)
	if err != nil {
		return nil, err
	}
	feP, err := t.startApp(ctx, "meshed/frontend", app, []string{"proxy", "-upstream", "http://" + feOut}, h2c, feApp)
	if err != nil {
		return nil, err
	}
	spec := func(name string) SidecarSpec {
		return SidecarSpec{Name: name, Dir: t.dir, CertFile: ids[name].CertFile, KeyFile: ids[name].KeyFile, BundleFile: ids[name].BundleFile, CAFile: caFile, H2C: h2c, Threads: t.o.SidecarThreads}
	}
	beSpec := spec("backend")
	beSpec.Inbound = &Inbound{Listen: beIn, App: beApp}
	feSpec := spec("frontend")
	feSpec.Inbound = &Inbound{Listen: feIn, App: feApp}
	feSpec.Outbound = []Outbound{{Listen: feOut, Peer: beIn, ServerName: ids["backend"].ServerName()}}
	lgSpec := spec("loadgen")
	lgSpec.Outbound = []Outbound{
		{Listen: lgOut1, Peer: beIn, ServerName: ids["backend"].ServerName()},
		{Listen: lgOut2, Peer: feIn, ServerName: ids["frontend"].ServerName()},
	}
	started := map[string]*process{}
	for _, s := range []SidecarSpec{beSpec, feSpec, lgSpec} {
		p, err := t.startSidecar(ctx, sc, scBin, s)
		if err != nil {
			return nil, err
		}
		started[s.Name] = p
	}
	return &arm{
		urls: map[target.Path]string{target.OneHop: "http://" + lgOut1 + "/", target.TwoHop: "http://" + lgOut2 + "/"},
		apps: map[string]string{"backend": beApp, "frontend": feApp},
		procs: map[target.Path][]*process{
			target.OneHop: {started["loadgen"], started["backend"], beP},
			target.TwoHop: {started["loadgen"], started["frontend"], feP, started["backend"], beP},
		},
	}, nil
}

func (t *Target) startSidecar(ctx context.Context, sc Sidecar, bin string, s SidecarSpec) (*process, error) {
	data, file, err := sc.Config(s)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(t.dir, file)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return nil, fmt.Errorf("write %s sidecar config: %w", s.Name, err)
	}
	argv, env := sc.Command(bin, path, s)
	p, err := t.sup.start("meshed/"+s.Name+"-sidecar", measure.RoleSidecar, argv, env)
	if err != nil {
		return nil, err
	}
	p.pod = "meshed/" + s.Name
	var addrs []string
	if s.Inbound != nil {
		addrs = append(addrs, s.Inbound.Listen)
	}
	for _, o := range s.Outbound {
		addrs = append(addrs, o.Listen)
	}
	return p, t.ready(ctx, p, addrs...)
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

// URL is the address the loadgen uses for arm and path.
func (t *Target) URL(a target.Arm, p target.Path) string { return t.arms[a].urls[p] }

// PIDs lists the target's running child processes (for leak checks).
func (t *Target) PIDs() []int { return t.sup.pids() }

// Run implements target.Target: warm-up, then the measured window with
// /proc accounting of the loadgen (this process) and every process on the
// path, then the path proof from the apps' counters.
func (t *Target) Run(ctx context.Context, a target.Arm, p target.Path, o load.Options) (*target.Run, error) {
	ar, ok := t.arms[a]
	if !ok {
		return nil, fmt.Errorf("local target: unknown arm %q", a)
	}
	if proto := cmp.Or(o.Protocol, load.HTTP1); proto != t.o.Protocol {
		// The apps and sidecars were started for one protocol; another
		// would fail every request, or quietly change what a hop speaks.
		return nil, fmt.Errorf("local target: a %s load on a target started for %s: set -protocol=%s (Options.Protocol) instead of changing it per scenario", proto, t.o.Protocol, proto)
	}
	o.URL = ar.urls[p]
	o.Headers = map[string]string{workload.SourceHeader: "loadgen"}
	before, err := t.traffic(ctx, ar)
	if err != nil {
		return nil, err
	}
	if err := load.Warm(ctx, o); err != nil {
		return nil, fmt.Errorf("%s %s: %w", a, p, err)
	}
	procs := []measure.Proc{{Name: "loadgen", Role: measure.RoleLoadgen, PID: os.Getpid()}}
	for _, pr := range ar.procs[p] {
		procs = append(procs, measure.Proc{Name: pr.name, Role: pr.role, Pod: pr.pod, PID: pr.cmd.Process.Pid, IdleRSS: pr.idleRSS, Children: true})
	}
	rec, err := measure.StartProcs(procs)
	if err != nil {
		return nil, err
	}
	res, err := load.Measure(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", a, p, err)
	}
	win, err := rec.Stop()
	if err != nil {
		return nil, err
	}
	after, err := t.traffic(ctx, ar)
	if err != nil {
		return nil, err
	}
	run := &target.Run{Arm: a, Path: p, Load: res, Resources: win, Edges: edges(before, after)}
	run.Invalid = append(run.Invalid, res.Invalid...)
	run.Invalid = append(run.Invalid, target.CheckEdges(a, p, run.Edges, res.Requests)...)
	target.Judge(run, float64(runtime.GOMAXPROCS(0))*1000)
	return run, nil
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
