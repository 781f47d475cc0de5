package kube

import (
	"cmp"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/arms"
	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/testbed"
)

// A candidate (Options.Candidate, an arms.Spec parsed by
// arms.ParseCluster) is an upgrade gate's candidate: a sidecar on the
// bring-your-own sidecar mesh, or an Istio revision. With one, the
// target's arms are baseline, reference and candidate: the reference is
// the mesh's sidecar as configured (with Istio, injected by the reference
// revision), the candidate the same sidecar with another image and/or
// configuration (or injected by the candidate revision), each meshed arm
// in its own namespace with its own workloads, run interleaved like the
// ordinary arms.

// Refusal is why a mesh cannot run a candidate beside its reference.
type Refusal int

// The refusals of CheckCandidate.
const (
	// NotSidecarMesh: only the bring-your-own sidecar mesh runs a
	// candidate sidecar beside the reference.
	NotSidecarMesh Refusal = iota + 1
	// VariantOwnWiring: a configuration variant is one of the nginx
	// configuration the harness renders, and the sidecar wires itself.
	VariantOwnWiring
	// VariantOwnArgs: the sidecar's own arguments replace the nginx
	// configuration the harness renders, variant and all.
	VariantOwnArgs
	// AmbientRevision: Istio ambient's ztunnel serves every revision, so
	// two revisions' data planes cannot run side by side.
	AmbientRevision
	// NotRevisioned: a revision candidate on a mesh without revisions.
	NotRevisioned
)

// CandidateError is a candidate a mesh cannot run beside its reference.
// Its message names no flag; the caller says where the candidate came
// from.
type CandidateError struct {
	// Candidate is the refused candidate.
	Candidate arms.Spec
	// Mesh is the mesh's name, e.g. "istio".
	Mesh string
	// Why is the refusal.
	Why Refusal
	// Revisioned is whether the mesh runs revisions side by side (a
	// NotSidecarMesh mesh can gate a revision instead).
	Revisioned bool
	// Args are the sidecar's own arguments (VariantOwnArgs).
	Args []string
}

// Error says which candidate, and why the mesh cannot run it.
func (e *CandidateError) Error() string {
	return "candidate " + e.Candidate.String() + ": " + e.Reason()
}

// Reason is why the mesh cannot run the candidate, without the candidate.
func (e *CandidateError) Reason() string {
	switch e.Why {
	case NotSidecarMesh:
		also := ""
		if e.Revisioned {
			also = "; it can gate another revision"
		}
		return "on a cluster only the bring-your-own sidecar mesh runs a candidate sidecar beside the reference, not " + e.Mesh + also
	case VariantOwnWiring:
		return fmt.Sprintf("%s is a variant of the nginx configuration meshbench renders, and this sidecar brings its own wiring", arms.NoKeepAlive)
	case VariantOwnArgs:
		return fmt.Sprintf("%s is a variant of the nginx configuration meshbench renders, which the sidecar's own arguments %q replace", arms.NoKeepAlive, e.Args)
	case AmbientRevision:
		return "Istio ambient runs one ztunnel per node for every revision, so two revisions' data planes cannot run side by side"
	}
	return "a revision is an Istio control plane (istio.io/rev), only with the istio mesh, not " + e.Mesh
}

// CheckCandidate checks that mesh m can run candidate c beside its
// reference, before anything is deployed; the error is a *CandidateError.
func CheckCandidate(m mesh.Mesh, c arms.Spec) error {
	refuse := func(why Refusal) error {
		_, revisioned := m.(mesh.Revisioned)
		return &CandidateError{Candidate: c, Mesh: m.Name(), Why: why, Revisioned: revisioned}
	}
	if c.Revision != "" {
		switch _, ok := m.(mesh.Revisioned); {
		case ok:
			return nil
		case m.Name() == "istio-ambient":
			return refuse(AmbientRevision)
		}
		return refuse(NotRevisioned)
	}
	sp, ok := m.(mesh.SidecarProxy)
	if !ok {
		return refuse(NotSidecarMesh)
	}
	_, _, args := sp.Proxy()
	switch {
	case c.NoKeepAlive() && !sp.Wired():
		return refuse(VariantOwnWiring)
	case c.NoKeepAlive() && len(args) > 0:
		e := refuse(VariantOwnArgs).(*CandidateError)
		e.Args = args
		return e
	}
	return nil
}

