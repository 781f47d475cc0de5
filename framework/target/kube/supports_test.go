package kube

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/target"
)

// TestSupportsProtocols: h2 runs on the nginx workloads (the loadgen's hop),
// gRPC is skipped with what it needs.
func TestSupportsProtocols(t *testing.T) {
	tg := &Target{o: Options{Placement: InMesh, Loadgens: 1}}
	assert.NoError(t, tg.Supports(target.Workload{Protocol: load.H2}, nil))
	assert.EqualError(t, tg.Supports(target.Workload{Protocol: load.GRPC}, nil), "gRPC needs the mbapp backend image on this cluster")
}
