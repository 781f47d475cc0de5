// Package meshinstall installs a mesh from its Helm charts (when a run
// asks for it: kube.Options.InstallMesh) and uninstalls it, watching the releases' pods: the charts of a mesh
// that is missing, a revision beside an installed one, and a mesh that is
// the cluster's CNI.
package meshinstall

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/release"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/meshbench/meshbench/framework/internal/kubewait"
	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/testbed"
)

// Installed is one Helm release the run installed: what Helm was asked for
// and the chart it loaded (a local chart directory may hold another version
// than the one asked for).
type Installed struct {
	mesh.Chart
	// Loaded is the loaded chart's name and version, from its Chart.yaml.
	Loaded string `json:"loaded"`
	// From is the chart's path when it came from a local directory.
	From string `json:"from,omitempty"`
}

// Helm installs and uninstalls a mesh's charts with Helm's Go SDK (no
// helm binary), watching the releases' pods so that an image that cannot
// be pulled or a crashing control plane stops the install within seconds
// instead of at a timeout. It is not safe for concurrent use.
type Helm struct {
	cfg *rest.Config
	c   kubernetes.Interface
	// chartDir, when set, is searched for the charts (by the name in their
	// Chart.yaml, or <name>-<version>.tgz) instead of their repositories.
	chartDir string
	timeout  time.Duration
	grace    time.Duration
	logf     func(string, ...any)
	words    testbed.Words

	installed []Installed
	createdNS []string
	// kept are the objects of each release that Helm leaves on uninstall.
	kept map[string][]object
}

// HelmOptions says where Helm finds the charts and how long it waits.
type HelmOptions struct {
	// ChartDir, when set, is searched for the charts (by the name in their
	// Chart.yaml, or <name>-<version>.tgz) instead of their repositories.
	ChartDir string
	// Timeout bounds each release's install and rollout, and each
	// uninstall.
	Timeout time.Duration
	// Grace is how long a release's pod may stay unschedulable before the
	// install fails.
	Grace time.Duration
	// Logf receives one line per step.
	Logf func(string, ...any)
	// Words say the settings the errors advise (e.g.
	// testbed.SettingMeshCharts) as the user wrote them. Default nil:
	// their names in Go.
	Words testbed.Words
}

// NewHelm returns an installer that installs into the cluster of cfg,
// whose client is c.
func NewHelm(cfg *rest.Config, c kubernetes.Interface, o HelmOptions) *Helm {
	return &Helm{cfg: cfg, c: c, chartDir: o.ChartDir, timeout: o.Timeout, grace: o.Grace, logf: o.Logf, words: o.Words}
}

// Installed lists the Helm releases h installed and will uninstall.
func (h *Helm) Installed() []Installed { return append([]Installed(nil), h.installed...) }

// Namespaces lists the namespaces h created and will delete on Uninstall.
func (h *Helm) Namespaces() []string { return append([]string(nil), h.createdNS...) }

// Install installs charts in order and waits for each release's
// Deployments, DaemonSets and StatefulSets to be rolled out. Every release
// that was created, even one whose workloads then failed, is remembered for
// uninstall.
func (h *Helm) Install(ctx context.Context, charts []mesh.Chart) error {
	for _, ch := range charts {
		if err := h.installChart(ctx, ch); err != nil {
			return err
		}
	}
	return nil
}

// installChart installs one chart in its namespace (created if missing),
// waits for its workloads to be rolled out, and logs how long it took.
func (h *Helm) installChart(ctx context.Context, ch mesh.Chart) error {
	start := time.Now()
	if err := h.ensureNamespace(ctx, ch.Namespace); err != nil {
		return err
	}
	loaded, from, err := h.load(ch)
	if err != nil {
		return err
	}
	got := loaded.Metadata.Name + " " + loaded.Metadata.Version
	desc, err := h.announce(ch, loaded, got, from)
	if err != nil {
		return err
	}
	rel, err := h.runInstall(ctx, ch, loaded, Installed{Chart: ch, Loaded: got, From: from}, desc)
	if err != nil {
		return err
	}
	if err := h.rollout(ctx, ch, rel.Manifest); err != nil {
		return fmt.Errorf("helm install %s: %w", desc, err)
	}
	h.logf("kube target: helm: %s ready in %.1fs", ch.Release, time.Since(start).Seconds())
	return nil
}

