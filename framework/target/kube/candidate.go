package kube

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/target"
)

// Candidate is an upgrade gate's candidate: a sidecar on the bring-your-own
// sidecar mesh (-mesh=sidecar), or an Istio revision (-mesh=istio). With
// one, the target's arms are baseline, reference and candidate: the
// reference is the mesh's sidecar as configured (with Istio, injected by
// the reference revision), the candidate the same sidecar with another
// image and/or configuration (or injected by the candidate revision), each
// meshed arm in its own namespace with its own workloads, run interleaved
// like the ordinary arms.
type Candidate struct {
	// Revision is the Istio revision (istio.io/rev) that injects the
	// candidate arm; "" for a sidecar candidate. A revision candidate has
	// no Image and no NoKeepAlive.
	Revision string
	// Image is the candidate sidecar's image; "" is the reference's.
	Image string
	// NoKeepAlive turns keep-alive between the candidate's sidecars off
	// (manifests.Sidecar.NoKeepAlive): a variant of the nginx configuration
	// the harness renders, so only for the sidecar it wires itself.
	NoKeepAlive bool
}

// NoKeepAliveVariant is the configuration variant a candidate can end in,
// as on the local target ("caddy+no-keepalive").
const NoKeepAliveVariant = "+no-keepalive"

// imageRef is a container image reference: [host[:port]/]path[:tag][@digest]
// (the grammar of github.com/distribution/reference).
var imageRef = func() *regexp.Regexp {
	const (
		host   = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*(?::[0-9]+)?`
		path   = `[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*`
		tag    = `[\w][\w.-]{0,127}`
		digest = `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}`
	)
	return regexp.MustCompile(`^(?:` + host + `/)?` + path + `(?:/` + path + `)*(?::` + tag + `)?(?:@` + digest + `)?$`)
}()

// RevisionPrefix starts a candidate that is an Istio revision
// ("rev=canary"). An image reference has no "=", so the two cannot be
// confused.
const RevisionPrefix = "rev="

// ParseCandidate reads a candidate as -candidate writes it on a cluster:
// IMAGE, IMAGE+no-keepalive, or +no-keepalive (the reference's image with
// keep-alive between sidecars off), or rev=NAME (an Istio revision). ""
// is no candidate (nil).
func ParseCandidate(spec string) (*Candidate, error) {
	if spec == "" {
		return nil, nil
	}
	if rev, ok := strings.CutPrefix(spec, RevisionPrefix); ok {
		if rev == "" {
			return nil, fmt.Errorf("-candidate=%s: no revision name (want e.g. %scanary, the revision istioctl install --revision=canary installs)", spec, RevisionPrefix)
		}
		if msgs := validation.IsDNS1123Label(rev); len(msgs) > 0 {
			return nil, fmt.Errorf("-candidate=%s: %q is not a revision name: %s", spec, rev, strings.Join(msgs, "; "))
		}
		return &Candidate{Revision: rev}, nil
	}
	c := &Candidate{Image: spec}
	if img, ok := strings.CutSuffix(spec, NoKeepAliveVariant); ok {
		c.Image, c.NoKeepAlive = img, true
	}
	if c.Image != "" && !imageRef.MatchString(c.Image) {
		return nil, fmt.Errorf("-candidate=%s: %q is not an image reference (want e.g. registry.local/nginx:1.27, optionally ending in %s, or %s alone for the reference's image)",
			spec, c.Image, NoKeepAliveVariant, NoKeepAliveVariant)
	}
	return c, nil
}

// String is the candidate as -candidate writes it.
func (c *Candidate) String() string {
	switch {
	case c == nil:
		return ""
	case c.Revision != "":
		return RevisionPrefix + c.Revision
	case c.NoKeepAlive:
		return c.Image + NoKeepAliveVariant
	}
	return c.Image
}

// CheckCandidate parses spec (see ParseCandidate) and checks that mesh m
// can run it beside its reference, before anything is deployed.
func CheckCandidate(m mesh.Mesh, spec string) (*Candidate, error) {
	c, err := ParseCandidate(spec)
	if err != nil || c == nil {
		return c, err
	}
	return c, c.check(m)
}

// check refuses a candidate mesh m cannot run beside its reference.
func (c *Candidate) check(m mesh.Mesh) error {
	if c.Revision != "" {
		return c.checkRevision(m)
	}
	sp, ok := m.(mesh.SidecarProxy)
	if !ok {
		also := ""
		if _, ok := m.(mesh.Revisioned); ok {
			also = "with -mesh=" + m.Name() + ", gate another revision with -candidate=" + RevisionPrefix + "NAME; "
		}
		return fmt.Errorf("-candidate=%s: on a cluster only the bring-your-own sidecar mesh (-mesh=sidecar) runs a candidate sidecar beside the reference, not -mesh=%s (%sfor another mesh, gate against a stored run with -reference)",
			c, m.Name(), also)
	}
	_, _, args := sp.Proxy()
	switch {
	case c.NoKeepAlive && !sp.Wired():
		return fmt.Errorf("-candidate=%s: %s is a variant of the nginx configuration meshbench renders, and this sidecar brings its own wiring", c, NoKeepAliveVariant)
	case c.NoKeepAlive && len(args) > 0:
		return fmt.Errorf("-candidate=%s: %s is a variant of the nginx configuration meshbench renders, which the sidecar's own arguments %q replace", c, NoKeepAliveVariant, args)
	}
	return nil
}

// checkRevision refuses a revision candidate on a mesh without revisions
// that run side by side.
func (c *Candidate) checkRevision(m mesh.Mesh) error {
	if _, ok := m.(mesh.Revisioned); ok {
		return nil
	}
	if m.Name() == "istio-ambient" {
		return fmt.Errorf("-candidate=%s: Istio ambient runs one ztunnel per node for every revision, so two revisions' data planes cannot run side by side; "+
			"gate an ambient upgrade against a stored run with -reference (a run before the upgrade)", c)
	}
	return fmt.Errorf("-candidate=%s: a revision is an Istio control plane (istio.io/rev), only with -mesh=istio, not -mesh=%s (for another mesh, gate against a stored run with -reference)",
		c, m.Name())
}

// describe says what the candidate runs, against reference image ref.
func (c *Candidate) describe(ref string) string {
	s := cmp.Or(c.Image, ref)
	if c.NoKeepAlive {
		s += ", no keep-alive between sidecars"
	}
	return s
}

// meshedArms are the arms with the mesh on, in interleaving order: the
// meshed arm, or the reference and the candidate.
func (t *Target) meshedArms() []*arm {
	if t.o.Candidate == nil {
		return []*arm{t.arms[target.Meshed]}
	}
	return []*arm{t.arms[target.Reference], t.arms[target.Candidate]}
}

// Arms implements target.Armed: baseline and meshed, or, with a
// candidate, baseline, reference and candidate.
func (t *Target) Arms() []target.Arm {
	if t.o.Candidate == nil {
		return slices.Clone(target.Arms)
	}
	return slices.Clone(target.UpgradeArms)
}

// newMeshedArms names the meshed arms' namespaces.
func (t *Target) newMeshedArms() []*arm {
	names := []target.Arm{target.Meshed}
	if t.o.Candidate != nil {
		names = []target.Arm{target.Reference, target.Candidate}
	}
	out := make([]*arm, len(names))
	for i, n := range names {
		out[i] = &arm{name: n, ns: t.ns(string(n))}
	}
	if cm := t.candidateMesh(); cm != nil {
		out[1].mesh = cm
	}
	return out
}

// wireCandidate gives the candidate arm its sidecar: the reference's
// wiring with the candidate's image and configuration when the harness
// wires the sidecar (ref), else the candidate's image for the injected
// proxy container.
func (t *Target) wireCandidate(ref *manifests.Sidecar) {
	a, c := t.arms[target.Candidate], t.o.Candidate
	if a == nil || c == nil {
		return
	}
	if ref == nil {
		a.image = c.Image
		return
	}
	p := *ref
	p.Image = cmp.Or(c.Image, p.Image)
	p.NoKeepAlive = c.NoKeepAlive
	a.proxy = &p
}

// referenceImage is the reference arm's sidecar image: the mesh's, else
// the workloads' nginx image the harness runs it with.
func (t *Target) referenceImage() string {
	if sp, ok := t.o.Mesh.(mesh.SidecarProxy); ok {
		if _, img, _ := sp.Proxy(); img != "" {
			return img
		}
	}
	return cmp.Or(t.o.Workloads.Images.Nginx, manifests.DefaultImages.Nginx)
}

// armsConfig describes the meshed arms of an upgrade gate for the
// environment: arm.reference and arm.candidate.
func (t *Target) armsConfig(cfg map[string]string) {
	switch {
	case t.o.Candidate == nil:
		return
	case t.o.Candidate.Revision != "":
		t.revisionsConfig(cfg)
		return
	}
	ref := t.referenceImage()
	cfg["arm."+string(target.Reference)] = ref
	cfg["arm."+string(target.Candidate)] = t.o.Candidate.describe(ref)
}

// setProxyImage sets the image of the proxy container name in tmpl.
func setProxyImage(tmpl *corev1.PodTemplateSpec, name, image string) error {
	for i := range tmpl.Spec.Containers {
		if c := &tmpl.Spec.Containers[i]; c.Name == name {
			c.Image = image
			return nil
		}
	}
	return fmt.Errorf("no %s container to run the candidate image %s", name, image)
}
