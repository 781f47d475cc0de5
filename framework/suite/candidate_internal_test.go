package suite

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The gate names its arms as the target runs them: on a cluster the
// sidecar mesh's image, and the candidate's with its variant; A/A when
// they are the same.
func TestCandidateGateArms(t *testing.T) {
	for _, tc := range []struct {
		c         Config
		ref, cand string
	}{
		{Config{Target: "local", Sidecar: "caddy", Candidate: "caddy+no-keepalive"}, "caddy", "caddy+no-keepalive"},
		{Config{Target: "kind", NginxImage: "mb/nginx:1", Candidate: "+no-keepalive"}, "mb/nginx:1", "mb/nginx:1+no-keepalive"},
		{Config{Target: "kind", NginxImage: "mb/nginx:1", Candidate: "mb/nginx:1"}, "mb/nginx:1", "mb/nginx:1"},
		{Config{Target: "remote", NginxImage: "mb/nginx:1", Candidate: "mb/nginx:2+no-keepalive"}, "mb/nginx:1", "mb/nginx:2+no-keepalive"},
		{Config{Target: "kind", Mesh: "istio", MeshRevision: "stable", Candidate: "rev=canary"}, "rev=stable", "rev=canary"},
		{Config{Target: "remote", Mesh: "istio", Candidate: "rev=canary"}, "the default injector (istio-injection=enabled)", "rev=canary"},
		{Config{Target: "kind", Mesh: "istio", MeshRevision: "canary", Candidate: "rev=canary"}, "rev=canary", "rev=canary"},
	} {
		ref, cand := tc.c.gateArms()
		assert.Equal(t, tc.ref, ref, tc.c.Candidate)
		assert.Equal(t, tc.cand, cand, tc.c.Candidate)
	}
	c := Config{Target: "kind", NginxImage: "mb/nginx:1", Candidate: "mb/nginx:2+no-keepalive"}
	assert.Equal(t, "mb/nginx:2", c.candidateImage(), "loaded into kind's nodes")
	c.Candidate = "+no-keepalive"
	assert.Empty(t, c.candidateImage(), "the reference's image, loaded anyway")
	c.Candidate = "rev=canary"
	assert.Empty(t, c.candidateImage(), "a revision brings no image to load")
}