// announce checks the loaded chart (got: its name and version; from: its
// local path, if any) against the one asked for (see pinChart), and logs
// what is installed with its values. It returns the description that the
// install's errors name.
func (h *Helm) announce(ch mesh.Chart, loaded *chart.Chart, got, from string) (string, error) {
	note, err := pinChart(ch, loaded, from, h.words)
	if err != nil {
		return "", fmt.Errorf("helm install %s/%s: %w", ch.Namespace, ch.Release, err)
	}
	if note != "" {
		h.logf("kube target: helm: %s: %s", ch.Release, note)
	}
	desc := ch.String()
	if from != "" {
		desc = fmt.Sprintf("%s/%s (%s from %s)", ch.Namespace, ch.Release, got, from)
	}
	h.logf("kube target: helm: installing %s", desc)
	for _, kv := range mesh.FlattenValues(ch.Values) {
		h.logf("kube target: helm:   %s", kv)
	}
	return desc, nil
}

// runInstall runs Helm's install of loaded as ch's release, and remembers
// it as inst for uninstall, with the objects Helm keeps, whenever it may
// have created something. desc names the release in errors.
func (h *Helm) runInstall(ctx context.Context, ch mesh.Chart, loaded *chart.Chart, inst Installed, desc string) (*release.Release, error) {
	cfg, err := h.config(ch.Namespace)
	if err != nil {
		return nil, err
	}
	in := action.NewInstall(cfg)
	in.ReleaseName, in.Namespace, in.Timeout = ch.Release, ch.Namespace, h.timeout
	rel, err := in.RunWithContext(ctx, loaded, ch.Values)
	if rel != nil || err == nil || !strings.Contains(err.Error(), "cannot re-use a name") {
		// A failed install may still have created objects: uninstall it too.
		h.installed = append(h.installed, inst)
	}
	if rel != nil {
		if perr := h.rememberKept(ch.Release, rel.Manifest); perr != nil {
			return nil, fmt.Errorf("helm install %s: %w", desc, perr)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("helm install %s: %w", desc, err)
	}
	return rel, nil
}

// rememberKept records the objects of the release's manifest that Helm
// keeps on uninstall, for deleteKept.
func (h *Helm) rememberKept(name, manifest string) error {
	objs, err := manifestObjects(manifest)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if o.Keep {
			if h.kept == nil {
				h.kept = map[string][]object{}
			}
			h.kept[name] = append(h.kept[name], o)
		}
	}
	return nil
}

// Uninstall removes the releases in reverse order, waiting for their
// objects to go, then the namespaces the install created, then what Helm
// keeps (CRDs). The namespaces go before the CRDs: a namespace deleted
// while CRDs vanish can wait minutes on the namespace controller's stale
// discovery (seen in CI: 4 minutes in Terminating).
func (h *Helm) Uninstall(ctx context.Context) error {
	var errs []error
	var done []Installed
	for i := len(h.installed) - 1; i >= 0; i-- {
		ch := h.installed[i]
		cfg, err := h.config(ch.Namespace)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		un := action.NewUninstall(cfg)
		un.Wait, un.Timeout, un.IgnoreNotFound = true, h.timeout, true
		if d, ok := ctx.Deadline(); ok {
			un.Timeout = min(un.Timeout, time.Until(d))
		}
		h.logf("kube target: helm: uninstalling %s/%s", ch.Namespace, ch.Release)
		start := time.Now()
		_, err = un.Run(ch.Release)
		h.logf("kube target: helm: uninstall of %s/%s returned in %.1fs", ch.Namespace, ch.Release, time.Since(start).Seconds())
		if err != nil {
			errs = append(errs, fmt.Errorf("helm uninstall %s/%s: %w", ch.Namespace, ch.Release, err))
			continue
		}
		done = append(done, ch)
		h.installed = h.installed[:i]
	}
	if nsErrs := kubewait.DeleteNamespaces(ctx, h.c, h.createdNS, h.logf); len(nsErrs) > 0 {
		errs = append(errs, nsErrs...)
	} else {
		h.createdNS = nil
	}
	for _, ch := range done {
		if err := h.deleteKept(ctx, ch.Namespace, h.kept[ch.Release]); err != nil {
			errs = append(errs, fmt.Errorf("helm uninstall %s/%s: %w", ch.Namespace, ch.Release, err))
			continue
		}
		delete(h.kept, ch.Release)
	}
	return errors.Join(errs...)
}

