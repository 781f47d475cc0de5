package mesh

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"k8s.io/client-go/kubernetes"
)

// Installer is a mesh that can install itself on request. It does not touch
// the cluster: Charts returns the Helm releases that install the mesh, in
// install order, and the kube target installs them (and uninstalls them, in
// reverse, when the run ends). An adapter is an Installer when its mesh has
// official Helm charts.
type Installer interface {
	Charts(o InstallOptions) ([]Chart, error)
}

// Imager is an Installer whose images may be local only (built offline,
// like istio-proxyless's): on kind the run loads those present in the
// local Docker into the nodes before installing, as it does the
// workloads' images.
type Imager interface {
	Installer
	Images(o InstallOptions) ([]string, error)
}

// InstallOptions say which mesh release to install and from where.
type InstallOptions struct {
	// Version is the mesh release, which is also its charts' version. ""
	// installs the adapter's pinned default (DefaultVersion).
	Version string `json:"version,omitempty"`
	// Registry replaces the upstream image registry (e.g. "registry.local:5000/istio")
	// for clusters that cannot pull from the internet. "" keeps upstream.
	Registry string `json:"registry,omitempty"`
	// Published says the cluster pulls from registries of its own (a remote
	// cluster), not from images loaded into it: an adapter
	// whose default images are built offline (istio-proxyless's) installs
	// its mesh's published release and images instead, unless Version
	// names an offline build.
	Published bool `json:"published,omitempty"`
	// NoCapabilities are Linux capabilities the nodes' container runtime
	// cannot grant (a kind node on a host whose bounding set lacks
	// CAP_SYS_RESOURCE): adapters leave them out of what their pods ask for.
	NoCapabilities []string `json:"noCapabilities,omitempty"`
}

// Chart is one Helm release of a mesh's installation.
type Chart struct {
	// Release is the Helm release name.
	Release string `json:"release"`
	// Namespace is the release's namespace; it is created when missing.
	Namespace string `json:"namespace"`
	// Name is the chart's name in Repo (and in its Chart.yaml).
	Name string `json:"chart"`
	// Repo is the URL of the Helm repository that serves the chart.
	Repo string `json:"repo"`
	// Version is the chart version.
	Version string `json:"version"`
	// Dir, when set, is the directory of charts this release's chart is
	// read from, over the installer's own (meshinstall.HelmOptions.ChartDir):
	// an Istio canary revision of another version than the reference's
	// has its own charts.
	Dir string `json:"dir,omitempty"`
	// Values are the release's values, over the chart's defaults.
	Values map[string]any `json:"values,omitempty"`
	// Pins are the dotted paths in Values that name the release's images
	// (Istio's global.hub and global.tag, Linkerd's linkerdVersion). Values
	// always sets them, so that a chart read from a source tree, whose
	// defaults name development images (DevCoordinate), runs the release's
	// images. A chart without one of these values cannot be pinned, and the
	// installer refuses it.
	Pins []string `json:"pins,omitempty"`
}

// DevCoordinate reports whether v is an image coordinate that only charts
// in a source tree carry and no release publishes: Istio's testing hubs and
// tag latest, Linkerd's linkerdVersionValue placeholder.
func DevCoordinate(v string) bool {
	switch v {
	case "latest", "linkerdVersionValue":
		return true
	}
	return strings.Contains(v, "istio-testing") || strings.Contains(v, "registry.istio.io/testing")
}

// String names the release and its chart: "namespace/release (chart
// version from repo)".
func (c Chart) String() string {
	return fmt.Sprintf("%s/%s (%s %s from %s)", c.Namespace, c.Release, c.Name, c.Version, c.Repo)
}

// DefaultVersion is the release an adapter installs when
// InstallOptions.Version is empty; "" when the adapter cannot install.
func DefaultVersion(m Mesh) string {
	if d, ok := m.(interface{ defaultVersion() string }); ok {
		return d.defaultVersion()
	}
	return ""
}

// chartVersion matches what Helm accepts as a chart version (SemVer 2, with
// or without a leading v; Linkerd's edge charts are dated, 2025.10.1).
var chartVersion = regexp.MustCompile(`^v?[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// version returns o.Version or def, or an error naming the bad version.
func (o InstallOptions) version(mesh, def string) (string, error) {
	if o.Version == "" {
		return def, nil
	}
	if !chartVersion.MatchString(o.Version) {
		return "", fmt.Errorf("%s: install version %q is not a chart version (want e.g. %s)", mesh, o.Version, def)
	}
	return strings.TrimPrefix(o.Version, "v"), nil
}

// set writes value at the dotted path into values, creating the maps on the
// way: set(v, "global.hub", "r") is Helm's --set global.hub=r.
func set(values map[string]any, path string, value any) {
	keys := strings.Split(path, ".")
	m := values
	for _, k := range keys[:len(keys)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[keys[len(keys)-1]] = value
}

// valueAt reads a dotted key of Helm values, as set writes it.
func valueAt(vals map[string]any, key string) any {
	var cur any = vals
	for _, k := range strings.Split(key, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

// FlattenValues turns nested values into sorted "a.b.c=value" lines, for
// logs and the results file. Values longer than 64 characters (keys and
// certificates) are shown by their length only.
func FlattenValues(values map[string]any) []string {
	var out []string
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if m, ok := v.(map[string]any); ok {
			for _, k := range slices.Sorted(maps.Keys(m)) {
				p := k
				if prefix != "" {
					p = prefix + "." + k
				}
				walk(p, m[k])
			}
			return
		}
		s := fmt.Sprint(v)
		if len(s) > 64 {
			s = fmt.Sprintf("<%d bytes>", len(s))
		}
		out = append(out, prefix+"="+s)
	}
	walk("", values)
	return out
}

// Preparer is an Installer with a step before its charts, such as a
// secret the charts reference (Cilium's IPsec key, made for the run).
// Prepare is idempotent: what exists is kept. The notes say what it did.
type Preparer interface {
	Prepare(ctx context.Context, c kubernetes.Interface, o InstallOptions) (notes []string, err error)
}

// KernelEncryption names the transparent encryption between nodes that m
// turns on, as installed (info is Detect's): "IPsec", "WireGuard", or ""
// for none or a mesh that encrypts in its proxies (mTLS).
func KernelEncryption(m Mesh, info Info) string {
	if k, ok := m.(interface{ KernelEncryption(Info) string }); ok {
		return k.KernelEncryption(info)
	}
	return ""
}

// ClusterWide is a mesh whose data plane is on for the whole cluster
// (Cilium's transparent encryption), so that no namespace of the cluster
// can be the baseline. Its baseline runs on a second cluster. The string
// says why, for the results.
type ClusterWide interface {
	ClusterWide() string
}

// PlainByDesign returns why m's meshed arm encrypts nothing on purpose (a
// CNI measured without its encryption), or "": its hops are then checked
// as plain text, and the runs say so.
func PlainByDesign(m Mesh, info Info) string {
	if p, ok := m.(interface{ PlainByDesign(Info) string }); ok {
		return p.PlainByDesign(info)
	}
	return ""
}
