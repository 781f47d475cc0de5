package mesh

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/meshbench/meshbench/framework/testbed"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// Mesh is one service mesh, or none.
type Mesh interface {
	// Name is the adapter name: "none", "linkerd", "istio", "istio-ambient",
	// "istio-proxyless", "cilium" or "sidecar".
	Name() string
	// Detect reports whether the mesh is installed, its version and the
	// configuration that matters to a benchmark, proxy worker threads
	// included. When it is not installed, Info.Installed is false and the
	// error is a *NotInstalledError saying what was looked for.
	Detect(ctx context.Context, c kubernetes.Interface) (Info, error)
	// Enable labels or annotates the namespace so that pods created from
	// now on are meshed. Running pods keep what they have: call Restart.
	Enable(ctx context.Context, c kubernetes.Interface, namespace string) error
	// Roles names the mesh's containers and pods for CPU accounting.
	Roles() Roles
	// Verify checks the pods of namespace: with meshed, that every pod has
	// the mesh's data plane; without, that no pod has any mesh's. A failed
	// check returns the Verification together with a *VerifyError.
	Verify(ctx context.Context, c kubernetes.Interface, namespace string, meshed bool) (Verification, error)
}

// MTLSChecker is a mesh that can show, from its own telemetry or
// configuration, whether traffic between the workloads of a namespace is
// mutually authenticated and encrypted.
type MTLSChecker interface {
	MTLS(ctx context.Context, c kubernetes.Interface, namespace string) ([]Edge, error)
}

// InApp is a mesh whose data plane runs inside the application, as
// Istio's proxyless gRPC does: no proxy carries the traffic; the app's own
// gRPC client and server take their routes, clusters and mTLS certificates
// from the control plane over xDS. Its meshed arm's loadgen dials
// DialScheme (xds:///service:port) and its backends serve gRPC with xDS
// server credentials; the baseline arm runs the same binaries speaking
// plain gRPC. Every figure of such a mesh is the app's xDS client and
// server, never a proxy's: reports say so.
type InApp interface {
	Mesh
	// DialScheme is the gRPC target scheme of the meshed arm: "xds".
	DialScheme() string
}

// Injector is a mesh that edits the meshed arm's pod templates before they
// are created: the bring-your-own sidecar adds its proxy; Istio makes its
// sidecar's resources and Envoy threads explicit.
type Injector interface {
	Inject(t *corev1.PodTemplateSpec) error
}

// Edge is one observed source→destination pair: the harness's edge, with
// Src and Dst as "namespace/workload" (Src "unknown" when the telemetry
// cannot name the client), Secured true when every observation of the pair
// was mTLS, and Evidence the telemetry the verdict rests on. Print edges
// with testbed.PrintEdges.
type Edge = testbed.Edge

// Info is what Detect found.
type Info struct {
	// Mesh is the adapter's name, e.g. "istio".
	Mesh string `json:"mesh"`
	// Installed says the mesh was found on the cluster.
	Installed bool `json:"installed"`
	// Version is the control plane's (or agent's) version, from its
	// configuration or image tag.
	Version string `json:"version,omitempty"`
	// Namespace is where the control plane runs.
	Namespace string `json:"namespace,omitempty"`
	// Components are the control-plane and per-node workloads found.
	Components []Component `json:"components,omitempty"`
	// Config holds the settings that change what a benchmark measures,
	// flattened to "key": "value".
	Config map[string]string `json:"config,omitempty"`
	// Threads is the proxies' worker-thread setting.
	Threads Threads `json:"threads"`
}

// Component is one workload of the mesh.
type Component struct {
	// Kind is the workload's kind, e.g. "Deployment" or "DaemonSet".
	Kind string `json:"kind"`
	// Namespace is the workload's namespace.
	Namespace string `json:"namespace"`
	// Name is the workload's name.
	Name string `json:"name"`
	// Image is the image of the workload's mesh container.
	Image string `json:"image"`
}

// Threads is a proxy's worker-thread setting, as configured.
type Threads struct {
	// N is the fixed number of worker threads; 0 when not fixed.
	N int `json:"n,omitempty"`
	// Mode is "fixed", "all-cores", "auto" (the proxy sizes itself, see
	// Source) or "unknown".
	Mode string `json:"mode"`
	// Source says where the setting was read.
	Source string `json:"source"`
}

// String is the setting and where it was read, e.g. "2 (ztunnel
// ZTUNNEL_WORKER_THREADS)" or "auto (…)".
func (t Threads) String() string {
	if t.Mode == "fixed" {
		return fmt.Sprintf("%d (%s)", t.N, t.Source)
	}
	return t.Mode + " (" + t.Source + ")"
}

