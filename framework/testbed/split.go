package testbed

import (
	"context"
	"errors"
	"fmt"
)

// Split is a target whose baseline arm runs on one target and whose other
// arms run on another, interleaved as the suite interleaves any arms. It is
// the baseline of a mesh that is on for a whole cluster (Cilium's
// transparent encryption): no namespace of the meshed cluster is without
// it, so the baseline is a second cluster built from the same config.
type Split struct {
	// Baseline runs the baseline arm; Meshed runs every other arm.
	Baseline, Meshed Target
	// Where says where the baseline runs, for the results
	// (Environment.Baseline), e.g. "kind cluster mb-baseline (bridge CNI)".
	Where string
}

// Name is the meshed target's.
func (s *Split) Name() string { return s.Meshed.Name() }

// Environment is the meshed target's, with Baseline saying where the
// baseline ran and what differs there.
func (s *Split) Environment() Environment {
	e := s.Meshed.Environment()
	b := s.Baseline.Environment()
	e.Baseline = s.Where + ", measured interleaved with the meshed arm"
	if b.Nodes != e.Nodes || b.Kubernetes != e.Kubernetes || b.Kernel != e.Kernel {
		e.Baseline += fmt.Sprintf(" (baseline: %d nodes, Kubernetes %s, kernel %s)", b.Nodes, b.Kubernetes, b.Kernel)
	}
	return e
}

// Run runs s on the baseline target for the baseline arm, else on the
// meshed target.
func (s *Split) Run(ctx context.Context, sp Spec) (*Run, error) {
	if sp.Arm == Baseline {
		return s.Baseline.Run(ctx, sp)
	}
	return s.Meshed.Run(ctx, sp)
}

// Supports is what both targets support.
func (s *Split) Supports(w Workload, f *Fault) error {
	var errs []error
	for _, t := range []Target{s.Baseline, s.Meshed} {
		if sp, ok := t.(Supporter); ok {
			if err := sp.Supports(w, f); err != nil && (len(errs) == 0 || errs[0].Error() != err.Error()) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Close closes both targets, the meshed one first.
func (s *Split) Close(ctx context.Context) error {
	return errors.Join(s.Meshed.Close(ctx), s.Baseline.Close(ctx))
}
