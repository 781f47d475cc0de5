package mesh

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
)

// sidecarLabel marks a namespace whose pod templates the harness injects the
// bring-your-own proxy into.
const sidecarLabel = "meshbench.io/sidecar"

// sidecar is a bring-your-own proxy: the harness adds a proxy container
// (default name mb-sidecar) from a given image and arguments to the meshed
// namespace's pod templates. It is always "installed"; its mTLS evidence is
// whatever the harness supplies with WithMTLSEvidence.
type sidecar struct {
	name, image string
	args        []string
	evidence    EvidenceFunc
}

func newSidecar(cfg config) *sidecar {
	name := cfg.sidecarName
	if name == "" {
		name = "mb-sidecar"
	}
	return &sidecar{name: name, image: cfg.sidecarImage, args: cfg.sidecarArgs, evidence: cfg.evidence}
}

func (s *sidecar) Name() string { return "sidecar" }

func (s *sidecar) Detect(context.Context, kubernetes.Interface) (Info, error) {
	return Info{
		Mesh:      "sidecar",
		Installed: true,
		Version:   imageTag(s.image),
		Config:    map[string]string{"container": s.name, "image": s.image},
		Threads:   Threads{Mode: "unknown", Source: "set by the proxy's own configuration"},
	}, nil
}

// Enable labels the namespace meshbench.io/sidecar=enabled.
func (s *sidecar) Enable(ctx context.Context, c kubernetes.Interface, namespace string) error {
	return setNamespaceMeta(ctx, c, namespace, map[string]*string{sidecarLabel: ptr("enabled")}, nil)
}

func (s *sidecar) Roles() Roles { return Roles{Sidecars: []string{s.name}} }

func (s *sidecar) Verify(ctx context.Context, c kubernetes.Interface, namespace string, meshed bool) (Verification, error) {
	if !meshed {
		return verifyBaseline(ctx, c, "sidecar", namespace, s.name)
	}
	return verifySidecars(ctx, c, "sidecar", namespace, s.name,
		"the harness injects it into the templates of a namespace labelled "+sidecarLabel+"=enabled; were they redeployed?", nil, nil)
}

// Inject adds the proxy container to a pod template; a template that
// already has it is left alone.
func (s *sidecar) Inject(t *corev1.PodTemplateSpec) error {
	if s.image == "" {
		return errors.New("sidecar: no proxy image (use WithSidecar)")
	}
	for _, ctr := range t.Spec.Containers {
		if ctr.Name == s.name {
			return nil
		}
	}
	t.Spec.Containers = append(t.Spec.Containers, corev1.Container{Name: s.name, Image: s.image, Args: s.args})
	return nil
}

// MTLS returns the evidence the harness supplies.
func (s *sidecar) MTLS(ctx context.Context, c kubernetes.Interface, namespace string) ([]Edge, error) {
	if s.evidence == nil {
		return nil, fmt.Errorf("sidecar: no mTLS evidence for %s: the harness must supply it with WithMTLSEvidence", namespace)
	}
	es, err := s.evidence(ctx, c, namespace)
	if err != nil {
		return nil, fmt.Errorf("sidecar: mTLS evidence for %s: %w", namespace, err)
	}
	return MergeEdges(es), nil
}
