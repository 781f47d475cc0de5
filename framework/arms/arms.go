// Package arms is the grammar of an upgrade gate's arms: the reference and
// candidate specs a run's plan writes (its sidecar and candidate), parsed
// once into a Spec that the targets receive. The local target's sidecars
// are written name[@version][+no-keepalive][+access-log]; a cluster's
// candidate IMAGE, IMAGE+no-keepalive, +no-keepalive (the reference's
// image), or rev=NAME (an Istio revision). The package names no flags:
// whoever reads the command line says which flag a spec came from.
package arms

import "strings"

// Variant is a configuration variant a spec can end in: a suffix of the
// spec, one definition each.
type Variant string

// The configuration variants.
const (
	// NoKeepAlive opens a new mTLS connection for every request between
	// sidecars: a configuration that costs several times the CPU per
	// request, a gross regression to gate. Local and cluster specs.
	NoKeepAlive Variant = "+no-keepalive"
	// AccessLog writes an access log line for every request each sidecar
	// serves, as a mesh with access logging turned on does: a modest, real
	// regression in CPU per request. Local specs only.
	AccessLog Variant = "+access-log"
)

// RevisionPrefix starts a cluster spec that is an Istio revision
// ("rev=canary"). An image reference has no "=", so the two cannot be
// confused.
const RevisionPrefix = "rev="

// Spec is one arm's sidecar, as parsed from its spec. A local spec sets
// Proxy (and Version); a cluster spec Image, or Revision, or only a
// variant (the reference's image).
type Spec struct {
	// Proxy is a local sidecar's name, e.g. "caddy"; "" on a cluster.
	Proxy string
	// Version is the Go module version a local sidecar is built at, e.g.
	// "v2.10.2"; "" is the proxy's default.
	Version string
	// Image is a cluster candidate's sidecar image; "" is the reference's.
	Image string
	// Revision is the Istio revision (istio.io/rev) that injects a cluster
	// candidate arm; a revision has no image and no variant.
	Revision string
	// Variants are the configuration variants, in the order written.
	Variants []Variant
}

// Has reports whether s ends in variant v.
func (s Spec) Has(v Variant) bool {
	for _, w := range s.Variants {
		if w == v {
			return true
		}
	}
	return false
}

// NoKeepAlive reports whether s turns keep-alive between sidecars off.
func (s Spec) NoKeepAlive() bool { return s.Has(NoKeepAlive) }

// AccessLog reports whether s writes an access log line per request.
func (s Spec) AccessLog() bool { return s.Has(AccessLog) }

// Ref is the sidecar without its variants: "caddy" or "caddy@v2.10.2" on
// the local target, the image on a cluster.
func (s Spec) Ref() string {
	switch {
	case s.Version != "":
		return s.Proxy + "@" + s.Version
	case s.Proxy != "":
		return s.Proxy
	}
	return s.Image
}

// String is the spec as written: ParseLocal or ParseCluster of it is s.
func (s Spec) String() string {
	if s.Revision != "" {
		return RevisionPrefix + s.Revision
	}
	var b strings.Builder
	b.WriteString(s.Ref())
	for _, v := range s.Variants {
		b.WriteString(string(v))
	}
	return b.String()
}
