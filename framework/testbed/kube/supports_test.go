package kube

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/testbed"
)

func supportsTarget(t *testing.T, meshName string) *Target {
	m, err := mesh.New(meshName)
	require.NoError(t, err)
	return &Target{o: Options{Placement: InMesh, Loadgens: 1, Mesh: m}}
}

// TestSupportsProtocols: h2 runs on the nginx workloads (the loadgen's hop),
// gRPC is skipped with what it needs (TestSupportsGRPC).
func TestSupportsProtocols(t *testing.T) {
	tg := supportsTarget(t, "none")
	assert.NoError(t, tg.Supports(testbed.Workload{Protocol: load.H2}, nil))
	assert.EqualError(t, tg.Supports(testbed.Workload{Protocol: load.GRPC}, nil),
		"protocol grpc: the backends were deployed for HTTP (nginx); gRPC needs the gRPC backend, deployed with Protocol=grpc")
}

// TestSupportsPlacements: any placement and number of loadgens is served
// (deployed on first use); out of the bring-your-own sidecar mesh only
// with the harness's own nginx configuration, in HTTP/1.1.
func TestSupportsPlacements(t *testing.T) {
	tg := supportsTarget(t, "sidecar")
	for _, w := range []testbed.Workload{
		{Placement: testbed.InMesh, Loadgens: 4},
		{Placement: testbed.OutOfMesh},
		{Placement: testbed.OutOfMesh, Loadgens: 2, Protocol: load.H2},
	} {
		assert.NoError(t, tg.Supports(w, nil), "%+v", w)
	}
	tg.sidecar = &manifests.Sidecar{Name: "mb-sidecar", Permissive: true}
	assert.NoError(t, tg.Supports(testbed.Workload{Placement: testbed.OutOfMesh}, nil))
	assert.EqualError(t, tg.Supports(testbed.Workload{Placement: testbed.OutOfMesh, Protocol: load.H2}, nil),
		"out-of-mesh placement in h2: the sidecar's permissive port takes HTTP/1.1 only")
	tg.sidecar.Args = []string{"envoy", "-c", "/etc/envoy.yaml"}
	assert.EqualError(t, tg.Supports(testbed.Workload{Placement: testbed.OutOfMesh}, nil),
		"out-of-mesh placement: the sidecar's own arguments replace the harness's nginx configuration, whose permissive port takes the plain requests of a loadgen outside the mesh")
	assert.NoError(t, tg.Supports(testbed.Workload{Placement: testbed.InMesh, Loadgens: 4}, nil))
}

// TestSupportsFaults: killing or restarting a sidecar or an app on the
// path is served; everything else, an unknown action too, is skipped with
// the reason.
func TestSupportsFaults(t *testing.T) {
	tg := supportsTarget(t, "sidecar")
	kill := func(w string, sidecar bool) *testbed.Fault {
		return &testbed.Fault{Action: testbed.Kill, Workload: w, Sidecar: sidecar, After: time.Second}
	}
	assert.NoError(t, tg.Supports(testbed.Workload{}, kill("backend", true)))
	assert.NoError(t, tg.Supports(testbed.Workload{Path: testbed.TwoHop, Placement: testbed.OutOfMesh, Loadgens: 2}, kill("frontend", false)))
	assert.EqualError(t, tg.Supports(testbed.Workload{}, kill("frontend", true)), `fault on "frontend": not on the one-hop path (backend)`)
	assert.EqualError(t, tg.Supports(testbed.Workload{}, kill("loadgen", true)), "fault on the loadgen: on clusters faults hit only the backend's and the frontend's containers")
	restart := &testbed.Fault{Action: testbed.Restart, Workload: "backend", Sidecar: true, After: time.Second}
	assert.NoError(t, tg.Supports(testbed.Workload{}, restart))
	assert.NoError(t, tg.Supports(testbed.Workload{Path: testbed.TwoHop}, &testbed.Fault{Action: testbed.Restart, Workload: "frontend"}))
	assert.EqualError(t, tg.Supports(testbed.Workload{}, &testbed.Fault{Action: "pause", Workload: "backend"}), `fault action "pause" is unknown: want kill or restart`)
	assert.EqualError(t, tg.Supports(testbed.Workload{}, &testbed.Fault{Action: "pause", Workload: "loadgen"}),
		`fault action "pause" is unknown: want kill or restart; fault on the loadgen: on clusters faults hit only the backend's and the frontend's containers`)

	tg.faultWhyNot = "faults need node access (Options.NodeExec) or a rest.Config to exec with"
	assert.EqualError(t, tg.Supports(testbed.Workload{}, kill("backend", true)),
		"fault kill backend's sidecar after 1s: faults need node access (Options.NodeExec) or a rest.Config to exec with")
	assert.EqualError(t, tg.Supports(testbed.Workload{}, restart),
		"fault restart backend's sidecar after 1s: faults need node access (Options.NodeExec) or a rest.Config to exec with")
	assert.NoError(t, tg.Supports(testbed.Workload{}, nil), "only faults are skipped")

	ambient := supportsTarget(t, "istio-ambient")
	assert.EqualError(t, ambient.Supports(testbed.Workload{}, kill("backend", true)),
		"fault on backend's sidecar: the istio-ambient mesh runs no sidecar; its node proxy is Fault.NodeProxy")
	assert.NoError(t, ambient.Supports(testbed.Workload{}, kill("backend", false)), "the app can be killed")
	assert.NoError(t, ambient.Supports(testbed.Workload{}, &testbed.Fault{Action: testbed.Kill, Workload: "backend", NodeProxy: true}), "ztunnel can be killed")
	assert.EqualError(t, supportsTarget(t, "sidecar").Supports(testbed.Workload{}, &testbed.Fault{Action: testbed.Kill, Workload: "backend", NodeProxy: true}),
		"fault on the node proxy of backend: the sidecar mesh runs no per-node proxy (istio-ambient's ztunnel and cilium's agent and envoy are)")
}
