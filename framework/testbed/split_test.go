package testbed_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/testbed"
)

// fakeTarget records the arms it ran and refuses what it is told to.
type fakeTarget struct {
	name   string
	env    testbed.Environment
	ran    []testbed.Arm
	closed bool
	refuse error
}

func (f *fakeTarget) Name() string                                    { return f.name }
func (f *fakeTarget) Environment() testbed.Environment                { return f.env }
func (f *fakeTarget) Close(context.Context) error                     { f.closed = true; return nil }
func (f *fakeTarget) Supports(testbed.Workload, *testbed.Fault) error { return f.refuse }
func (f *fakeTarget) Run(_ context.Context, s testbed.Spec) (*testbed.Run, error) {
	f.ran = append(f.ran, s.Arm)
	return &testbed.Run{Arm: s.Arm}, nil
}

func TestSplitRunsTheBaselineElsewhere(t *testing.T) {
	base := &fakeTarget{name: "kind", env: testbed.Environment{Nodes: 4, Kubernetes: "v1.36.3", Kernel: "6.1"}}
	meshed := &fakeTarget{name: "kind", env: testbed.Environment{Nodes: 4, Kubernetes: "v1.36.3", Kernel: "6.1",
		Mesh: testbed.MeshInfo{Name: "cilium"}}}
	s := &testbed.Split{Baseline: base, Meshed: meshed, Where: "kind cluster mb-baseline (bridge CNI, no mesh)"}
	for _, a := range []testbed.Arm{testbed.Baseline, testbed.Meshed, testbed.Baseline} {
		r, err := s.Run(context.Background(), testbed.Spec{Arm: a})
		require.NoError(t, err)
		assert.Equal(t, a, r.Arm)
	}
	assert.Equal(t, []testbed.Arm{testbed.Baseline, testbed.Baseline}, base.ran)
	assert.Equal(t, []testbed.Arm{testbed.Meshed}, meshed.ran)

	env := s.Environment()
	assert.Equal(t, "cilium", env.Mesh.Name)
	assert.Equal(t, "kind cluster mb-baseline (bridge CNI, no mesh), measured interleaved with the meshed arm", env.Baseline)
	base.env.Nodes = 3
	assert.Equal(t, "kind cluster mb-baseline (bridge CNI, no mesh), measured interleaved with the meshed arm "+
		"(baseline: 3 nodes, Kubernetes v1.36.3, kernel 6.1)", s.Environment().Baseline)

	assert.NoError(t, s.Supports(testbed.Workload{}, nil))
	base.refuse = errors.New("gRPC needs the mbapp image")
	meshed.refuse = errors.New("gRPC needs the mbapp image")
	assert.EqualError(t, s.Supports(testbed.Workload{}, nil), "gRPC needs the mbapp image", "said once")

	require.NoError(t, s.Close(context.Background()))
	assert.True(t, base.closed && meshed.closed)
}