// describeCandidate says what candidate c runs, against reference image
// ref.
func describeCandidate(c *arms.Spec, ref string) string {
	s := cmp.Or(c.Image, ref)
	if c.NoKeepAlive() {
		s += ", no keep-alive between sidecars"
	}
	return s
}

// upgradeGate is the arms' side of an upgrade gate: which arms are
// meshed, the candidate's sidecar or revision, and how the environment
// describes them. Outside a gate (cand nil) it has one meshed arm.
type upgradeGate struct {
	mesh  mesh.Mesh  // the target's (the reference's)
	cand  *arms.Spec // Options.Candidate
	arms  map[testbed.Arm]*arm
	nginx string // Options.Workloads.Images.Nginx
	words testbed.Words
}

// gate is the target's upgrade gate.
func (t *Target) gate() upgradeGate {
	return upgradeGate{mesh: t.o.Mesh, cand: t.o.Candidate, arms: t.arms, nginx: t.o.Workloads.Images.Nginx, words: t.o.Words}
}

// meshedArms is upgradeGate.meshedArms of the target's gate.
func (t *Target) meshedArms() []*arm { return t.gate().meshedArms() }

// meshedArms are the arms with the mesh on, in interleaving order: the
// meshed arm, or the reference and the candidate.
func (g upgradeGate) meshedArms() []*arm {
	if g.cand == nil {
		return []*arm{g.arms[testbed.Meshed]}
	}
	return []*arm{g.arms[testbed.Reference], g.arms[testbed.Candidate]}
}

// Arms implements testbed.Armed: baseline and meshed, or, with a
// candidate, baseline, reference and candidate.
func (t *Target) Arms() []testbed.Arm {
	if t.o.Candidate == nil {
		return slices.Clone(testbed.Arms)
	}
	return slices.Clone(testbed.UpgradeArms)
}

// newMeshedArms names the meshed arms' namespaces with ns.
func (g upgradeGate) newMeshedArms(ns func(role string) string) []*arm {
	names := []testbed.Arm{testbed.Meshed}
	if g.cand != nil {
		names = []testbed.Arm{testbed.Reference, testbed.Candidate}
	}
	out := make([]*arm, len(names))
	for i, n := range names {
		out[i] = &arm{name: n, ns: ns(string(n))}
	}
	if cm := g.candidateMesh(); cm != nil {
		out[1].mesh = cm
	}
	return out
}

// wireCandidate gives the candidate arm its sidecar: the reference's
// wiring with the candidate's image and configuration when the harness
// wires the sidecar (ref), else the candidate's image for the injected
// proxy container.
func (g upgradeGate) wireCandidate(ref *manifests.Sidecar) {
	a, c := g.arms[testbed.Candidate], g.cand
	if a == nil || c == nil {
		return
	}
	if ref == nil {
		a.image = c.Image
		return
	}
	p := *ref
	p.Image = cmp.Or(c.Image, p.Image)
	p.NoKeepAlive = c.NoKeepAlive()
	a.proxy = &p
}

// referenceImage is the reference arm's sidecar image: the mesh's, else
// the workloads' nginx image the harness runs it with.
func (g upgradeGate) referenceImage() string {
	if sp, ok := g.mesh.(mesh.SidecarProxy); ok {
		if _, img, _ := sp.Proxy(); img != "" {
			return img
		}
	}
	return cmp.Or(g.nginx, manifests.DefaultImages.Nginx)
}

// armsConfig describes the meshed arms of an upgrade gate for the
// environment: arm.reference and arm.candidate; in a revision gate, with
// ref and cand, the two revisions' istiods as detected.
func (g upgradeGate) armsConfig(cfg map[string]string, ref, cand mesh.Info) {
	switch {
	case g.cand == nil:
		return
	case g.cand.Revision != "":
		g.revisionsConfig(cfg, ref, cand)
		return
	}
	img := g.referenceImage()
	cfg["arm."+string(testbed.Reference)] = img
	cfg["arm."+string(testbed.Candidate)] = describeCandidate(g.cand, img)
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
