package mesh

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	mbload "github.com/meshbench/meshbench/framework/load"
)

// Propagator is a mesh whose routing a run can change, and whose clients'
// use of the change a loadgen's route probe sees (mbload.RouteProbePath):
// Istio proxyless gRPC, whose xDS client is the loadgen's own. A run
// measures config propagation with it, as ClusterLoader2 and Istio's
// pilot-load measure a control plane, and counts the proxies its control
// plane serves.
type Propagator interface {
	// SetProbeFault makes the route to host (a Service's FQDN) from
	// namespace abort the requests that carry mbload.RouteProbeHeader with
	// mbload.RouteProbeAbortCode (on), or route them as any other (off).
	// Requests without the header are routed as before either way. The
	// first call creates the rule, later calls change it; Cleanup removes
	// it.
	SetProbeFault(ctx context.Context, c kubernetes.Interface, namespace, host string, on bool) error
	// ProbeChange says what SetProbeFault changes, for the record.
	ProbeChange() string
	// IdleProxy makes t, an injected pod's template, an idle proxy's
	// that asks the scheduler for next to nothing: a run adds such pods
	// to count the control plane's cost per proxy at a second pod count.
	IdleProxy(t *corev1.PodTemplateSpec)
	// ConnectedProxies counts the xDS clients connected to the mesh's
	// control plane (for Istio, istiod's pilot_xds, summed over the
	// revision's istiod pods).
	ConnectedProxies(ctx context.Context, c kubernetes.Interface) (int, error)
}

// propagationRule names the VirtualService SetProbeFault applies.
const propagationRule = "meshbench-propagation"

// probeFaultOff is the header value the rule matches while off: no probe
// sends it, so the rule then matches nothing.
const probeFaultOff = "off"

// ProbeChange implements Propagator.
func (p *proxyless) ProbeChange() string {
	return fmt.Sprintf("VirtualService %s: a rule matching header %s: %s that aborts with gRPC %s, switched on and off (its match's value set to %q or %q)",
		propagationRule, mbload.RouteProbeHeader, mbload.RouteProbeHeaderValue, grpcStatusName(mbload.RouteProbeAbortCode), mbload.RouteProbeHeaderValue, probeFaultOff)
}

// probeRule is the VirtualService of SetProbeFault: its first route
// aborts the probe's requests while on, its second routes everything.
func probeRule(host string, on bool) policy {
	value := probeFaultOff
	if on {
		value = mbload.RouteProbeHeaderValue
	}
	dest := []map[string]any{{"destination": map[string]any{"host": host}}}
	return policy{APIVersion: "networking.istio.io/v1", Resource: "virtualservices", Kind: "VirtualService", Name: propagationRule,
		Spec: map[string]any{"hosts": []string{host}, "exportTo": []string{"."}, "http": []map[string]any{{
			"name":  "meshbench-probe",
			"match": []map[string]any{{"headers": map[string]any{mbload.RouteProbeHeader: map[string]string{"exact": value}}}},
			"fault": map[string]any{"abort": map[string]any{"grpcStatus": grpcStatusName(mbload.RouteProbeAbortCode),
				"percentage": map[string]float64{"value": 100}}},
			"route": dest,
		}, {"name": "meshbench-default", "route": dest}}}}
}

// grpcStatusName is c as Istio's VirtualService names gRPC statuses:
// DATA_LOSS for codes.DataLoss.
func grpcStatusName(c fmt.Stringer) string {
	var b strings.Builder
	prev := ' '
	for _, r := range c.String() {
		if unicode.IsUpper(r) && unicode.IsLower(prev) {
			b.WriteByte('_')
		}
		b.WriteRune(r)
		prev = r
	}
	return strings.ToUpper(b.String())
}

// SetProbeFault implements Propagator: it creates the VirtualService
// meshbench-propagation for host in namespace, labelled as meshbench's
// (one of that name not applied by this run is refused), and after that
// patches its rule's match.
func (p *proxyless) SetProbeFault(ctx context.Context, c kubernetes.Interface, namespace, host string, on bool) error {
	rc, err := restOf(c)
	if err != nil {
		return fmt.Errorf("%s: the propagation rule: %w", proxylessName, err)
	}
	o := probeRule(host, on)
	a := appliedObject{path: o.path(namespace), name: o.Name}
	if !slices.Contains(p.applied, a) {
		return p.apply(ctx, rc, namespace, o)
	}
	body, err := json.Marshal(map[string]any{"spec": o.Spec})
	if err != nil {
		return fmt.Errorf("%s: VirtualService %s/%s: %w", proxylessName, namespace, o.Name, err)
	}
	err = rc.Patch(types.MergePatchType).AbsPath(a.path, a.name).Body(body).Do(ctx).Error()
	if err != nil {
		return fmt.Errorf("%s: patch VirtualService %s/%s (on=%t): %w", proxylessName, namespace, o.Name, on, err)
	}
	return nil
}

// IdleProxy implements Propagator: the injected istio-proxy (pilot-agent)
// asks for 1 millicore and 16 MiB (the injector's sidecar.istio.io
// resource annotations; by default it asks for 100m and 128Mi), so that
// a 2-core kind cluster schedules the idle pods beside the arms.
func (p *proxyless) IdleProxy(t *corev1.PodTemplateSpec) {
	if t.Annotations == nil {
		t.Annotations = map[string]string{}
	}
	t.Annotations["sidecar.istio.io/proxyCPU"] = "1m"
	t.Annotations["sidecar.istio.io/proxyMemory"] = "16Mi"
}

// ConnectedProxies implements Propagator: the sum of pilot_xds (the xDS
// connections istiod serves) over the revision's istiod pods, read from
// their monitoring port through the API server's pod proxy.
func (p *proxyless) ConnectedProxies(ctx context.Context, c kubernetes.Interface) (int, error) {
	sel := "app=istiod"
	if p.rev != "" {
		sel += "," + istioRev + "=" + p.rev
	}
	pods, err := livePods(ctx, c, p.ns, sel)
	if err != nil {
		return 0, fmt.Errorf("%s: connected proxies: %w", proxylessName, err)
	}
	if len(pods) == 0 {
		return 0, fmt.Errorf("%s: connected proxies: no istiod pod labelled %s in %s", proxylessName, sel, p.ns)
	}
	total := 0.0
	var errs []error
	for i := range pods {
		body, err := scrape(ctx, c, &pods[i], istiodMonitoringPort, "metrics")
		if err == nil {
			var n float64
			n, err = sumPilotXDS(body)
			total += n
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("istiod pod %s: %w", pods[i].Name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return 0, fmt.Errorf("%s: connected proxies: %w", proxylessName, err)
	}
	return int(math.Round(total)), nil
}

// sumPilotXDS sums the pilot_xds series (one per client version) of an
// istiod's metrics.
func sumPilotXDS(body []byte) (float64, error) {
	ss, err := readSeries(bytes.NewReader(body), "pilot_xds")
	if err != nil {
		return 0, err
	}
	if len(ss) == 0 {
		return 0, errors.New("no pilot_xds in its metrics")
	}
	total := 0.0
	for _, s := range ss {
		total += s.value
	}
	return total, nil
}

// Propagators lists the registered adapters that implement Propagator,
// in Names' order.
func Propagators() []string {
	var out []string
	for _, a := range adapters() {
		if _, ok := a.New(config{}).(Propagator); ok {
			out = append(out, a.Name)
		}
	}
	return out
}
