package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/pki"
	"github.com/meshbench/meshbench/framework/testbed"
)

// permissive is a sidecar that can also take plain text on its inbound
// side, as a mesh in permissive mode does for an out-of-mesh client.
type permissive interface{ permissive() }

func addr(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

// tag names a deployment's processes apart from other deployments'.
func tag(d testbed.Deployment) string {
	return fmt.Sprintf("p%d-s%v-t%d-h%d-%s-l%d-%s", d.ResponseSize, d.ServiceTime, d.Threads, d.Hops, d.Placement, d.Loadgens, d.Protocol)
}

// echoArgs are the backend's: the payload, gRPC or HTTP, and the service
// time (plus the meshed arm's deliberate slow-down, for fixture tests).
func (t *Target) echoArgs(d testbed.Deployment, meshed bool) []string {
	args := []string{"echo", "-size", strconv.Itoa(d.ResponseSize)}
	if d.Protocol == load.GRPC {
		args = append(args, "-grpc")
	}
	delay := d.ServiceTime
	if meshed {
		delay += t.o.MeshedBackendDelay
	}
	if delay > 0 {
		args = append(args, "-delay", delay.String())
	}
	return args
}

func (t *Target) startApp(ctx context.Context, name string, args []string, h2c bool, listen string) (*process, error) {
	argv := append([]string{t.app}, args...)
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

// ready waits for p's listeners, remembers them for restarts, and records
// p's idle memory.
func (t *Target) ready(ctx context.Context, p *process, addrs ...string) error {
	p.addrs = addrs
	if err := p.waitListening(ctx, t.o.StartTimeout, addrs...); err != nil {
		return err
	}
	rss, err := measure.RSS(p.pid(), true)
	p.idleRSS = rss
	return err
}

// startBaseline starts the chain of apps, backend first: each frontend
// proxies to the next one towards the backend.
func (t *Target) startBaseline(ctx context.Context, d testbed.Deployment) (*arm, error) {
	ports, err := freePorts(d.Hops)
	if err != nil {
		return nil, err
	}
	a := &arm{urls: map[testbed.Path][]string{}, apps: map[string]string{}, procs: map[testbed.Path][]*process{}, byName: map[string]*process{}, warm: warmups{}}
	h2c := d.Protocol.HTTP2()
	var chain []*process // backend first
	for k := range d.Hops {
		name, listen := testbed.FrontendName(k), addr(ports[k])
		args := t.echoArgs(d, false)
		if k > 0 {
			args = []string{"proxy", "-name", name, "-upstream", "http://" + a.apps[testbed.FrontendName(k-1)]}
		}
		p, err := t.startApp(ctx, "baseline/"+name, args, h2c, listen)
		if err != nil {
			return nil, err
		}
		a.apps[name], a.byName[name] = listen, p
		chain = append(chain, p)
		path := testbed.Chain(k + 1)
		a.urls[path] = []string{"http://" + listen + "/"}
		a.procs[path] = reversed(chain)
	}
	return a, nil
}

func reversed(ps []*process) []*process {
	out := make([]*process, len(ps))
	for i, p := range ps {
		out[len(ps)-1-i] = p
	}
	return out
}

// identity issues (once per run) the workload's mTLS certificate.
func (t *Target) identity(name string) (pki.Identity, error) {
	if id, ok := t.ids[name]; ok {
		return id, nil
	}
	id, err := t.ca.Issue(name, t.dir)
	if err != nil {
		return pki.Identity{}, err
	}
	t.ids[name] = id
	return id, nil
}

// startMeshed starts the chain with a sidecar beside every app: each
// sidecar's inbound side takes mTLS from peers (and plain text too, when the
// loadgen is out of the mesh) and its outbound side carries its app's calls
// to the next workload's inbound side. In the mesh, each loadgen shard has
// its own sidecar with one outbound listener per path.
func (t *Target) startMeshed(ctx context.Context, d testbed.Deployment, m meshArm) (*arm, error) {
	a := &arm{urls: map[testbed.Path][]string{}, apps: map[string]string{}, procs: map[testbed.Path][]*process{}, byName: map[string]*process{}, warm: warmups{}}
	h2c := d.Protocol.HTTP2()
	inbound := map[string]string{}
	plain := map[string]string{}
	var chain []*process // backend's app and sidecar first
	for k := range d.Hops {
		name := testbed.FrontendName(k)
		ports, err := freePorts(4)
		if err != nil {
			return nil, err
		}
		app, in, out := addr(ports[0]), addr(ports[1]), addr(ports[2])
		args := t.echoArgs(d, true)
		if k > 0 {
			args = []string{"proxy", "-name", name, "-upstream", "http://" + out}
		}
		ap, err := t.startApp(ctx, string(m.arm)+"/"+name, args, h2c, app)
		if err != nil {
			return nil, err
		}
		spec, err := t.spec(name, d, m)
		if err != nil {
			return nil, err
		}
		spec.Inbound = &Inbound{Listen: in, App: app}
		if d.Placement == testbed.OutOfMesh {
			spec.Inbound.Plain, plain[name] = addr(ports[3]), addr(ports[3])
		}
		if k > 0 {
			next := testbed.FrontendName(k - 1)
			spec.Outbound = []Outbound{{Listen: out, Peer: inbound[next], ServerName: t.ids[next].ServerName()}}
		}
		sp, err := t.startSidecar(ctx, m, string(m.arm)+"/"+name+"-sidecar", spec)
		if err != nil {
			return nil, err
		}
		inbound[name], a.apps[name] = in, app
		a.byName[name], a.byName[name+"/sidecar"] = ap, sp
		chain = append(chain, ap, sp)
		a.procs[testbed.Chain(k+1)] = reversed(chain)
	}
	if d.Placement == testbed.OutOfMesh {
		for k := range d.Hops {
			a.urls[testbed.Chain(k+1)] = []string{"http://" + plain[testbed.FrontendName(k)] + "/"}
		}
		return a, nil
	}
	return a, t.startLoadgenSidecars(ctx, d, m, a, inbound)
}

// startLoadgenSidecars gives every loadgen shard its own outbound sidecar.
func (t *Target) startLoadgenSidecars(ctx context.Context, d testbed.Deployment, m meshArm, a *arm, inbound map[string]string) error {
	for i := range d.Loadgens {
		ports, err := freePorts(d.Hops)
		if err != nil {
			return err
		}
		spec, err := t.spec("loadgen", d, m)
		if err != nil {
			return err
		}
		spec.File += fmt.Sprintf("-%d", i+1)
		for k := range d.Hops {
			peer := testbed.FrontendName(k)
			spec.Outbound = append(spec.Outbound, Outbound{Listen: addr(ports[k]), Peer: inbound[peer], ServerName: t.ids[peer].ServerName()})
		}
		name := "loadgen-sidecar"
		if i > 0 {
			name = fmt.Sprintf("loadgen-%d-sidecar", i+1)
		}
		p, err := t.startSidecar(ctx, m, string(m.arm)+"/"+name, spec)
		if err != nil {
			return err
		}
		if i == 0 {
			a.byName["loadgen/sidecar"] = p
		}
		for k := range d.Hops {
			path := testbed.Chain(k + 1)
			a.urls[path] = append(a.urls[path], "http://"+addr(ports[k])+"/")
			a.procs[path] = append([]*process{p}, a.procs[path]...)
		}
	}
	return nil
}

// spec is a sidecar's identity and settings, without its listeners.
func (t *Target) spec(name string, d testbed.Deployment, m meshArm) (SidecarSpec, error) {
	id, err := t.identity(name)
	if err != nil {
		return SidecarSpec{}, err
	}
	return SidecarSpec{Name: name, Dir: t.dir, CertFile: id.CertFile, KeyFile: id.KeyFile, BundleFile: id.BundleFile,
		CAFile: t.caFile, H2C: d.Protocol.HTTP2(), Threads: d.Threads, File: string(m.arm) + "-" + name + "-" + tag(d), NoKeepAlive: m.spec.NoKeepAlive(),
		AccessLog: m.spec.AccessLog()}, nil
}

// withAdmin gives s an admin socket when the target profiles its
// sidecars and m's sidecar can serve pprof there.
func (t *Target) withAdmin(m meshArm, s SidecarSpec) SidecarSpec {
	if _, ok := plain(m.sc).(pprofEndpoint); ok && t.profiling() {
		s.Admin = t.adminSocket(s)
	}
	return s
}

func (t *Target) startSidecar(ctx context.Context, m meshArm, name string, s SidecarSpec) (*process, error) {
	s = t.withAdmin(m, s)
	data, file, err := m.sc.Config(s)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(t.dir, file)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return nil, fmt.Errorf("write %s sidecar config: %w", s.Name, err)
	}
	argv, env := m.sc.Command(m.bin, path, s)
	p, err := t.sup.start(name, measure.RoleSidecar, argv, env)
	if err != nil {
		return nil, err
	}
	// The sidecar shares its workload's pod: "meshed/backend-sidecar" sits
	// beside "meshed/backend"; the loadgen's sidecars beside the loadgen.
	p.pod, p.admin = strings.TrimSuffix(name, "-sidecar"), s.Admin
	if s.Name == "loadgen" {
		p.pod = "loadgen"
	}
	var addrs []string
	if s.Inbound != nil {
		addrs = append(addrs, s.Inbound.Listen)
		if s.Inbound.Plain != "" {
			addrs = append(addrs, s.Inbound.Plain)
		}
	}
	for _, o := range s.Outbound {
		addrs = append(addrs, o.Listen)
	}
	return p, t.ready(ctx, p, addrs...)
}
