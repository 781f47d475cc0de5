package target_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/target"
)

// fakeTarget records the arms it ran and refuses what it is told to.
type fakeTarget struct {
	name   string
	env    target.Environment
	ran    []target.Arm
	closed bool
	refuse error
}

func (f *fakeTarget) Name() string                                  { return f.name }
func (f *fakeTarget) Environment() target.Environment               { return f.env }
func (f *fakeTarget) Close(context.Context) error                   { f.closed = true; return nil }
func (f *fakeTarget) Supports(target.Workload, *target.Fault) error { return f.refuse }
func (f *fakeTarget) Run(_ context.Context, s target.Spec) (*target.Run, error) {
	f.ran = append(f.ran, s.Arm)
	return &target.Run{Arm: s.Arm}, nil
}

func TestSplitRunsTheBaselineElsewhere(t *testing.T) {
	base := &fakeTarget{name: "kind", env: target.Environment{Nodes: 4, Kubernetes: "v1.36.3", Kernel: "6.1"}}
	meshed := &fakeTarget{name: "kind", env: target.Environment{Nodes: 4, Kubernetes: "v1.36.3", Kernel: "6.1",
		Mesh: target.MeshInfo{Name: "cilium"}}}
	s := &target.Split{Baseline: base, Meshed: meshed, Where: "kind cluster mb-baseline (bridge CNI, no mesh)"}
	for _, a := range []target.Arm{target.Baseline, target.Meshed, target.Baseline} {
		r, err := s.Run(context.Background(), target.Spec{Arm: a})
		require.NoError(t, err)
		assert.Equal(t, a, r.Arm)
	}
	assert.Equal(t, []target.Arm{target.Baseline, target.Baseline}, base.ran)
	assert.Equal(t, []target.Arm{target.Meshed}, meshed.ran)

	env := s.Environment()
	assert.Equal(t, "cilium", env.Mesh.Name)
	assert.Equal(t, "kind cluster mb-baseline (bridge CNI, no mesh), measured interleaved with the meshed arm", env.Baseline)
	base.env.Nodes = 3
	assert.Equal(t, "kind cluster mb-baseline (bridge CNI, no mesh), measured interleaved with the meshed arm "+
		"(baseline: 3 nodes, Kubernetes v1.36.3, kernel 6.1)", s.Environment().Baseline)

	assert.NoError(t, s.Supports(target.Workload{}, nil))
	base.refuse = errors.New("gRPC needs the mbapp image")
	meshed.refuse = errors.New("gRPC needs the mbapp image")
	assert.EqualError(t, s.Supports(target.Workload{}, nil), "gRPC needs the mbapp image", "said once")

	require.NoError(t, s.Close(context.Background()))
	assert.True(t, base.closed && meshed.closed)
}
