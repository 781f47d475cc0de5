package local

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/arms"
	"github.com/meshbench/meshbench/framework/testbed"
)

// TestCanProfileOnlyGoSidecarsInAGate: Caddy (any version) can be
// profiled in an upgrade gate; nginx, haproxy and envoy never, with why.
func TestCanProfileOnlyGoSidecarsInAGate(t *testing.T) {
	want := map[string]string{
		"nginx":   "nginx is not a Go program with a pprof endpoint",
		"haproxy": "haproxy is not a Go program with a pprof endpoint",
		"envoy":   "envoy is not a Go program with a pprof endpoint",
	}
	for _, name := range SidecarNames() {
		sc, err := lookSidecar(name)
		require.NoError(t, err)
		tg := &Target{o: Options{Candidate: &arms.Spec{Proxy: name}}, meshes: []meshArm{{arm: testbed.Reference, sc: sc}, {arm: testbed.Candidate, sc: sc}}}
		if w, ok := want[name]; ok {
			assert.EqualError(t, tg.CanProfile(), w)
			continue
		}
		assert.Equal(t, "caddy", name)
		assert.NoError(t, tg.CanProfile())
	}
	v, err := SidecarFor(SidecarRef{Name: "caddy", Version: "v2.10.2"})
	require.NoError(t, err)
	assert.NoError(t, (&Target{o: Options{Candidate: &arms.Spec{Proxy: "caddy"}}, meshes: []meshArm{{sc: v}}}).CanProfile())
	assert.EqualError(t, (&Target{meshes: []meshArm{{sc: caddy{}}}}).CanProfile(),
		"the sidecars' admin endpoints are on only in an upgrade gate (Candidate)")
}

// TestCaddyAdminOnlyWithASocket: Caddy's admin endpoint stays off unless
// the spec names a socket, and then listens there alone, persisting
// nothing.
func TestCaddyAdminOnlyWithASocket(t *testing.T) {
	admin := func(s SidecarSpec) map[string]any {
		data, _, err := caddy{}.Config(s)
		require.NoError(t, err)
		var cfg struct{ Admin map[string]any }
		require.NoError(t, json.Unmarshal(data, &cfg))
		return cfg.Admin
	}
	assert.Equal(t, map[string]any{"disabled": true}, admin(SidecarSpec{Name: "backend"}))
	assert.Equal(t, map[string]any{"listen": "unix//run/admin-1.sock", "config": map[string]any{"persist": false}},
		admin(SidecarSpec{Name: "backend", Admin: "/run/admin-1.sock"}))
	tg := &Target{dir: "/tmp/meshbench-run-123456789", o: Options{Candidate: &arms.Spec{Proxy: "caddy"}}}
	a := tg.withAdmin(meshArm{sc: caddy{}}, SidecarSpec{File: "candidate-loadgen-p0-s0s-t0-h1-in-mesh-l1-http1-1"})
	b := tg.withAdmin(meshArm{sc: caddy{}}, SidecarSpec{File: "reference-loadgen-p0-s0s-t0-h1-in-mesh-l1-http1-1"})
	assert.Regexp(t, `^/tmp/meshbench-run-123456789/admin-[0-9a-f]{12}\.sock$`, a.Admin)
	assert.NotEqual(t, a.Admin, b.Admin)
	assert.Empty(t, tg.withAdmin(meshArm{sc: nginx{}}, SidecarSpec{File: "x"}).Admin)
	assert.Empty(t, (&Target{}).withAdmin(meshArm{sc: caddy{}}, SidecarSpec{File: "x"}).Admin)
}

func TestProfileSeconds(t *testing.T) {
	for d, want := range map[time.Duration]int{0: 1, 400 * time.Millisecond: 1, 3 * time.Second: 3, 3600 * time.Millisecond: 4} {
		assert.Equal(t, want, profileSeconds(d), "%v", d)
	}
}