// Roles names what the mesh runs, for CPU accounting. When a container
// matches more than one field, the first of ControlPlane, NodeProxies,
// Waypoints, Sidecars wins: a control-plane pod's own proxy is control plane.
type Roles struct {
	// Sidecars are proxy container names injected into workload pods.
	Sidecars []string `json:"sidecars,omitempty"`
	// NodeProxies are per-node data-plane daemons (ztunnel, cilium-agent,
	// cilium-envoy).
	NodeProxies []Workload `json:"nodeProxies,omitempty"`
	// Waypoints are per-namespace L7 proxies (Istio ambient).
	Waypoints []Workload `json:"waypoints,omitempty"`
	// ControlPlane are the mesh's control-plane pods.
	ControlPlane []Workload `json:"controlPlane,omitempty"`
}

// Workload selects pods by namespace and labels. Empty fields match all.
type Workload struct {
	// Namespace is the pods' namespace; "" matches every namespace.
	Namespace string `json:"namespace,omitempty"`
	// Labels must all be on the pod, with these values.
	Labels map[string]string `json:"labels"`
	// Container limits the match to one container; "" means every container.
	Container string `json:"container,omitempty"`
}

// Matches reports whether the workload selects container of pod p.
func (w Workload) Matches(p *corev1.Pod, container string) bool {
	if w.Namespace != "" && w.Namespace != p.Namespace {
		return false
	}
	if w.Container != "" && w.Container != container {
		return false
	}
	for k, v := range w.Labels {
		if p.Labels[k] != v {
			return false
		}
	}
	return true
}

// Verification is what Verify saw.
type Verification struct {
	// Mesh is the adapter's name.
	Mesh string `json:"mesh"`
	// Namespace is the namespace verified.
	Namespace string `json:"namespace"`
	// Meshed says the namespace is the meshed arm's, whose pods must have
	// the mesh's proxies; the baseline's must have none.
	Meshed bool `json:"meshed"`
	// Pods are the namespace's pods, as checked.
	Pods []PodCheck `json:"pods"`
	// Notes are caveats that do not fail the check but must be reported.
	Notes []string `json:"notes,omitempty"`
}

// PodCheck is one pod as Verify saw it.
type PodCheck struct {
	// Pod is the pod's name.
	Pod string `json:"pod"`
	// Node is the node the pod runs on.
	Node string `json:"node,omitempty"`
	// Proxies are the mesh proxy containers found in the pod (containers
	// and native-sidecar init containers).
	Proxies []string `json:"proxies,omitempty"`
	// Threads is read from the proxy container, when it has one.
	Threads *Threads `json:"threads,omitempty"`
	// Revision is the control-plane revision that injected the pod's
	// proxy, when the mesh has revisions (Istio's istio.io/rev).
	Revision string `json:"revision,omitempty"`
}

// VerifyError is a failed Verify: each problem names a pod or the namespace
// and what is wrong.
type VerifyError struct {
	// Mesh is the adapter's name.
	Mesh string
	// Namespace is the namespace that failed.
	Namespace string
	// Meshed says it is the meshed arm's.
	Meshed bool
	// Problems are what is wrong, one line each.
	Problems []string
}

// Error names the mesh, the arm and namespace, and every problem.
func (e *VerifyError) Error() string {
	arm := "baseline"
	if e.Meshed {
		arm = "meshed"
	}
	return fmt.Sprintf("%s: %s namespace %q failed verification: %s", e.Mesh, arm, e.Namespace, strings.Join(e.Problems, "; "))
}

// withProblems adds problems to err, the VerifyError (or nil) of the
// namespace v verified.
func withProblems(err error, v *Verification, problems []string) error {
	if len(problems) == 0 {
		return err
	}
	var ve *VerifyError
	if errors.As(err, &ve) {
		ve.Problems = append(ve.Problems, problems...)
		return err
	}
	ve = &VerifyError{Mesh: v.Mesh, Namespace: v.Namespace, Meshed: v.Meshed, Problems: problems}
	if err == nil {
		return ve
	}
	return errors.Join(err, ve)
}

// NotInstalledError says a mesh was not found and what was looked for.
type NotInstalledError struct {
	// Mesh is the adapter's name.
	Mesh string
	// Looked says what was looked for and not found, e.g. "no Deployment
	// labelled app=istiod in istio-system".
	Looked string
}

