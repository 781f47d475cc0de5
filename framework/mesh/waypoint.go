package mesh

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// GatewayAPIVersion is the release of sigs.k8s.io/gateway-api whose
// standard CRDs (config/crd/standard) an ambient run with a waypoint
// installs when the cluster has none. (v1.7.0 needs a newer Go than
// meshbench's.)
const GatewayAPIVersion = "v1.6.3"

const (
	gatewayAPIModule = "sigs.k8s.io/gateway-api"
	gatewaysCRD      = "gateways.gateway.networking.k8s.io"
	crdPath          = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	waypointClass    = "istio-waypoint"
	// waypointTimeout bounds the wait for the CRDs to be established and
	// for istiod to program the waypoint.
	waypointTimeout = 3 * time.Minute
)

// WithGatewayAPICRDs sets the directory of Gateway API CRD manifests an
// ambient run with a waypoint installs when the cluster has none (default:
// config/crd/standard of sigs.k8s.io/gateway-api@GatewayAPIVersion in the Go
// module cache, downloaded with `go mod download` when missing).
func WithGatewayAPICRDs(dir string) Option {
	return optionFunc(func(c *config) { c.gatewayAPICRDs = dir })
}

// Cleaner is a mesh that changed the cluster outside the run's namespaces
// (an ambient run installing the Gateway API CRDs) and undoes it.
type Cleaner interface {
	Cleanup(ctx context.Context, c kubernetes.Interface) error
}

// GatewayAPICRDs returns the directory of the Gateway API's standard CRDs
// in the Go module sigs.k8s.io/gateway-api@version, which `go mod download`
// fetches into the module cache (through GOPROXY) when it is not there.
func GatewayAPICRDs(ctx context.Context, version string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", gatewayAPIModule+"@"+version)
	cmd.Dir = os.TempDir() // outside any module: meshbench's go.mod is not touched
	out, err := cmd.Output()
	var m struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &m); jerr != nil || m.Error != "" || m.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: %s", gatewayAPIModule, version, strings.TrimSpace(cmp3(m.Error, errString(err), errString(jerr))))
	}
	return filepath.Join(m.Dir, "config", "crd", "standard"), nil
}

func cmp3(a, b, c string) string {
	for _, s := range []string{a, b, c} {
		if s != "" {
			return s
		}
	}
	return "no module directory"
}

func errString(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return err.Error() + ": " + string(ee.Stderr)
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// readCRDs reads the CustomResourceDefinitions of dir's YAML files, as
// JSON, by name.
func readCRDs(dir string) (map[string][]byte, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, fmt.Errorf("gateway API CRDs in %s: %w", dir, err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("gateway API CRDs: %w", err)
		}
		d := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(string(b)), 4096)
		for {
			var obj map[string]any
			if err := d.Decode(&obj); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return nil, fmt.Errorf("gateway API CRDs: %s: %w", f, err)
			}
			if obj["kind"] != "CustomResourceDefinition" {
				continue
			}
			name, _ := obj["metadata"].(map[string]any)["name"].(string)
			if out[name], err = json.Marshal(obj); err != nil {
				return nil, fmt.Errorf("gateway API CRDs: %s: %w", f, err)
			}
		}
	}
	if _, ok := out[gatewaysCRD]; !ok {
		return nil, fmt.Errorf("gateway API CRDs: %s holds no %s CRD", dir, gatewaysCRD)
	}
	return out, nil
}

// restOf returns the clientset's REST client, which reaches any API path.
func restOf(c kubernetes.Interface) (rest.Interface, error) {
	rc := c.CoreV1().RESTClient()
	if r, ok := rc.(*rest.RESTClient); rc == nil || (ok && r == nil) {
		return nil, errors.New("a waypoint needs a clientset with a REST client (a fake clientset has none)")
	}
	return rc, nil
}

