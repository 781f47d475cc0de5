package mesh

import (
	"context"

	"k8s.io/client-go/kubernetes"
)

func init() {
	register(Adapter{Name: "none", Rank: 0, New: func(config) Mesh { return none{} }})
}

// none is no mesh. Its "meshed" arm is a second baseline: a run with it is
// an A/A run, which measures how much two identical arms drift apart.
type none struct{}

// Name is "none" (Mesh).
func (none) Name() string { return "none" }

// Detect always finds "none" installed, with no proxy threads (Mesh).
func (none) Detect(context.Context, kubernetes.Interface) (Info, error) {
	return Info{Mesh: "none", Installed: true, Threads: Threads{Mode: "unknown", Source: "no proxy"}}, nil
}

// Enable does nothing: there is nothing to inject.
func (none) Enable(context.Context, kubernetes.Interface, string) error { return nil }

// Roles are empty: no container or pod counts as the mesh's (Mesh).
func (none) Roles() Roles { return Roles{} }

// Verify checks, for both arms, that no pod runs any mesh's proxy.
func (none) Verify(ctx context.Context, c kubernetes.Interface, namespace string, meshed bool) (Verification, error) {
	v, err := verifyBaseline(ctx, c, "none", namespace)
	v.Meshed = meshed
	if meshed {
		v.Notes = append(v.Notes, "mesh none: the meshed arm is a second baseline (an A/A run)")
		var ve *VerifyError
		if asVerifyError(err, &ve) {
			ve.Meshed = true
		}
	}
	return v, err
}