func (h *Helm) ensureNamespace(ctx context.Context, ns string) error {
	_, err := h.c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("get namespace %s: %w", ns, err)
	}
	_, err = h.c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", ns, err)
	}
	if err == nil {
		h.createdNS = append(h.createdNS, ns)
	}
	return nil
}

// load finds the chart in its own directory (ch.Dir) or chartDir, or
// downloads it from its repository into Helm's cache ($HELM_CACHE_HOME,
// default ~/.cache/helm).
func (h *Helm) load(ch mesh.Chart) (*chart.Chart, string, error) {
	if dir := cmp.Or(ch.Dir, h.chartDir); dir != "" {
		path, err := findChart(dir, ch.Name, ch.Version, h.words)
		if err != nil {
			return nil, "", err
		}
		c, err := loader.Load(path)
		if err != nil {
			return nil, "", fmt.Errorf("load chart %s: %w", path, err)
		}
		return c, path, nil
	}
	opts := action.ChartPathOptions{RepoURL: ch.Repo, Version: ch.Version}
	path, err := opts.LocateChart(ch.Name, cli.New())
	if err != nil {
		return nil, "", fmt.Errorf("fetch chart %s %s from %s (offline? pass %s with a directory of charts): %w", ch.Name, ch.Version, ch.Repo, h.words.Say(testbed.SettingMeshCharts, ""), err)
	}
	c, err := loader.Load(path)
	if err != nil {
		return nil, "", fmt.Errorf("load chart %s: %w", path, err)
	}
	return c, "", nil
}

// pinChart checks that the loaded chart will run the images of the release
// ch asks for. Every pin of ch (the values naming its images) must be a
// value the chart has; otherwise the images cannot be set and the chart is
// refused. A chart from a local directory whose version is not the one
// asked for is refused too, unless it is a source tree (the defaults of its
// pins are development coordinates, such as tag latest, which no release
// publishes): then the pins set the release's images, and the note says so.
// A chart without pins keeps the old behaviour: a note on the mismatch.
// The advice names the settings in w.
func pinChart(ch mesh.Chart, loaded *chart.Chart, from string, w testbed.Words) (string, error) {
	got := loaded.Metadata.Name + " " + loaded.Metadata.Version
	where := cmp.Or(from, ch.Repo)
	var dev []string
	for _, p := range ch.Pins {
		def, ok := chartDefault(loaded.Values, p)
		if !ok {
			return "", fmt.Errorf("chart %s from %s has no value %s, so meshbench cannot set the images it runs (%s=%v): "+
				"use the released chart %s %s (helm pull %s --repo %s --version %s)", got, where, p, p, valueAt(ch.Values, p), ch.Name, ch.Version, ch.Name, ch.Repo, ch.Version)
		}
		if s, isString := def.(string); isString && mesh.DevCoordinate(s) {
			dev = append(dev, fmt.Sprintf("%s=%s", p, s))
		}
	}
	if from == "" || loaded.Metadata.Version == ch.Version {
		return "", nil
	}
	if len(ch.Pins) == 0 {
		return fmt.Sprintf("%s holds version %s, not %s: installing it as it is", from, loaded.Metadata.Version, ch.Version), nil
	}
	if len(dev) == 0 {
		return "", fmt.Errorf("%s holds %s, not version %s: its templates would run the images of %s; "+
			"pass %s, or point %s at the %s charts", from, got, ch.Version, ch.Version,
			w.Say(testbed.SettingMeshVersion, loaded.Metadata.Version), w.Say(testbed.SettingMeshCharts, ""), ch.Version)
	}
	var pins []string
	for _, p := range ch.Pins {
		pins = append(pins, fmt.Sprintf("%s=%v", p, valueAt(ch.Values, p)))
	}
	return fmt.Sprintf("%s is a source tree (%s, chart version %s): its images are set to the release's: %s",
		from, strings.Join(dev, ", "), loaded.Metadata.Version, strings.Join(pins, ", ")), nil
}