// ensureGatewayAPI installs the Gateway API CRDs when the cluster has no
// Gateway CRD, and waits until they are established. The CRDs it creates
// are remembered for Cleanup.
func (a *ambient) ensureGatewayAPI(ctx context.Context, rc rest.Interface) error {
	err := rc.Get().AbsPath(crdPath, gatewaysCRD).Do(ctx).Error()
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("istio-ambient: get CRD %s: %w", gatewaysCRD, err)
	}
	dir := a.crdDir
	if dir == "" {
		if dir, err = GatewayAPICRDs(ctx, GatewayAPIVersion); err != nil {
			return fmt.Errorf("istio-ambient: the cluster has no Gateway API, which a waypoint needs: %w", err)
		}
	}
	crds, err := readCRDs(dir)
	if err != nil {
		return fmt.Errorf("istio-ambient: %w", err)
	}
	names := make([]string, 0, len(crds))
	for name := range crds {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		err := rc.Post().AbsPath(crdPath).SetHeader("Content-Type", "application/json").Body(crds[name]).Do(ctx).Error()
		switch {
		case apierrors.IsAlreadyExists(err):
		case err != nil:
			return fmt.Errorf("istio-ambient: create CRD %s: %w", name, err)
		default:
			a.createdCRDs = append(a.createdCRDs, name)
		}
	}
	return waitFor(ctx, "CRD "+gatewaysCRD+" established", func(ctx context.Context) (bool, string, error) {
		return condition(ctx, rc.Get().AbsPath(crdPath, gatewaysCRD), "Established")
	})
}

// condition reads an object and reports whether its status condition typ
// is True, and its conditions for an error message.
func condition(ctx context.Context, req *rest.Request, typ string) (bool, string, error) {
	b, err := req.Do(ctx).Raw()
	if err != nil {
		return false, "", err
	}
	var obj struct {
		Status struct {
			Conditions []struct{ Type, Status, Reason, Message string } `json:"conditions"`
		} `json:"status"`
	}
	if err := json.Unmarshal(b, &obj); err != nil {
		return false, "", err
	}
	var seen []string
	for _, c := range obj.Status.Conditions {
		seen = append(seen, fmt.Sprintf("%s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message))
		if c.Type == typ && c.Status == "True" {
			return true, "", nil
		}
	}
	return false, strings.Join(seen, "; "), nil
}

// waitFor polls check every second until it is done, ctx ends or
// waypointTimeout passes; the error says what was last seen.
func waitFor(ctx context.Context, what string, check func(context.Context) (bool, string, error)) error {
	last := ""
	err := wait.PollUntilContextTimeout(ctx, time.Second, waypointTimeout, true, func(ctx context.Context) (bool, error) {
		done, seen, err := check(ctx)
		if err != nil {
			last = err.Error()
			return false, nil // transient: the API may not serve the new CRD yet
		}
		last = seen
		return done, nil
	})
	if err != nil {
		return fmt.Errorf("istio-ambient: waiting for %s: %w (last seen: %s)", what, err, cmp3(last, "nothing", ""))
	}
	return nil
}

// createWaypoint creates the namespace's waypoint, as `istioctl waypoint
// apply` does (class istio-waypoint, an HBONE listener on 15008, for
// service traffic), and waits until istiod has programmed it.
func createWaypoint(ctx context.Context, rc rest.Interface, namespace, name string) error {
	gw := map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1",
		"kind":       "Gateway",
		"metadata": map[string]any{"name": name, "namespace": namespace,
			"labels": map[string]string{"istio.io/waypoint-for": "service"}},
		"spec": map[string]any{
			"gatewayClassName": waypointClass,
			"listeners":        []map[string]any{{"name": "mesh", "port": 15008, "protocol": "HBONE"}},
		},
	}
	body, err := json.Marshal(gw)
	if err != nil {
		return err
	}
	path := "/apis/gateway.networking.k8s.io/v1/namespaces/" + namespace + "/gateways"
	err = rc.Post().AbsPath(path).SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Error()
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("istio-ambient: create waypoint Gateway %s/%s: %w", namespace, name, err)
	}
	return waitFor(ctx, "waypoint Gateway "+namespace+"/"+name+" to be programmed by istiod", func(ctx context.Context) (bool, string, error) {
		return condition(ctx, rc.Get().AbsPath(path, name), "Programmed")
	})
}

// Cleanup deletes the Gateway API CRDs the run installed.
func (a *ambient) Cleanup(ctx context.Context, c kubernetes.Interface) error {
	if len(a.createdCRDs) == 0 {
		return nil
	}
	rc, err := restOf(c)
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range a.createdCRDs {
		if err := rc.Delete().AbsPath(crdPath, name).Do(ctx).Error(); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("istio-ambient: delete CRD %s: %w", name, err))
		}
	}
	if len(errs) == 0 {
		a.createdCRDs = nil
	}
	return errors.Join(errs...)
}
