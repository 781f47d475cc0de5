package testbed

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

// TestWorkloadNewConnections: a client that opens a new connection per
// request is copied into the load's options, deploys nothing of its own,
// and is refused where its requests share a connection anyway.
func TestWorkloadNewConnections(t *testing.T) {
	w := Workload{RequestSize: 64, NewConnections: true}
	require.NoError(t, w.Normalize(Workload{}))
	o := load.Options{URL: "http://x:1/", Protocol: load.H2, Concurrency: 8}
	w.SetClient(&o)
	assert.Equal(t, load.Options{URL: "http://x:1/", Protocol: load.HTTP1, RequestSize: 64, NewConnections: true, Concurrency: 8}, o)
	kept := Workload{}
	require.NoError(t, kept.Normalize(Workload{}))
	assert.Equal(t, kept.Deployment(), w.Deployment(), "the client's connections deploy nothing")
	w = Workload{}
	require.NoError(t, w.Normalize(Workload{NewConnections: true}))
	assert.True(t, w.NewConnections, "the target's default")

	w = Workload{Protocol: load.GRPC, NewConnections: true}
	assert.EqualError(t, w.Normalize(Workload{}), "new connections: protocol grpc multiplexes requests over one connection; a new connection per request is http1 only")
	w = Workload{NewConnections: true, Flow: &load.Flow{Steps: []load.Step{{Name: "home"}}}}
	assert.EqualError(t, w.Normalize(Workload{}), "new connections: a flow's users keep their connections alive; a new connection per request drives connections, not a flow")
}

// TestFaultActions: a fault reads like the scenario, whatever it does;
// an action no target knows is refused with the known ones.
func TestFaultActions(t *testing.T) {
	assert.Equal(t, "kill backend's sidecar after 1s", Fault{Action: Kill, Workload: "backend", Sidecar: true, After: time.Second}.String())
	assert.Equal(t, "restart backend's sidecar after 1s", Fault{Action: Restart, Workload: "backend", Sidecar: true, After: time.Second}.String())
	assert.Equal(t, "restart frontend after 250ms", Fault{Action: Restart, Workload: "frontend", After: 250 * time.Millisecond}.String())
	assert.Equal(t, []Action{Kill, Restart}, Actions())
	for _, a := range Actions() {
		assert.NoError(t, a.Validate(), a)
	}
	assert.EqualError(t, Action("pause").Validate(), `fault action "pause" is unknown: want kill or restart`)
	assert.EqualError(t, Action("").Validate(), `fault action "" is unknown: want kill or restart`)
	assert.Equal(t, "killed", Kill.Past())
	assert.Equal(t, "restarted", Restart.Past())
}
