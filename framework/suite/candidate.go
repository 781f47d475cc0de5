package suite

import (
	"cmp"
	"errors"
	"fmt"
	"strings"

	"github.com/meshbench/meshbench/framework/arms"
	"github.com/meshbench/meshbench/framework/testbed/kube"
	"github.com/meshbench/meshbench/framework/testbed/local"
)

// checkLocalSidecars parses -sidecar and -candidate on the local target
// into SidecarSpec and CandidateSpec, and checks that it runs them, before
// anything is built: the reference first, then the candidate.
func (c *Config) checkLocalSidecars() error {
	if strings.HasPrefix(c.Candidate, arms.RevisionPrefix) {
		return fmt.Errorf("-candidate=%s: an Istio revision runs on a cluster only (-target=kind or -target=remote, with -mesh=istio)", c.Candidate)
	}
	ref, err := localSidecar(c.Sidecar)
	if err != nil {
		return sidecarsError(err)
	}
	c.SidecarSpec, c.CandidateSpec = ref, nil
	if c.Candidate == "" {
		return nil
	}
	cand, err := localSidecar(c.Candidate)
	if err != nil {
		return sidecarsError(fmt.Errorf("candidate: %w", err))
	}
	c.CandidateSpec = &cand
	return nil
}

// localSidecar parses spec and checks that the local target runs it.
func localSidecar(spec string) (arms.Spec, error) {
	s, err := arms.ParseLocal(spec, local.Proxies())
	if err != nil {
		return arms.Spec{}, err
	}
	return s, local.CheckSidecar(s)
}

// sidecarsError names the flags of a local sidecar spec err refuses.
func sidecarsError(err error) error {
	if ue := (*arms.UnversionedError)(nil); errors.As(err, &ue) {
		return fmt.Errorf("-sidecar/-candidate: %w and write -sidecar=%s", err, ue.Name)
	}
	return fmt.Errorf("-sidecar/-candidate: %w", err)
}

// checkClusterCandidate parses -candidate on a cluster into CandidateSpec
// and checks it: an image and/or a configuration variant of the
// bring-your-own sidecar mesh's sidecar, or an Istio revision (rev=NAME)
// with -mesh=istio: the meshes whose two data planes run side by side
// there.
func (c *Config) checkClusterCandidate() []error {
	c.SidecarSpec, c.CandidateSpec = arms.Spec{}, nil
	if c.Candidate == "" {
		return nil
	}
	m, err := c.NewMesh()
	if err != nil {
		return nil // checkMesh says why
	}
	cand, err := arms.ParseCluster(c.Candidate)
	if err != nil {
		return []error{fmt.Errorf("-candidate=%s: %w", c.Candidate, err)}
	}
	if err := kube.CheckCandidate(m, cand); err != nil {
		return []error{candidateError(err)}
	}
	c.CandidateSpec = &cand
	return nil
}

// candidateError says, in flags, why kube.CheckCandidate refused the
// candidate.
func candidateError(err error) error {
	var ce *kube.CandidateError
	if !errors.As(err, &ce) {
		return fmt.Errorf("-candidate: %w", err)
	}
	const stored = "gate against a stored run with -reference"
	switch c := ce.Candidate.String(); ce.Why {
	case kube.NotSidecarMesh:
		also := ""
		if ce.Revisioned {
			also = "with -mesh=" + ce.Mesh + ", gate another revision with -candidate=" + arms.RevisionPrefix + "NAME; "
		}
		return fmt.Errorf("-candidate=%s: on a cluster only the bring-your-own sidecar mesh (-mesh=sidecar) runs a candidate sidecar beside the reference, not -mesh=%s (%sfor another mesh, %s)",
			c, ce.Mesh, also, stored)
	case kube.AmbientRevision:
		return fmt.Errorf("-candidate=%s: %s; gate an ambient upgrade against a stored run with -reference (a run before the upgrade)", c, ce.Reason())
	case kube.NotRevisioned:
		return fmt.Errorf("-candidate=%s: a revision is an Istio control plane (istio.io/rev), only with -mesh=istio, not -mesh=%s (for another mesh, %s)", c, ce.Mesh, stored)
	default:
		return fmt.Errorf("-candidate=%s: %s", c, ce.Reason())
	}
}

// candidateImage is the candidate's sidecar image on a cluster when it
// has one of its own, to be loaded into kind's nodes; "" otherwise.
func (c *Config) candidateImage() string {
	if c.Target == "local" || c.CandidateSpec == nil {
		return ""
	}
	return c.CandidateSpec.Image
}

// gateArms names the upgrade gate's reference and candidate: on the local
// target -sidecar and -candidate; on a cluster the sidecar mesh's image
// (-nginx-image) and the candidate's, with its configuration variant, or
// the Istio revisions (-mesh-revision and -candidate=rev=NAME).
func (c *Config) gateArms() (reference, candidate string) {
	cand := c.CandidateSpec
	if c.Target == "local" || cand == nil {
		return c.Sidecar, c.Candidate
	}
	if cand.Revision != "" {
		reference = "the default injector (istio-injection=enabled)"
		if c.MeshRevision != "" {
			reference = arms.RevisionPrefix + c.MeshRevision
		}
		return reference, cand.String()
	}
	return c.NginxImage, arms.Spec{Image: cmp.Or(cand.Image, c.NginxImage), Variants: cand.Variants}.String()
}
