package suite

import (
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/testbed/kind"
)

// A benchmark on a suite whose target was never set up fails naming the
// env func that did not run; it sets nothing up itself.
func TestABenchmarkWithoutSetUpTargetNamesIt(t *testing.T) {
	s := NewWithConfig(&Config{Target: "local"})
	s.Log = io.Discard
	built := 0
	s.NewTarget = func(context.Context, *Config, func(string, ...any)) (testbed.Target, error) {
		built++
		return &fakeTarget{}, nil
	}
	_, err := s.target()
	assert.EqualError(t, err, "no target: SetUpTarget did not run; list CheckFixtures, CreateCluster, LoadImages and SetUpTarget "+
		"in the environment's Setup, in that order, as benchmarks/main_test.go does (a test that drives a Suite without TestMain calls Suite.SetUp first)")
	assert.Zero(t, built)
}

// SetUpTarget in a binary that go test started without -bench sets
// nothing up, and a benchmark run from a test (testing.Benchmark) says
// so.
func TestABenchmarkAfterASkippedSetUpTargetSaysWhy(t *testing.T) {
	if benchmarking() {
		t.Skip("go test -bench sets the target up")
	}
	s := NewWithConfig(&Config{Target: "local"})
	s.Log = io.Discard
	built := 0
	s.NewTarget = func(context.Context, *Config, func(string, ...any)) (testbed.Target, error) {
		built++
		return &fakeTarget{}, nil
	}
	_, err := s.SetUpTarget(context.Background(), nil)
	require.NoError(t, err)
	_, err = s.target()
	assert.EqualError(t, err, "no target: go test ran without -bench, so SetUpTarget set nothing up; "+
		"a test that runs benchmarks itself (testing.Benchmark) drives a Suite of its own (NewWithConfig) and calls its SetUp first")
	assert.Zero(t, built)
}

// SetUp builds the target once, and a benchmark finds it: a second
// SetUp, or a benchmark, builds nothing more.
func TestSetUpBuildsTheTargetOnce(t *testing.T) {
	s := NewWithConfig(&Config{Target: "local"})
	s.Log = io.Discard
	built := 0
	tg := &fakeTarget{}
	s.NewTarget = func(context.Context, *Config, func(string, ...any)) (testbed.Target, error) {
		built++
		return tg, nil
	}
	require.NoError(t, s.SetUp(context.Background()))
	require.NoError(t, s.SetUp(context.Background()))
	got, err := s.target()
	require.NoError(t, err)
	assert.Same(t, tg, got)
	assert.Equal(t, 1, built)
}

// namedKind is a kind cluster that only has a name.
type namedKind struct{ kind.Cluster }

func (namedKind) Name() string { return "mb" }

// SetUpTarget on a Kubernetes target neither creates the cluster nor
// loads the images: without CreateCluster, or LoadImages, before it, it
// fails naming the one that did not run.
func TestSetUpTargetNeedsTheClusterAndItsImages(t *testing.T) {
	const order = "; list CheckFixtures, CreateCluster, LoadImages and SetUpTarget in the environment's Setup, in that order"
	s := NewWithConfig(&Config{Target: "kind", Mesh: "none"})
	s.Log = io.Discard
	err := s.setUpTarget(context.Background())
	assert.EqualError(t, err, "-target=kind: no cluster: CreateCluster did not run before SetUpTarget"+order)
	_, berr := s.target()
	assert.Equal(t, err, berr, "a benchmark fails with the set-up's error")

	s = NewWithConfig(&Config{Target: "kind", Mesh: "none"})
	s.Log = io.Discard
	s.cl.rest, s.cl.kind = &rest.Config{}, namedKind{}
	assert.EqualError(t, s.setUpTarget(context.Background()), "kind mb: the images are not loaded: LoadImages did not run before SetUpTarget"+order)
}
