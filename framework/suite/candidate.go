package suite

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/target/kube"
)

// checkClusterCandidate checks -candidate on a cluster: an image and/or a
// configuration variant of the bring-your-own sidecar mesh's sidecar, or
// an Istio revision (rev=NAME) with -mesh=istio: the meshes whose two
// data planes run side by side there.
func (c *Config) checkClusterCandidate() []error {
	if c.Candidate == "" {
		return nil
	}
	m, err := mesh.New(c.Mesh, c.MeshOptions()...)
	if err != nil {
		return nil // checkMesh says why
	}
	if _, err := kube.CheckCandidate(m, c.Candidate); err != nil {
		return []error{err}
	}
	return nil
}

// checkLocalCandidate refuses an Istio revision candidate on the local
// target.
func (c *Config) checkLocalCandidate() error {
	if strings.HasPrefix(c.Candidate, kube.RevisionPrefix) {
		return fmt.Errorf("-candidate=%s: an Istio revision runs on a cluster only (-target=kind or -target=remote, with -mesh=istio)", c.Candidate)
	}
	return nil
}

// kubeCandidate is -candidate for the kube target; nil without one.
func (c *Config) kubeCandidate() (*kube.Candidate, error) {
	if c.Target == "local" {
		return nil, nil
	}
	return kube.ParseCandidate(c.Candidate)
}

// candidateImage is the candidate's sidecar image on a cluster when it
// has one of its own, to be loaded into kind's nodes; "" otherwise.
func (c *Config) candidateImage() string {
	cand, err := c.kubeCandidate()
	if err != nil || cand == nil {
		return ""
	}
	return cand.Image
}

// gateArms names the upgrade gate's reference and candidate: on the local
// target -sidecar and -candidate; on a cluster the sidecar mesh's image
// (-nginx-image) and the candidate's, with its configuration variant, or
// the Istio revisions (-mesh-revision and -candidate=rev=NAME).
func (c *Config) gateArms() (reference, candidate string) {
	cand, err := c.kubeCandidate()
	if err != nil || cand == nil {
		return c.Sidecar, c.Candidate
	}
	if cand.Revision != "" {
		reference = "the default injector (istio-injection=enabled)"
		if c.MeshRevision != "" {
			reference = kube.RevisionPrefix + c.MeshRevision
		}
		return reference, cand.String()
	}
	candidate = cmp.Or(cand.Image, c.NginxImage)
	if cand.NoKeepAlive {
		candidate += kube.NoKeepAliveVariant
	}
	return c.NginxImage, candidate
}