// Error says the mesh is not installed and what was looked for.
func (e *NotInstalledError) Error() string {
	return fmt.Sprintf("%s is not installed: %s", e.Mesh, e.Looked)
}

// Option configures an adapter.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	// namespace is the control-plane namespace; "" means the mesh's default
	// (each constructor fills it in with cmp.Or).
	namespace string
	// revision is an Istio revision (istio.io/rev); "" means the default
	// injector (istio-injection=enabled).
	revision string
	// waypoint is the name of an ambient waypoint; "" means none.
	waypoint string
	// sidecarName is the bring-your-own proxy container name.
	sidecarName string
	// sidecarImage and sidecarArgs describe the bring-your-own proxy.
	sidecarImage string
	sidecarArgs  []string
	// evidence supplies the bring-your-own proxy's mTLS evidence.
	evidence EvidenceFunc
	// sidecarConcurrency and sidecarCPULimit are the Istio sidecar's
	// Envoy workers (nil: 2) and CPU limit ("": none).
	sidecarConcurrency *int
	sidecarCPULimit    string
	// gatewayAPICRDs is a directory of Gateway API CRDs ("": the module's).
	gatewayAPICRDs string
	// encryption is Cilium's transparent encryption: "ipsec" (default) or
	// "wireguard".
	encryption string
	// words say the settings the adapters' notes name (nil: in Go).
	words testbed.Words
}

// EvidenceFunc returns the mTLS edges of a namespace, for a mesh whose proxy
// meshbench does not know how to read (the bring-your-own sidecar).
type EvidenceFunc func(ctx context.Context, c kubernetes.Interface, namespace string) ([]Edge, error)

// WithNamespace sets the control-plane namespace (default: linkerd for
// linkerd, istio-system for Istio, kube-system for Cilium).
func WithNamespace(ns string) Option { return optionFunc(func(c *config) { c.namespace = ns }) }

// WithRevision makes the istio adapter inject with revision rev
// (istio.io/rev=rev) instead of istio-injection=enabled.
func WithRevision(rev string) Option { return optionFunc(func(c *config) { c.revision = rev }) }

// WithWaypoint makes the istio-ambient adapter route the namespace through
// the waypoint named name (istio.io/use-waypoint). The waypoint Gateway
// (class istio-waypoint) must exist in the namespace.
func WithWaypoint(name string) Option { return optionFunc(func(c *config) { c.waypoint = name }) }

// WithSidecarConcurrency sets the Envoy worker threads of every Istio
// sidecar of the meshed arm (proxy.istio.io/config concurrency). Default 2,
// what a default Istio install runs; 0 is one worker per core of the node.
func WithSidecarConcurrency(n int) Option {
	return optionFunc(func(c *config) { c.sidecarConcurrency = &n })
}

// WithSidecarCPULimit sets the CPU limit of every Istio sidecar of the
// meshed arm (sidecar.istio.io/proxyCPULimit, a quantity such as "2").
// Default none: a limit can throttle the proxy, and the run then measures
// the limit.
func WithSidecarCPULimit(q string) Option {
	return optionFunc(func(c *config) { c.sidecarCPULimit = q })
}

// WithSidecar sets the bring-your-own proxy container's name (default
// mb-sidecar), image and arguments.
func WithSidecar(name, image string, args ...string) Option {
	return optionFunc(func(c *config) { c.sidecarName, c.sidecarImage, c.sidecarArgs = name, image, args })
}

// WithMTLSEvidence supplies the bring-your-own proxy's mTLS evidence.
func WithMTLSEvidence(f EvidenceFunc) Option { return optionFunc(func(c *config) { c.evidence = f }) }

// WithEncryption sets the transparent encryption the cilium adapter
// installs: "ipsec" (the default: it needs only the kernel's XFRM) or
// "wireguard" (it needs the kernel's WireGuard module).
func WithEncryption(kind string) Option { return optionFunc(func(c *config) { c.encryption = kind }) }

// WithWords say the settings an adapter's notes name (e.g.
// testbed.SettingCiliumEncryption) as the user wrote them. Default: their
// names in Go.
func WithWords(w testbed.Words) Option { return optionFunc(func(c *config) { c.words = w }) }

// Names lists the registered adapters, in a stable order (their Rank,
// then their name).
func Names() []string {
	var out []string
	for _, a := range adapters() {
		out = append(out, a.Name)
	}
	return out
}

