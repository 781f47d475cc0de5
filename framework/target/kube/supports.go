package kube

import (
	"errors"
	"fmt"
	"strings"

	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/target"
)

var _ target.Supporter = (*Target)(nil)

// workload is what the target deployed: the defaults a scenario's
// workload is filled in from.
func (t *Target) workload() target.Workload {
	return target.Workload{
		ResponseSize: t.o.Workloads.ResponseSize,
		Placement:    target.Placement(t.o.Placement),
		Loadgens:     t.o.Loadgens,
	}
}

// Supports implements target.Supporter. The cluster's workloads are
// deployed once, from the flags, so a scenario that needs another
// deployment is skipped with what to change.
func (t *Target) Supports(w target.Workload, f *target.Fault) error {
	def := t.workload()
	if err := w.Normalize(def); err != nil {
		return err
	}
	_ = def.Normalize(def)
	var why []string
	if h := w.Path.Hops(); h > 2 {
		why = append(why, fmt.Sprintf("path %s: the cluster workloads have one frontend, so at most two hops", w.Path))
	}
	if w.ResponseSize != def.ResponseSize {
		why = append(why, fmt.Sprintf("payload %d B: the backends were deployed with -payload=%d", w.ResponseSize, def.ResponseSize))
	}
	if w.Protocol == load.GRPC {
		why = append(why, "gRPC needs the mbapp backend image on this cluster")
	}
	if w.ServiceTime > 0 {
		why = append(why, fmt.Sprintf("service time %v: the nginx backend answers at once; a service time needs the mbapp backend image on this cluster", w.ServiceTime))
	}
	if w.Threads > 0 {
		why = append(why, fmt.Sprintf("threads=%d: proxy threads are the mesh's setting on a cluster", w.Threads))
	}
	if w.Replicas > 1 {
		why = append(why, fmt.Sprintf("replicas=%d: the cluster backends are deployed with one replica", w.Replicas))
	}
	if w.Placement != def.Placement || w.Loadgens != def.Loadgens {
		why = append(why, fmt.Sprintf("placement %s with %d loadgens: the loadgens were deployed %s with -loadgens=%d; run with -placement=%s -loadgens=%d",
			w.Placement, w.Loadgens, def.Placement, def.Loadgens, w.Placement, w.Loadgens))
	}
	if f != nil {
		why = append(why, fmt.Sprintf("fault %s: not implemented on clusters yet", f))
	}
	if w.Flow != nil {
		why = append(why, "user flow: the cluster loadgen is fortio's REST API, which drives connections, not users with think time, and the nginx frontend does not fan out; run it on the local target")
	}
	if len(why) > 0 {
		return errors.New(strings.Join(why, "; "))
	}
	return nil
}