// chartDefault reads the dotted path from a chart's default values, or
// from under _internal_defaults_do_not_set, where Istio's charts keep their
// defaults (their templates merge what is set at the top level over them).
func chartDefault(values map[string]any, path string) (any, bool) {
	for _, p := range []string{path, "_internal_defaults_do_not_set." + path} {
		if v, ok := lookup(values, p); ok {
			return v, true
		}
	}
	return nil, false
}

func valueAt(values map[string]any, path string) any {
	v, _ := lookup(values, path)
	return v
}

func lookup(values map[string]any, path string) (any, bool) {
	var cur any = values
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// findChart looks in dir, four levels deep, for <name>-<version>.tgz or a
// directory whose Chart.yaml is named name; an archive of the wanted
// version wins over a directory. Its errors name the directory's setting
// in w.
func findChart(dir, name, version string, w testbed.Words) (string, error) {
	where := w.Say(testbed.SettingMeshCharts, "") + " " + dir
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("%s: %w", where, err)
	}
	var dirs []string
	var tgz string
	root := filepath.Clean(dir)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable corners do not hide the rest
		}
		if d.IsDir() && strings.Count(strings.TrimPrefix(path, root), string(filepath.Separator)) > 4 {
			return filepath.SkipDir
		}
		switch {
		case !d.IsDir() && d.Name() == name+"-"+version+".tgz":
			tgz = path
		case !d.IsDir() && d.Name() == "Chart.yaml":
			b, err := os.ReadFile(path)
			if err == nil && chartName(b) == name {
				dirs = append(dirs, filepath.Dir(path))
			}
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("%s: %w", where, err)
	}
	if tgz != "" {
		return tgz, nil
	}
	if len(dirs) == 0 {
		return "", fmt.Errorf("%s: no chart %s (neither %s-%s.tgz nor a directory whose Chart.yaml says name: %s)", where, name, name, version, name)
	}
	sort.Strings(dirs)
	return dirs[0], nil
}

// chartName reads the name field of a Chart.yaml.
func chartName(b []byte) string {
	var c struct {
		Name string `json:"name"`
	}
	if err := utilyaml.Unmarshal(b, &c); err != nil {
		return ""
	}
	return c.Name
}

// object is one object of a release's rendered manifest.
type object struct {
	APIVersion, Kind, Namespace, Name string
	// Keep is set for objects Helm leaves behind on uninstall
	// (helm.sh/resource-policy: keep), such as Istio's CRDs.
	Keep bool
}

// String is "Kind namespace/name", or "Kind name" for a cluster-scoped
// object (fmt.Stringer).
func (o object) String() string {
	if o.Namespace == "" {
		return o.Kind + " " + o.Name
	}
	return o.Kind + " " + o.Namespace + "/" + o.Name
}

// manifestObjects lists the objects of a release's rendered manifest.
func manifestObjects(manifest string) ([]object, error) {
	d := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	var out []object
	for {
		var obj struct {
			APIVersion string            `json:"apiVersion"`
			Kind       string            `json:"kind"`
			Metadata   metav1.ObjectMeta `json:"metadata"`
		}
		if err := d.Decode(&obj); err != nil {
			if err == io.EOF {
				return out, nil
			}
			return nil, fmt.Errorf("read release manifest: %w", err)
		}
		if obj.Kind == "" {
			continue // an empty document
		}
		out = append(out, object{APIVersion: obj.APIVersion, Kind: obj.Kind, Namespace: obj.Metadata.Namespace, Name: obj.Metadata.Name,
			Keep: obj.Metadata.Annotations["helm.sh/resource-policy"] == "keep"})
	}
}

// workload is a Deployment, DaemonSet or StatefulSet of a release.
type workload struct{ Kind, Namespace, Name string }

// releaseWorkloads lists the workloads in a release's rendered manifest.
func releaseWorkloads(manifest, namespace string) ([]workload, error) {
	objs, err := manifestObjects(manifest)
	if err != nil {
		return nil, err
	}
	var out []workload
	for _, o := range objs {
		if o.APIVersion != "apps/v1" {
			continue
		}
		switch o.Kind {
		case "Deployment", "DaemonSet", "StatefulSet":
			out = append(out, workload{Kind: o.Kind, Namespace: cmp.Or(o.Namespace, namespace), Name: o.Name})
		}
	}
	return out, nil
}

