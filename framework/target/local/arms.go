package local

import (
	"context"
	"fmt"
	"strings"

	"github.com/meshbench/meshbench/framework/target"
)

// meshArm is one meshed arm: its sidecar, built, and its configuration
// variant.
type meshArm struct {
	arm  target.Arm
	spec string // as the flag wrote it
	sc   Sidecar
	bin  string
	// noKeepAlive opens a new mTLS connection for every request between
	// sidecars: a configuration that costs several times the CPU per
	// request, a gross regression to gate.
	noKeepAlive bool
	// accessLog writes an access log line for every request each sidecar
	// serves, to a file, as a mesh with access logging turned on does: a
	// modest, real regression in CPU per request.
	accessLog bool
}

// The configuration variants a sidecar spec can end in, in any order.
const (
	noKeepAliveVariant = "+no-keepalive"
	accessLogVariant   = "+access-log"
)

// parseMeshArm reads "name[@version][+no-keepalive][+access-log]".
func parseMeshArm(arm target.Arm, spec string) (meshArm, error) {
	m := meshArm{arm: arm, spec: spec}
	ref, variant := spec, ""
	for {
		if before, ok := strings.CutSuffix(ref, noKeepAliveVariant); ok && !m.noKeepAlive {
			ref, m.noKeepAlive, variant = before, true, noKeepAliveVariant
		} else if before, ok := strings.CutSuffix(ref, accessLogVariant); ok && !m.accessLog {
			ref, m.accessLog, variant = before, true, accessLogVariant
		} else {
			break
		}
	}
	r, err := ParseSidecarRef(ref)
	if err != nil {
		return meshArm{}, err
	}
	if m.sc, err = SidecarFor(r); err != nil {
		return meshArm{}, err
	}
	if _, ok := plain(m.sc).(variants); variant != "" && !ok {
		return meshArm{}, fmt.Errorf("sidecar %q: %s has no %s variant; only caddy does", spec, r.Name, variant)
	}
	return m, nil
}

// variants is a sidecar that can render the configuration variants.
type variants interface{ variants() }

// meshArms is one meshed arm, or, with a candidate, the reference (the
// -sidecar proxy) and the candidate.
func meshArms(sidecar, candidate string) ([]meshArm, error) {
	if candidate == "" {
		m, err := parseMeshArm(target.Meshed, sidecar)
		return []meshArm{m}, err
	}
	ref, err := parseMeshArm(target.Reference, sidecar)
	if err != nil {
		return nil, err
	}
	cand, err := parseMeshArm(target.Candidate, candidate)
	if err != nil {
		return nil, fmt.Errorf("candidate: %w", err)
	}
	return []meshArm{ref, cand}, nil
}

func (m meshArm) describe(ctx context.Context) string {
	s := m.sc.Name() + " " + m.sc.Version(ctx, m.bin)
	if m.noKeepAlive {
		s += ", no keep-alive between sidecars"
	}
	if m.accessLog {
		s += ", an access log line per request"
	}
	return s
}

// Arms implements target.Armed: baseline and meshed, or baseline,
// reference and candidate.
func (t *Target) Arms() []target.Arm {
	arms := []target.Arm{target.Baseline}
	for _, m := range t.meshes {
		arms = append(arms, m.arm)
	}
	return arms
}

// sidecarNames lists the meshed arms' sidecars.
func (t *Target) sidecarNames() string {
	var names []string
	for _, m := range t.meshes {
		names = append(names, m.spec)
	}
	return strings.Join(names, " and ")
}

// CheckSidecars checks -sidecar and -candidate before anything is built.
func CheckSidecars(sidecar, candidate string) error {
	_, err := meshArms(sidecar, candidate)
	return err
}
