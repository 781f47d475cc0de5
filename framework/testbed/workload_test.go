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
	o := LoadOptions(w, Window{Concurrency: 8})
	assert.Equal(t, load.Options{Protocol: load.HTTP1, RequestSize: 64, NewConnections: true, Concurrency: 8}, o)
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

// TestLoadOptions: the loadgen's options are the workload's client and
// the window's timing, every field, and the headers are a copy.
func TestLoadOptions(t *testing.T) {
	f := &load.Flow{Users: 2, Steps: []load.Step{{Name: "home"}}}
	w := Workload{Protocol: load.H2, RequestSize: 512, NewConnections: true, Headers: map[string]string{"X-Tenant": "a"}, Flow: f,
		ResponseSize: 1024, Replicas: 3, Loadgens: 2}
	win := Window{Concurrency: 4, QPS: 100, RateFraction: 0.25, Duration: 2 * time.Second, Warmup: -1, RateTolerance: 0.3, NoHDR: true}
	o := LoadOptions(w, win)
	assert.Equal(t, load.Options{Concurrency: 4, QPS: 100, RateFraction: 0.25, Duration: 2 * time.Second, Warmup: -1, RateTolerance: 0.3, NoHDR: true,
		Protocol: load.H2, RequestSize: 512, NewConnections: true, Headers: map[string]string{"X-Tenant": "a"}, Flow: f}, o)
	o.Headers["X-Meshbench-Src"] = "loadgen"
	assert.Equal(t, map[string]string{"X-Tenant": "a"}, w.Headers, "the workload's map is not written to")
}

// TestWorkloadHeaders: headers are the scenario's (or the target's
// default), copied, and refused with the field's name when they are not
// header names, would forge the path proof, or hold a line break.
func TestWorkloadHeaders(t *testing.T) {
	mine := map[string]string{"X-Tenant": "a", "authorization": "Bearer t"}
	w := Workload{Headers: mine}
	require.NoError(t, w.Normalize(Workload{Headers: map[string]string{"X-Default": "1"}}))
	assert.Equal(t, mine, w.Headers)
	w.Headers["X-Tenant"] = "b"
	assert.Equal(t, "a", mine["X-Tenant"], "the scenario's map is not written to")
	w = Workload{}
	require.NoError(t, w.Normalize(Workload{Headers: map[string]string{"X-Default": "1"}}))
	assert.Equal(t, map[string]string{"X-Default": "1"}, w.Headers, "the target's default")

	for h, want := range map[string]string{
		"x-meshbench-src":  "headers: x-meshbench-src is the path proof's own header (X-Meshbench-Src, X-Meshbench-Peer, X-Meshbench-Proto); a client that sent it would forge the proof",
		"X-Meshbench-Peer": "headers: X-Meshbench-Peer is the path proof's own header (X-Meshbench-Src, X-Meshbench-Peer, X-Meshbench-Proto); a client that sent it would forge the proof",
		"x tenant":         `headers: "x tenant" is not a header name (an HTTP token: letters, digits and !#$%&'*+-.^_` + "`|~)",
		"":                 `headers: "" is not a header name (an HTTP token: letters, digits and !#$%&'*+-.^_` + "`|~)",
	} {
		w = Workload{Headers: map[string]string{h: "v"}}
		assert.EqualError(t, w.Normalize(Workload{}), want)
	}
	w = Workload{Headers: map[string]string{"X-Tenant": "a\r\nX-Evil: 1"}}
	assert.EqualError(t, w.Normalize(Workload{}), `headers: X-Tenant: value "a\r\nX-Evil: 1" has a control character`)
	w = Workload{Headers: map[string]string{"X-Tenant": "a", "x-tenant": "b"}}
	assert.EqualError(t, w.Normalize(Workload{}), "headers: X-Tenant and x-tenant are one header (names are case-insensitive)")
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