// deleteKept deletes what Helm keeps on uninstall. The run installed the
// mesh on a cluster that did not have it, and Helm refuses to install over
// objects it does not own, so these objects are the run's own: deleting
// them gives the cluster back as it was. It waits until they are gone.
func (h *Helm) deleteKept(ctx context.Context, ns string, kept []object) error {
	if len(kept) == 0 {
		return nil
	}
	getter := &restGetter{cfg: h.cfg, namespace: ns}
	mapper, err := getter.ToRESTMapper()
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(h.cfg)
	if err != nil {
		return fmt.Errorf("dynamic client: %w", err)
	}
	left, errs := deleteObjects(ctx, mapper, dyn, ns, kept)
	if err := waitDeleted(ctx, left); err != nil {
		errs = append(errs, err)
	}
	if len(left) > 0 {
		h.logf("kube target: helm: deleted %d object(s) Helm keeps on uninstall (resource-policy keep)", len(left))
	}
	return errors.Join(errs...)
}

// pendingDelete is an object whose deletion was asked for, with the client
// of its resource.
type pendingDelete struct {
	ri dynamic.ResourceInterface
	o  object
}

// deleteObjects asks for the deletion of each object (in namespace ns when
// it names none), and returns those being deleted and an error for each
// that could not be.
func deleteObjects(ctx context.Context, mapper meta.RESTMapper, dyn dynamic.Interface, ns string, objs []object) ([]pendingDelete, []error) {
	var errs []error
	var left []pendingDelete
	for _, o := range objs {
		ri, err := resourceOf(mapper, dyn, ns, o)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", o, err))
			continue
		}
		err = ri.Delete(ctx, o.Name, metav1.DeleteOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			errs = append(errs, fmt.Errorf("delete kept %s: %w", o, err))
		default:
			left = append(left, pendingDelete{ri, o})
		}
	}
	return left, errs
}

// resourceOf returns the dynamic client of o's resource, in o's namespace
// (ns when it names none) if the resource is namespaced.
func resourceOf(mapper meta.RESTMapper, dyn dynamic.Interface, ns string, o object) (dynamic.ResourceInterface, error) {
	gv, err := schema.ParseGroupVersion(o.APIVersion)
	if err != nil {
		return nil, err
	}
	m, err := mapper.RESTMapping(gv.WithKind(o.Kind).GroupKind(), gv.Version)
	if err != nil {
		return nil, err
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return dyn.Resource(m.Resource).Namespace(cmp.Or(o.Namespace, ns)), nil
	}
	return dyn.Resource(m.Resource), nil
}

// waitDeleted waits for all of left to be gone at once; on time-out, it
// says what holds each one (a CRD's finalizer and conditions tell why its
// deletion is stuck).
func waitDeleted(ctx context.Context, left []pendingDelete) error {
	start := time.Now()
	var stuck []string
	err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		stuck = stuck[:0]
		for _, p := range left {
			u, err := p.ri.Get(ctx, p.o.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			stuck = append(stuck, fmt.Sprintf("%s (%s)", p.o, whyNotDeleted(u, err)))
		}
		return len(stuck) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("after %v, still there: %s: %w", time.Since(start).Round(time.Second), strings.Join(stuck, "; "), err)
	}
	return nil
}

// whyNotDeleted says what holds u, an object still there: its finalizers
// and true conditions, or err when getting it failed.
func whyNotDeleted(u *unstructured.Unstructured, err error) string {
	if err != nil {
		return err.Error()
	}
	why := "finalizers " + strings.Join(u.GetFinalizers(), ",")
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["status"] == "True" {
			why += fmt.Sprintf("; %v: %v", m["type"], m["message"])
		}
	}
	return why
}

