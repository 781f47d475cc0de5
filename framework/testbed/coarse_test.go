package testbed_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/validity"
)

// BenchmarkServiceTime's windows of 2026-12-02, read in ticks: in the
// baseline arm the loadgen counted 5 of them and the app 4, both in the
// whole arm's CPU that the sidecars' is judged over; in the meshed arm a
// sidecar counted 9, and the loadgen's 6 are in no figure a limit reads.
// 10 ticks are enough.
func TestCoarseTicks(t *testing.T) {
	coarse := func(name string, ticks int) validity.Reason {
		return validity.New(validity.CPUCoarse, "%s counted %d ticks of 10 ms in the window, fewer than 10: each tick is over 10 %% of its CPU", name, ticks)
	}
	baseline := measure.Window{Usage: []measure.Usage{
		{Name: "loadgen", Role: measure.RoleLoadgen, CPUSeconds: 0.05},
		{Name: "baseline/backend", Role: measure.RoleApp, CPUSeconds: 0.04},
	}}
	assert.Equal(t, validity.Reasons{coarse("loadgen", 5), coarse("baseline/backend", 4)}, testbed.CoarseTicks(baseline))
	meshed := measure.Window{Usage: []measure.Usage{
		{Name: "loadgen", Role: measure.RoleLoadgen, CPUSeconds: 0.06},
		{Name: "meshed/loadgen-sidecar", Role: measure.RoleSidecar, CPUSeconds: 0.09},
		{Name: "meshed/backend-sidecar", Role: measure.RoleSidecar, CPUSeconds: 0.15},
		{Name: "meshed/backend", Role: measure.RoleApp, CPUSeconds: 0.1},
	}}
	assert.Equal(t, validity.Reasons{coarse("meshed/loadgen-sidecar", 9)}, testbed.CoarseTicks(meshed))
	meshed.Usage[1].CPUSeconds = 0.1
	assert.Nil(t, testbed.CoarseTicks(meshed))
}