// New returns the adapter registered as name.
func New(name string, opts ...Option) (Mesh, error) {
	var cfg config
	for _, o := range opts {
		o.apply(&cfg)
	}
	a, ok := lookup(name)
	if !ok {
		return nil, fmt.Errorf("unknown mesh %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	return a.New(cfg), nil
}

// Restart restarts the Deployments, StatefulSets and DaemonSets of namespace
// the way `kubectl rollout restart` does, so that their pods are recreated
// with (or without) the mesh.
func Restart(ctx context.Context, c kubernetes.Interface, namespace string, at time.Time) error {
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{"kubectl.kubernetes.io/restartedAt": at.UTC().Format(time.RFC3339)}}}}})
	apps := c.AppsV1()
	ds, err := apps.Deployments(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list deployments in %s: %w", namespace, err)
	}
	for _, d := range ds.Items {
		if _, err := apps.Deployments(namespace).Patch(ctx, d.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("restart deployment %s/%s: %w", namespace, d.Name, err)
		}
	}
	ss, err := apps.StatefulSets(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list statefulsets in %s: %w", namespace, err)
	}
	for _, s := range ss.Items {
		if _, err := apps.StatefulSets(namespace).Patch(ctx, s.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("restart statefulset %s/%s: %w", namespace, s.Name, err)
		}
	}
	dss, err := apps.DaemonSets(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list daemonsets in %s: %w", namespace, err)
	}
	for _, d := range dss.Items {
		if _, err := apps.DaemonSets(namespace).Patch(ctx, d.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("restart daemonset %s/%s: %w", namespace, d.Name, err)
		}
	}
	return nil
}

// setNamespaceMeta merge-patches a namespace's labels and annotations; a nil
// value removes the key.
func setNamespaceMeta(ctx context.Context, c kubernetes.Interface, ns string, labels, annotations map[string]*string) error {
	meta := map[string]any{}
	if len(labels) > 0 {
		meta["labels"] = labels
	}
	if len(annotations) > 0 {
		meta["annotations"] = annotations
	}
	patch, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return err
	}
	if _, err := c.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("label namespace %s: %w", ns, err)
	}
	return nil
}

func ptr(s string) *string { return &s }

// livePods lists the pods of namespace that are meant to be running:
// pods that are being deleted or have finished are left out.
func livePods(ctx context.Context, c kubernetes.Interface, namespace, selector string) ([]corev1.Pod, error) {
	l, err := c.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("list pods in %s: %w", namespace, err)
	}
	var out []corev1.Pod
	for _, p := range l.Items {
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// proxyContainer returns the named container of p, whether a regular
// container or a native sidecar (an init container with restartPolicy
// Always, as Linkerd and Istio inject by default on recent Kubernetes).
func proxyContainer(p *corev1.Pod, name string) (*corev1.Container, bool) {
	for i := range p.Spec.Containers {
		if p.Spec.Containers[i].Name == name {
			return &p.Spec.Containers[i], true
		}
	}
	for i := range p.Spec.InitContainers {
		ic := &p.Spec.InitContainers[i]
		if ic.Name == name && ic.RestartPolicy != nil && *ic.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			return ic, true
		}
	}
	return nil, false
}

func envValue(c *corev1.Container, name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name && e.ValueFrom == nil {
			return e.Value, true
		}
	}
	return "", false
}

// verifyBaseline checks that no pod of namespace runs any mesh's data plane
// and that the namespace is not marked for injection.
func verifyBaseline(ctx context.Context, c kubernetes.Interface, mesh, namespace string, extraProxies ...string) (Verification, error) {
	v := Verification{Mesh: mesh, Namespace: namespace}
	ns, err := c.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
	if err != nil {
		return v, fmt.Errorf("get namespace %s: %w", namespace, err)
	}
	var problems []string
	for _, m := range injectionMarks() {
		src := ns.Labels
		if m.Annotation {
			src = ns.Annotations
		}
		if got, ok := src[m.Key]; ok && (m.Value == "" || got == m.Value) {
			problems = append(problems, fmt.Sprintf("the namespace has %s %s=%s, so new pods would be meshed", m.kind(), m.Key, got))
		}
	}
	pods, err := livePods(ctx, c, namespace, "")
	if err != nil {
		return v, err
	}
	if len(pods) == 0 {
		problems = append(problems, "no running pods to verify")
	}
	proxies := append(knownProxies(), extraProxies...)
	for i := range pods {
		p := &pods[i]
		pc := PodCheck{Pod: p.Name, Node: p.Spec.NodeName}
		for _, name := range proxies {
			if _, ok := proxyContainer(p, name); ok {
				pc.Proxies = append(pc.Proxies, name)
				problems = append(problems, fmt.Sprintf("pod %s has proxy container %q; the baseline must run without a mesh", p.Name, name))
			}
		}
		if p.Annotations[ambientRedirection] == "enabled" {
			problems = append(problems, fmt.Sprintf("pod %s is captured by ztunnel (%s=enabled); the baseline must run without a mesh", p.Name, ambientRedirection))
		}
		v.Pods = append(v.Pods, pc)
	}
	if len(problems) > 0 {
		return v, &VerifyError{Mesh: mesh, Namespace: namespace, Problems: problems}
	}
	return v, nil
}