// rollout waits until every workload of the release is rolled out, and
// fails as soon as one of their pods cannot become ready, with its events
// and last log lines. A control plane's normal start-up restarts are
// forgiven (startupForgiveness); an image that cannot be pulled, a missing
// Secret or ConfigMap, or a pod that keeps crashing is not.
func (h *Helm) rollout(ctx context.Context, ch mesh.Chart, manifest string) error {
	ws, err := releaseWorkloads(manifest, ch.Namespace)
	if err != nil {
		return err
	}
	if len(ws) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	forgiven := map[string]int32{} // pod/container: restarts already reported
	var pending []string
	start, said := time.Now(), time.Now()
	err = wait.PollUntilContextCancel(ctx, 2*time.Second, true, func(ctx context.Context) (bool, error) {
		if len(pending) > 0 && time.Since(said) >= 15*time.Second {
			// A rollout can take minutes: say what it waits for.
			said = time.Now()
			h.logf("kube target: helm: %s: waiting %v (of at most %v) for %s", ch.Release, time.Since(start).Round(time.Second), h.timeout, strings.Join(pending, ", "))
		}
		pending = pending[:0]
		for _, w := range ws {
			done, selector, err := h.rolledOut(ctx, w)
			if err != nil {
				return false, err
			}
			if done {
				continue
			}
			pending = append(pending, w.Kind+" "+w.Namespace+"/"+w.Name)
			if selector == nil {
				continue
			}
			if err := h.podsProblem(ctx, ch, w, selector, forgiven); err != nil {
				return false, err
			}
		}
		return len(pending) == 0, nil
	})
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("not rolled out after %v: %s: %w", h.timeout, strings.Join(pending, ", "), err)
	}
	return err
}

// podsProblem judges the pods of one workload: the first that cannot
// become ready is explained and returned; a forgiven start-up restart is
// logged once per restart, with the container's last exit.
func (h *Helm) podsProblem(ctx context.Context, ch mesh.Chart, w workload, selector *metav1.LabelSelector, forgiven map[string]int32) error {
	pods, err := h.c.CoreV1().Pods(w.Namespace).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(selector)})
	if err != nil {
		return fmt.Errorf("list pods of %s %s/%s: %w", w.Kind, w.Namespace, w.Name, err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		e, restarts := installProblem(p, time.Now(), h.grace, startupForgiveness)
		if e == nil {
			continue
		}
		if restarts == 0 {
			return kubewait.Explain(ctx, h.c, e, 20)
		}
		if k := p.Name + "/" + e.Container; forgiven[k] < restarts {
			forgiven[k] = restarts
			h.logf("kube target: helm: %s: %s/%s container %s restarted while starting (%d of %d restarts forgiven in its first %v): %s",
				ch.Release, p.Namespace, p.Name, e.Container, restarts, startupForgiveness.Restarts, startupForgiveness.Within, e.Message)
		}
	}
	return nil
}

// forgiveness bounds the crashes an install forgives a pod while it starts.
type forgiveness struct {
	// Restarts is the most restarts forgiven per container.
	Restarts int32
	// Within is how long after the pod started they are forgiven.
	Within time.Duration
}

// startupForgiveness is what an install forgives: a control plane often
// restarts once or twice while its webhooks and certificates come up
// (istiod, linkerd-destination waiting for linkerd-identity). CrashLoopBackOff
// waits 10 s, then 20 s, before the second and third start, so a pod that
// keeps crashing is stopped about a minute after it started.
var startupForgiveness = forgiveness{Restarts: 2, Within: 3 * time.Minute}

// installProblem is kubewait.PodProblem for a release's pods: a container in
// CrashLoopBackOff that has restarted at most f.Restarts times within
// f.Within of the pod's start is forgiven, and returned with its restart
// count so the caller can say so; every other problem (image pulls,
// CreateContainerConfigError, OOMKilled, ...) is returned with 0 restarts,
// to stop the install.
func installProblem(p *corev1.Pod, now time.Time, grace time.Duration, f forgiveness) (*kubewait.PodError, int32) {
	e := kubewait.PodProblem(p, now, grace)
	if e == nil || e.Reason != "CrashLoopBackOff" {
		return e, 0
	}
	started := p.Status.StartTime
	if started == nil {
		started = &p.CreationTimestamp
	}
	for _, s := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if s.Name != e.Container {
			continue
		}
		age := time.Duration(0)
		if !started.IsZero() {
			age = now.Sub(started.Time)
		}
		if s.RestartCount <= f.Restarts && age < f.Within {
			return e, max(s.RestartCount, 1)
		}
		e.Message = strings.TrimSpace(fmt.Sprintf("%s; it keeps crashing: %d restarts, %v after the pod started (at most %d are forgiven in its first %v)",
			e.Message, s.RestartCount, age.Round(time.Second), f.Restarts, f.Within))
	}
	return e, 0
}

