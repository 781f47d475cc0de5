package arms

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Proxies are the sidecar proxies a local spec may name: the local
// target's registry, handed to ParseLocal so that this package imports no
// target.
type Proxies struct {
	// Names are the registered sidecars, sorted, e.g. caddy, envoy.
	Names []string
	// Versioned are the sidecars built from Go source, which a spec may
	// ask for at a version (name@version); the others are taken from PATH.
	Versioned []string
}

var (
	proxyName = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
	// moduleVersion is an exact semantic version as Go modules write it.
	moduleVersion = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+incompatible)?$`)
	// imageRef is a container image reference:
	// [host[:port]/]path[:tag][@digest] (the grammar of
	// github.com/distribution/reference).
	imageRef = func() *regexp.Regexp {
		const (
			host   = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*(?::[0-9]+)?`
			path   = `[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*`
			tag    = `[\w][\w.-]{0,127}`
			digest = `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}`
		)
		return regexp.MustCompile(`^(?:` + host + `/)?` + path + `(?:/` + path + `)*(?::` + tag + `)?(?:@` + digest + `)?$`)
	}()
)

// UnversionedError is a version asked of a sidecar taken from PATH, which
// cannot be built at one.
type UnversionedError struct {
	// Ref is the sidecar as written, e.g. "nginx@1.27.0".
	Ref string
	// Name is the sidecar, e.g. "nginx".
	Name string
}

// Error says the sidecar is taken from PATH and cannot be built at a version.
func (e *UnversionedError) Error() string {
	return fmt.Sprintf("sidecar %q: %s is taken from PATH, so no version of it can be built; install the version you want", e.Ref, e.Name)
}

// ParseLocal reads a local target's sidecar spec,
// name[@version][+no-keepalive][+access-log] with the variants in any
// order, each at most once. The name must be one of p.Names; a version is
// allowed only for p.Versioned, and must be a full semantic version such
// as v2.10.2 (no "latest" or branch: a gate compares two versions, so both
// must be exact).
func ParseLocal(spec string, p Proxies) (Spec, error) {
	ref, variants := cutVariants(spec, NoKeepAlive, AccessLog)
	name, version, hasVersion := strings.Cut(ref, "@")
	want := strings.Join(p.Names, ", ")
	switch {
	case ref == "":
		return Spec{}, fmt.Errorf("sidecar: empty; want a name such as caddy, or name@version such as caddy@v2.10.2")
	case !proxyName.MatchString(name):
		return Spec{}, fmt.Errorf("sidecar %q: %q is not a sidecar name; want one of %s", ref, name, want)
	case !slices.Contains(p.Names, name):
		return Spec{}, fmt.Errorf("sidecar %q: unknown sidecar %q: want one of %s", ref, name, want)
	case !hasVersion:
		return Spec{Proxy: name, Variants: variants}, nil
	case !slices.Contains(p.Versioned, name):
		return Spec{}, &UnversionedError{Ref: ref, Name: name}
	case !moduleVersion.MatchString(version):
		return Spec{}, fmt.Errorf("sidecar %q: version %q is not an exact module version; want e.g. %s@v2.10.2", ref, version, name)
	}
	return Spec{Proxy: name, Version: version, Variants: variants}, nil
}

// cutVariants cuts the variants in allowed off the end of spec, each at
// most once, and returns what is left and the variants in written order.
func cutVariants(spec string, allowed ...Variant) (string, []Variant) {
	var cut []Variant
	for {
		v, ok := suffixVariant(spec, cut, allowed)
		if !ok {
			return spec, cut
		}
		spec = strings.TrimSuffix(spec, string(v))
		cut = slices.Insert(cut, 0, v)
	}
}

// suffixVariant is the variant of allowed, not yet in cut, spec ends in.
func suffixVariant(spec string, cut, allowed []Variant) (Variant, bool) {
	for _, v := range allowed {
		if strings.HasSuffix(spec, string(v)) && !slices.Contains(cut, v) {
			return v, true
		}
	}
	return "", false
}

// ParseCluster reads a cluster's candidate spec: IMAGE, IMAGE+no-keepalive,
// +no-keepalive (the reference's image with keep-alive between sidecars
// off), or rev=NAME (an Istio revision, a DNS label as istio.io/rev is).
func ParseCluster(spec string) (Spec, error) {
	if spec == "" {
		return Spec{}, fmt.Errorf("empty; want IMAGE, IMAGE%s, %s or %sNAME", NoKeepAlive, NoKeepAlive, RevisionPrefix)
	}
	if rev, ok := strings.CutPrefix(spec, RevisionPrefix); ok {
		if rev == "" {
			return Spec{}, fmt.Errorf("no revision name (want e.g. %scanary, the revision istioctl install --revision=canary installs)", RevisionPrefix)
		}
		if msgs := validation.IsDNS1123Label(rev); len(msgs) > 0 {
			return Spec{}, fmt.Errorf("%q is not a revision name: %s", rev, strings.Join(msgs, "; "))
		}
		return Spec{Revision: rev}, nil
	}
	s := Spec{Image: spec}
	if img, ok := strings.CutSuffix(spec, string(NoKeepAlive)); ok {
		s.Image, s.Variants = img, []Variant{NoKeepAlive}
	}
	if s.Image != "" && !imageRef.MatchString(s.Image) {
		return Spec{}, fmt.Errorf("%q is not an image reference (want e.g. registry.local/nginx:1.27, optionally ending in %s, or %s alone for the reference's image)",
			s.Image, NoKeepAlive, NoKeepAlive)
	}
	return s, nil
}