// verifySidecars checks that every pod of namespace has the proxy container
// and is not opted out, and reads each proxy's worker threads.
func verifySidecars(ctx context.Context, c kubernetes.Interface, mesh, namespace, proxy, hint string, optOut map[string]string,
	threads func(*corev1.Pod, *corev1.Container) Threads) (Verification, error) {
	v := Verification{Mesh: mesh, Namespace: namespace, Meshed: true}
	pods, err := livePods(ctx, c, namespace, "")
	if err != nil {
		return v, err
	}
	var problems []string
	if len(pods) == 0 {
		problems = append(problems, "no running pods to verify")
	}
	for i := range pods {
		p := &pods[i]
		pc := PodCheck{Pod: p.Name, Node: p.Spec.NodeName}
		for k, val := range optOut {
			if p.Annotations[k] == val || p.Labels[k] == val {
				problems = append(problems, fmt.Sprintf("pod %s opts out of injection with %s=%s", p.Name, k, val))
			}
		}
		ctr, ok := proxyContainer(p, proxy)
		if !ok {
			problems = append(problems, fmt.Sprintf("pod %s has no %q container: injection did not happen (%s)", p.Name, proxy, hint))
			v.Pods = append(v.Pods, pc)
			continue
		}
		pc.Proxies = []string{proxy}
		if threads != nil {
			t := threads(p, ctr)
			pc.Threads = &t
		}
		if st, ok := containerStatus(p, proxy); ok && !st.Ready {
			problems = append(problems, fmt.Sprintf("pod %s: proxy %q is not ready", p.Name, proxy))
		}
		v.Pods = append(v.Pods, pc)
	}
	if len(problems) > 0 {
		return v, &VerifyError{Mesh: mesh, Namespace: namespace, Meshed: true, Problems: problems}
	}
	return v, nil
}

func containerStatus(p *corev1.Pod, name string) (corev1.ContainerStatus, bool) {
	for _, s := range append(append([]corev1.ContainerStatus{}, p.Status.ContainerStatuses...), p.Status.InitContainerStatuses...) {
		if s.Name == name {
			return s, true
		}
	}
	return corev1.ContainerStatus{}, false
}

// nodesWith returns the nodes on which a ready (or, without status, any) pod
// selected by selector in namespace runs.
func nodesWith(ctx context.Context, c kubernetes.Interface, namespace, selector string) (map[string]bool, error) {
	pods, err := livePods(ctx, c, namespace, selector)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, p := range pods {
		if p.Spec.NodeName == "" {
			continue
		}
		if len(p.Status.Conditions) > 0 && !podReady(&p) {
			continue
		}
		out[p.Spec.NodeName] = true
	}
	return out, nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// imageTag returns the tag of an image reference, without any digest or
// variant suffix (-distroless, -debug).
func imageTag(image string) string {
	if i := strings.Index(image, "@"); i >= 0 {
		image = image[:i]
	}
	i := strings.LastIndex(image, ":")
	if i < 0 || strings.Contains(image[i:], "/") {
		return ""
	}
	tag := image[i+1:]
	for _, suffix := range []string{"-distroless", "-debug"} {
		tag = strings.TrimSuffix(tag, suffix)
	}
	return tag
}

func notFound(err error) bool { return apierrors.IsNotFound(err) }

func asVerifyError(err error, target **VerifyError) bool { return errors.As(err, target) }

// Interface checks: which adapters meet which requirement.
var (
	_ MTLSChecker = (*linkerd)(nil)
	_ MTLSChecker = (*istio)(nil)
	_ MTLSChecker = (*ambient)(nil)
	_ MTLSChecker = (*cilium)(nil)
	_ MTLSChecker = (*sidecar)(nil)
	_ Injector    = (*sidecar)(nil)
	_ Injector    = (*istio)(nil)
	_ Cleaner     = (*ambient)(nil)
)
