package testbed

import (
	"context"

	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/validity"
)

// Measurement is the resources of one measured window, read by a target:
// started as the window opens and stopped as it closes, it gives the
// window's usage and, typed, the reasons not to trust it. The local
// target's reads /proc; the kube target's reads the kubelets' counters.
type Measurement interface {
	// Start takes the first reading, as the window opens.
	Start(ctx context.Context) error
	// Stop takes the second reading, as the window closes, and gives what
	// was used in between.
	Stop(ctx context.Context) (Measured, error)
}

// Measured is what a Measurement gives over its window.
type Measured struct {
	// Window is CPU and memory per process or container.
	Window measure.Window
	// Invalid are the reasons the measurement itself has not to trust
	// the window, such as a restart or a throttled proxy.
	Invalid validity.Reasons
	// Warnings are what a reader must know about the window, such as
	// CPU counters that were incomplete.
	Warnings validity.Reasons
	// CPUInvalid are the reasons not to trust the window's CPU figures
	// alone, such as counters whose span was mostly idle.
	CPUInvalid validity.Reasons
	// Nodes are the nodes of the arm's workloads over the window (Run.Nodes).
	Nodes map[string][]string
}

// Measured puts m on the run: its window as the run's resources, and its
// reasons, warnings and CPU reasons after the run's own. Judge then reads
// the window.
func (r *Run) Measured(m Measured) {
	r.Resources = m.Window
	r.Invalid = append(r.Invalid, m.Invalid...)
	r.Warnings = append(r.Warnings, m.Warnings...)
	r.CPUInvalid = append(r.CPUInvalid, m.CPUInvalid...)
	r.Nodes = m.Nodes
}
