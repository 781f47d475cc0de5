package target

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/load"
)

// TestWorkloadFlow normalizes a copy of the scenario's flow and wants a
// frontend for every fan-out.
func TestWorkloadFlow(t *testing.T) {
	f := &load.Flow{Users: 2, Think: time.Millisecond, Steps: []load.Step{{Name: "home"}, {Name: "cart", Fanout: 3}}}
	w := Workload{Path: TwoHop, Flow: f}
	require.NoError(t, w.Normalize(Workload{}))
	assert.Equal(t, "/", w.Flow.Steps[0].Path)
	assert.Equal(t, 2.0, w.Flow.SpawnRate)
	assert.Empty(t, f.Steps[0].Path, "the scenario's flow is not written to")
	assert.Equal(t, w.Deployment(), (&Workload{Path: TwoHop, Protocol: load.HTTP1, Replicas: 1, Placement: InMesh, Loadgens: 1}).Deployment(),
		"a flow deploys nothing of its own")

	w = Workload{Path: OneHop, Flow: f}
	assert.EqualError(t, w.Normalize(Workload{}), "flow step cart: fan-out 3 needs a frontend on the path; one-hop has none (use two-hop)")
	w = Workload{Flow: &load.Flow{}}
	assert.EqualError(t, w.Normalize(Workload{}), "flow: steps: at least one")
}
