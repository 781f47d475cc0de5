package suite

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/testbed"
)

// grpcOnly is a target whose backends serve gRPC alone, as a cluster's
// do with -protocol=grpc: it refuses any other protocol.
type grpcOnly struct{ seen []testbed.Workload }

func (g *grpcOnly) Name() string                                            { return "kind" }
func (g *grpcOnly) Environment() testbed.Environment                        { return testbed.Environment{} }
func (g *grpcOnly) Close(context.Context) error                             { return nil }
func (g *grpcOnly) Run(context.Context, testbed.Spec) (*testbed.Run, error) { return nil, nil }
func (g *grpcOnly) Supports(w testbed.Workload, _ *testbed.Fault) error {
	g.seen = append(g.seen, w)
	if w.Protocol != load.GRPC {
		return errors.New("protocol " + string(w.Protocol) + ": gRPC backends")
	}
	return nil
}

// A scenario that names no protocol is checked as it will run, with
// -protocol filled in: it runs on gRPC backends with -protocol=grpc and is
// skipped, saying why, without it.
func TestSkipChecksTheScenarioAsItWillRun(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		skipped bool
	}{{[]string{"-protocol", "grpc"}, false}, {nil, true}} {
		cfg, err := normalizeFlags(t, tc.args...)
		require.NoError(t, err)
		s := NewWithConfig(cfg)
		tg := &grpcOnly{}
		ran := false
		testing.Benchmark(func(b *testing.B) {
			s.skipUnsupported(b, Scenario{Name: "BenchmarkOneHop"}, tg)
			ran = true // Skipf ends the goroutine before this
		})
		require.NotEmpty(t, tg.seen)
		assert.Equal(t, cfg.Protocol, tg.seen[0].Protocol, "the check sees -protocol")
		assert.Equal(t, tc.skipped, !ran, "args %v", tc.args)
	}
}
