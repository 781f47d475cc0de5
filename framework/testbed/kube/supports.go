package kube

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/testbed"
)

var _ testbed.Supporter = (*Target)(nil)

// workload is what the target deployed: the defaults a scenario's
// workload is filled in from.
func (t *Target) workload() testbed.Workload {
	return testbed.Workload{
		ResponseSize: t.o.Workloads.ResponseSize,
		Placement:    testbed.Placement(t.o.Placement),
		Loadgens:     t.o.Loadgens,
	}
}

// Supports implements testbed.Supporter. The apps are deployed once, from
// the target's options, so a scenario that needs other apps is skipped with what to
// change; the loadgens are deployed where and as many as a scenario asks
// when it first runs.
func (t *Target) Supports(w testbed.Workload, f *testbed.Fault) error {
	def := t.workload()
	if err := w.Normalize(def); err != nil {
		return err
	}
	_ = def.Normalize(def)
	why := t.workloadUnsupported(w, def)
	why = append(why, t.placementUnsupported(w)...)
	why = append(why, t.grpcPlacementUnsupported(w)...)
	if f != nil {
		why = append(why, t.faultUnsupported(w, *f)...)
	}
	if len(why) > 0 {
		return errors.New(strings.Join(why, "; "))
	}
	return nil
}

// workloadUnsupported says what of w the deployed apps cannot serve.
func (t *Target) workloadUnsupported(w, def testbed.Workload) []string {
	var why []string
	if h := w.Path.Hops(); h > 2 {
		why = append(why, fmt.Sprintf("path %s: the cluster workloads have one frontend, so at most two hops", w.Path))
	}
	// A gRPC ping's payload is the client's, per run (grpcPayload).
	if w.ResponseSize != def.ResponseSize && w.Protocol != load.GRPC {
		why = append(why, fmt.Sprintf("payload %d B: the backends were deployed with %s", w.ResponseSize, t.o.Words.Say(testbed.SettingResponseSize, strconv.Itoa(def.ResponseSize))))
	}
	why = append(why, t.protocolUnsupported(w)...)
	if w.ServiceTime > 0 {
		why = append(why, fmt.Sprintf("service time %v: the nginx backend answers at once; a service time needs the mbapp backend image on this cluster", w.ServiceTime))
	}
	if w.Threads > 0 {
		why = append(why, fmt.Sprintf("threads=%d: proxy threads are the mesh's setting on a cluster", w.Threads))
	}
	if w.Replicas > 1 {
		why = append(why, fmt.Sprintf("replicas=%d: the cluster backends are deployed with one replica", w.Replicas))
	}
	if w.Flow != nil {
		why = append(why, "user flow: the cluster loadgen is fortio's REST API, which drives connections, not users with think time, and the nginx frontend does not fan out; run it on the local target")
	}
	return why
}

// placementUnsupported says why the loadgen cannot sit where w puts it:
// out of the bring-your-own sidecar mesh, the callee's sidecar takes
// HTTP/1.1 on its permissive port, which only the harness's own nginx
// configuration has.
func (t *Target) placementUnsupported(w testbed.Workload) []string {
	if Placement(w.Placement) != OutOfMesh || t.sidecar == nil {
		return nil
	}
	var why []string
	if len(t.sidecar.Args) > 0 {
		why = append(why, "out-of-mesh placement: the sidecar's own arguments replace the harness's nginx configuration, whose permissive port takes the plain requests of a loadgen outside the mesh")
	}
	if w.Protocol == load.H2 {
		why = append(why, "out-of-mesh placement in h2: the sidecar's permissive port takes HTTP/1.1 only")
	}
	return why
}

// faultUnsupported says why f cannot happen during a run of w.
func (t *Target) faultUnsupported(w testbed.Workload, f testbed.Fault) []string {
	var why []string
	if err := f.Check(); err != nil {
		why = append(why, err.Error())
	}
	switch {
	case f.Workload == "loadgen":
		why = append(why, "fault on the loadgen: on clusters faults hit only the backend's and the frontend's containers")
	case !slices.Contains(testbed.Workloads(w.Path), f.Workload):
		why = append(why, fmt.Sprintf("fault on %q: not on the %s path (%s)", f.Workload, w.Path, strings.Join(testbed.Workloads(w.Path), ", ")))
	}
	if f.Sidecar && t.sidecar == nil && len(t.o.Mesh.Roles().Sidecars) == 0 {
		why = append(why, fmt.Sprintf("fault on %s's sidecar: the %s mesh runs no sidecar; its node proxy is Fault.NodeProxy", f.Workload, t.o.Mesh.Name()))
	}
	if f.NodeProxy && len(t.o.Mesh.Roles().NodeProxies) == 0 {
		why = append(why, fmt.Sprintf("fault on the node proxy of %s: the %s mesh runs no per-node proxy (istio-ambient's ztunnel and cilium's agent and envoy are)", f.Workload, t.o.Mesh.Name()))
	}
	if t.faultWhyNot != "" {
		why = append(why, "fault "+f.String()+": "+t.faultWhyNot)
	}
	return why
}
