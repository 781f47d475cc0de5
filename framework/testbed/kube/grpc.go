package kube

import (
	"cmp"
	"fmt"
	"strconv"

	"google.golang.org/grpc/codes"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/testbed"
)

// gRPC on a cluster: the backends are deployed for it
// (Options.Workloads.Protocol manifests.GRPC: the mbloadgen image serving
// fortio's gRPC ping on manifests.GRPCPort, and no frontend), so a run is
// one hop, loadgen → backend. The loadgen dials plain gRPC (grpc://) in
// the baseline and through a sidecar mesh's proxy; the meshed arm of a
// mesh whose data plane is the app's own (mesh.InApp, Istio's proxyless
// gRPC) dials the mesh's scheme (xds:///), its xDS client taking routes
// and mTLS from the control plane.

// Dial schemes of a gRPC run (testbed.Run.Dial).
const (
	// dialGRPC is plain gRPC: the baseline, and a sidecar mesh's arm.
	dialGRPC = "grpc"
)

// grpcDeployed reports whether the target's backends serve gRPC.
func (t *Target) grpcDeployed() bool { return t.o.Workloads.Protocol == manifests.GRPC }

// dialScheme is the scheme the loadgen of arm a dials a gRPC backend
// with: the meshed arm of a mesh.InApp its DialScheme, every other arm
// plain gRPC.
func (t *Target) dialScheme(a *arm) string {
	if !a.name.IsMeshed() {
		return dialGRPC
	}
	if in, ok := t.meshOf(a).(mesh.InApp); ok {
		return in.DialScheme()
	}
	return dialGRPC
}

// grpcURL is the gRPC target of arm a's backend dialled with scheme: its
// Service's FQDN and gRPC port, grpc://backend.NS.svc.cluster.local:8079,
// or for any other scheme (xds) scheme:///backend.NS.svc.cluster.local:8079,
// the name Istio gives the Service's listener and cluster.
func (a *arm) grpcURL(scheme string) string {
	host := fmt.Sprintf("%s.%s.svc.cluster.local:%d", manifests.Backend, a.ns, manifests.GRPCPort)
	if scheme == dialGRPC {
		return "grpc://" + host
	}
	return scheme + ":///" + host
}

// grpcPayload is the ping payload of a gRPC run of w, in bytes: fortio's
// ping server echoes it, so the request and the response are both that
// size. It is the response size, or the request size when only that is
// set (Supports refuses two different sizes).
func grpcPayload(w testbed.Workload) int {
	if w.ResponseSize > 0 {
		return w.ResponseSize
	}
	return w.RequestSize
}

// codes is fr's RetCodes as a load.Result counts them. fortio's HTTP codes
// are kept; for grpc, whose keys mbloadgen sends as gRPC status codes (0
// is OK), OK becomes 200 and status c load.GRPCCode(c), 1000+c, as the
// local target counts them, so that load.Failed counts every status but
// OK as failed; a negative key (fortio's socket error, -1) is kept.
func (fr *fortioResult) codes(proto load.Protocol) map[int]int64 {
	if proto != load.GRPC {
		return fr.RetCodes
	}
	out := make(map[int]int64, len(fr.RetCodes))
	for k, n := range fr.RetCodes {
		if k >= 0 {
			k = load.GRPCCode(codes.Code(k))
		}
		out[k] += n
	}
	return out
}

// protocolUnsupported says why the deployed backends cannot serve w's
// protocol: the backends serve HTTP or gRPC as deployed, and gRPC is one
// hop, with one payload size, without metadata.
func (t *Target) protocolUnsupported(w testbed.Workload) []string {
	say := func(p string) string { return t.o.Words.Say(testbed.SettingProtocol, p) }
	grpc := w.Protocol == load.GRPC
	switch {
	case grpc && !t.grpcDeployed():
		return []string{"protocol grpc: the backends were deployed for HTTP (nginx); gRPC needs the gRPC backend, deployed with " + say("grpc")}
	case !grpc && t.grpcDeployed():
		return []string{fmt.Sprintf("protocol %s: the backends were deployed for gRPC (%s); HTTP needs the nginx backends", w.Protocol, say("grpc"))}
	case !grpc:
		return nil
	}
	var why []string
	if w.Path.Hops() > 1 {
		why = append(why, fmt.Sprintf("Workload.Path %s with Workload.Protocol grpc: on clusters gRPC is one-hop only (there is no gRPC frontend)", w.Path))
	}
	if w.RequestSize > 0 && w.ResponseSize > 0 && w.RequestSize != w.ResponseSize {
		why = append(why, fmt.Sprintf("Workload.RequestSize %d with Workload.Protocol grpc: fortio's ping echoes its payload, so the request and the response are both %d bytes (ResponseSize); set RequestSize to 0 or to it",
			w.RequestSize, w.ResponseSize))
	}
	if len(w.Headers) > 0 {
		why = append(why, "Workload.Headers with Workload.Protocol grpc: the cluster loadgen's gRPC runs send no metadata")
	}
	return why
}

// grpcPlacementUnsupported says why a loadgen out of the mesh cannot
// drive a mesh whose data plane is in the app: it has no xDS client, and
// the mesh's servers take mTLS only.
func (t *Target) grpcPlacementUnsupported(w testbed.Workload) []string {
	if w.Protocol != load.GRPC || Placement(w.Placement) != OutOfMesh {
		return nil
	}
	if _, ok := t.o.Mesh.(mesh.InApp); !ok {
		return nil
	}
	return []string{fmt.Sprintf("out-of-mesh placement with grpc: the %s mesh's data plane is the app's own xDS client, which a loadgen outside the mesh does not have", t.o.Mesh.Name())}
}

// grpcEdge is the path proof of a gRPC run of a: the one hop, loadgen →
// backend. The gRPC backend keeps no request counter that nginx's
// stub_status would give, so the hop's requests are the loadgen's own
// count of the window's calls answered OK by the arm's backend (Service
// name and namespace in the dialled target); whether the hop was mTLS is
// the mesh's telemetry, as for HTTP (mtls, nil in the baseline).
func grpcEdge(a *arm, ok int64, mtls []mesh.Edge) []testbed.Edge {
	e := armEdge(a, string(manifests.Loadgen), string(manifests.Backend), ok, mtls)
	count := "requests: the loadgen's " + strconv.FormatInt(ok, 10) + " gRPC calls answered OK (the gRPC backend counts none)"
	if e.Evidence == "" {
		e.Evidence = count
	} else {
		e.Evidence += "; " + count
	}
	return []testbed.Edge{e}
}

// grpcConfig says, in the environment's configuration, what gRPC backends
// serve and how each arm's loadgen dials them ("dial.<arm>": grpc, or a
// proxyless mesh's xds); nothing for HTTP backends.
func (t *Target) grpcConfig(cfg map[string]string) {
	if !t.grpcDeployed() {
		return
	}
	cfg["protocols"] = fmt.Sprintf("grpc :%d (fortio's ping, one hop)", manifests.GRPCPort)
	cfg["responseSize"] = "per run: the ping's payload-size, echoed"
	cfg["backendImage"] = cmp.Or(t.o.Workloads.Images.Loadgen, manifests.DefaultImages.Loadgen)
	for name, a := range t.arms {
		cfg["dial."+string(name)] = t.dialScheme(a)
	}
}