// rolledOut reports whether w is fully rolled out, and its pod selector.
func (h *Helm) rolledOut(ctx context.Context, w workload) (bool, *metav1.LabelSelector, error) {
	apps := h.c.AppsV1()
	var err error
	switch w.Kind {
	case "Deployment":
		var d *appsv1.Deployment
		if d, err = apps.Deployments(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{}); err == nil {
			want := int32(1)
			if d.Spec.Replicas != nil {
				want = *d.Spec.Replicas
			}
			s := d.Status
			return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas >= want && s.AvailableReplicas >= want, d.Spec.Selector, nil
		}
	case "DaemonSet":
		var d *appsv1.DaemonSet
		if d, err = apps.DaemonSets(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{}); err == nil {
			s := d.Status
			return s.ObservedGeneration >= d.Generation && s.DesiredNumberScheduled > 0 && s.UpdatedNumberScheduled >= s.DesiredNumberScheduled &&
				s.NumberAvailable >= s.DesiredNumberScheduled, d.Spec.Selector, nil
		}
	case "StatefulSet":
		var d *appsv1.StatefulSet
		if d, err = apps.StatefulSets(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{}); err == nil {
			want := int32(1)
			if d.Spec.Replicas != nil {
				want = *d.Spec.Replicas
			}
			return d.Status.ObservedGeneration >= d.Generation && d.Status.ReadyReplicas >= want, d.Spec.Selector, nil
		}
	}
	if apierrors.IsNotFound(err) {
		return false, nil, nil // not created yet
	}
	if err != nil {
		return false, nil, fmt.Errorf("get %s %s/%s: %w", w.Kind, w.Namespace, w.Name, err)
	}
	return true, nil, nil
}

// config is a Helm action configuration for namespace, storing releases as
// Secrets there (Helm's default driver).
func (h *Helm) config(namespace string) (*action.Configuration, error) {
	cfg := new(action.Configuration)
	getter := &restGetter{cfg: h.cfg, namespace: namespace}
	if err := cfg.Init(getter, namespace, "secret", func(format string, v ...any) {}); err != nil {
		return nil, fmt.Errorf("helm: configure for namespace %s: %w", namespace, err)
	}
	return cfg, nil
}

// restGetter gives Helm the run's own rest.Config, so that a kind cluster
// created in-process (no kubeconfig file) and a remote one work alike.
type restGetter struct {
	cfg       *rest.Config
	namespace string
}

// ToRESTConfig is a copy of the run's rest.Config
// (genericclioptions.RESTClientGetter, what Helm's action.Configuration
// is initialised with).
func (g *restGetter) ToRESTConfig() (*rest.Config, error) { return rest.CopyConfig(g.cfg), nil }

// ToDiscoveryClient is a discovery client for the run's rest.Config,
// cached in memory (genericclioptions.RESTClientGetter).
func (g *restGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(rest.CopyConfig(g.cfg))
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	return memory.NewMemCacheClient(dc), nil
}

// ToRESTMapper maps kinds to resources through the discovery client,
// short names expanded (genericclioptions.RESTClientGetter).
func (g *restGetter) ToRESTMapper() (meta.RESTMapper, error) {
	dc, err := g.ToDiscoveryClient()
	if err != nil {
		return nil, err
	}
	m := restmapper.NewDeferredDiscoveryRESTMapper(dc)
	return restmapper.NewShortcutExpander(m, dc, func(string) {}), nil
}

// ToRawKubeConfigLoader is an empty kubeconfig whose context has only the
// namespace, so Helm defaults to it (genericclioptions.RESTClientGetter).
func (g *restGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return clientcmd.NewDefaultClientConfig(*clientcmdapi.NewConfig(), &clientcmd.ConfigOverrides{Context: clientcmdapi.Context{Namespace: g.namespace}})
}
