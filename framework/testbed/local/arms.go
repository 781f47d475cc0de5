package local

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/meshbench/meshbench/framework/arms"
	"github.com/meshbench/meshbench/framework/testbed"
)

// meshArm is one meshed arm: its sidecar, built, and its configuration
// variants (spec.Variants): arms.NoKeepAlive opens a new mTLS connection
// for every request between sidecars, arms.AccessLog writes an access log
// line for every request each sidecar serves, to a file.
type meshArm struct {
	arm  testbed.Arm
	spec arms.Spec
	sc   Sidecar
	bin  string
}

// newMeshArm is arm a with the sidecar spec s names.
func newMeshArm(a testbed.Arm, s arms.Spec) (meshArm, error) {
	sc, err := SidecarFor(SidecarRef{Name: s.Proxy, Version: s.Version})
	if err != nil {
		return meshArm{}, err
	}
	if _, ok := plain(sc).(variants); len(s.Variants) > 0 && !ok {
		return meshArm{}, fmt.Errorf("sidecar %q: %s has no %s variant; only caddy does", s, s.Proxy, s.Variants[0])
	}
	return meshArm{arm: a, spec: s, sc: sc}, nil
}

// variants is a sidecar that can render the configuration variants.
type variants interface{ variants() }

// meshArms is one meshed arm, or, with a candidate, the reference (the
// Sidecar option's proxy) and the candidate.
func meshArms(sidecar arms.Spec, candidate *arms.Spec) ([]meshArm, error) {
	if candidate == nil {
		m, err := newMeshArm(testbed.Meshed, sidecar)
		return []meshArm{m}, err
	}
	ref, err := newMeshArm(testbed.Reference, sidecar)
	if err != nil {
		return nil, err
	}
	cand, err := newMeshArm(testbed.Candidate, *candidate)
	if err != nil {
		return nil, fmt.Errorf("candidate: %w", err)
	}
	return []meshArm{ref, cand}, nil
}

func (m meshArm) describe(ctx context.Context) string {
	s := m.sc.Name() + " " + m.sc.Version(ctx, m.bin)
	if m.spec.NoKeepAlive() {
		s += ", no keep-alive between sidecars"
	}
	if m.spec.AccessLog() {
		s += ", an access log line per request"
	}
	return s
}

// Arms implements testbed.Armed: baseline and meshed, or baseline,
// reference and candidate.
func (t *Target) Arms() []testbed.Arm {
	arms := []testbed.Arm{testbed.Baseline}
	for _, m := range t.meshes {
		arms = append(arms, m.arm)
	}
	return arms
}

// sidecarNames lists the meshed arms' sidecars.
func (t *Target) sidecarNames() string {
	var names []string
	for _, m := range t.meshes {
		names = append(names, m.spec.String())
	}
	return strings.Join(names, " and ")
}

// CheckSidecar checks that the local target runs the sidecar s names,
// with its variants, before anything is built.
func CheckSidecar(s arms.Spec) error {
	_, err := newMeshArm(testbed.Meshed, s)
	return err
}

// Proxies are the sidecars the local target runs, for arms.ParseLocal.
func Proxies() arms.Proxies {
	return arms.Proxies{Names: SidecarNames(), Versioned: slices.Sorted(maps.Keys(versionedModules))}
}
