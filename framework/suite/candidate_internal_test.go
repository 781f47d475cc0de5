package suite

import (
	"flag"
	"io"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/arms"
	"github.com/meshbench/meshbench/framework/gate"
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
		parsed(t, &tc.c)
		ref, cand := tc.c.gateArms()
		assert.Equal(t, tc.ref, ref, tc.c.Candidate)
		assert.Equal(t, tc.cand, cand, tc.c.Candidate)
	}
	c := Config{Target: "kind", NginxImage: "mb/nginx:1", Candidate: "mb/nginx:2+no-keepalive"}
	parsed(t, &c)
	assert.Equal(t, "mb/nginx:2", c.candidateImage(), "loaded into kind's nodes")
	c.Candidate = "+no-keepalive"
	parsed(t, &c)
	assert.Empty(t, c.candidateImage(), "the reference's image, loaded anyway")
	c.Candidate = "rev=canary"
	parsed(t, &c)
	assert.Empty(t, c.candidateImage(), "a revision brings no image to load")
}

// parsed sets c's typed specs as Normalize does, from c.Sidecar and
// c.Candidate, without checking them against a mesh.
func parsed(t *testing.T, c *Config) {
	t.Helper()
	c.SidecarSpec, c.CandidateSpec = arms.Spec{}, nil
	switch {
	case c.Target == "local":
		require.NoError(t, c.checkLocalSidecars())
	case c.Candidate != "":
		cand, err := arms.ParseCluster(c.Candidate)
		require.NoError(t, err)
		c.CandidateSpec = &cand
	}
}

// Normalize parses -sidecar and -candidate once into the typed specs the
// targets receive; the strings stay as the flags wrote them, for the
// results.
func TestNormalizeParsesTheArmsOnce(t *testing.T) {
	cfg, err := normalizeFlags(t, "-sidecar", "caddy+access-log+no-keepalive", "-candidate", "caddy@v2.11.9+no-keepalive")
	require.NoError(t, err)
	assert.Equal(t, arms.Spec{Proxy: "caddy", Variants: []arms.Variant{arms.AccessLog, arms.NoKeepAlive}}, cfg.SidecarSpec)
	assert.Equal(t, &arms.Spec{Proxy: "caddy", Version: "v2.11.9", Variants: []arms.Variant{arms.NoKeepAlive}}, cfg.CandidateSpec)
	assert.Equal(t, "caddy+access-log+no-keepalive", cfg.Sidecar)
	cfg, err = normalizeFlags(t, "-target", "kind", "-candidate", "mb/nginx:2+no-keepalive")
	require.NoError(t, err)
	assert.Equal(t, arms.Spec{}, cfg.SidecarSpec, "-sidecar is the local target's")
	assert.Equal(t, &arms.Spec{Image: "mb/nginx:2", Variants: []arms.Variant{arms.NoKeepAlive}}, cfg.CandidateSpec)
	cfg, err = normalizeFlags(t)
	require.NoError(t, err)
	assert.Equal(t, arms.Spec{Proxy: "caddy"}, cfg.SidecarSpec)
	assert.Nil(t, cfg.CandidateSpec)
}

// The suite names the flag a refused spec came from; the targets and the
// grammar name none.
func TestCandidateErrorsNameTheFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-sidecar", "nginx@1.27.0"},
			`-sidecar/-candidate: sidecar "nginx@1.27.0": nginx is taken from PATH, so no version of it can be built; install the version you want and write -sidecar=nginx`},
		{[]string{"-candidate", "haproxy@1.0.0+no-keepalive"},
			`-sidecar/-candidate: candidate: sidecar "haproxy@1.0.0": haproxy is taken from PATH, so no version of it can be built; install the version you want and write -sidecar=haproxy`},
		{[]string{"-candidate", "nginx+access-log"},
			`-sidecar/-candidate: candidate: sidecar "nginx+access-log": nginx has no +access-log variant; only caddy does`},
		{[]string{"-sidecar", "nginx+no-keepalive+access-log", "-candidate", "caddy"},
			`-sidecar/-candidate: sidecar "nginx+no-keepalive+access-log": nginx has no +no-keepalive variant; only caddy does`},
		{[]string{"-candidate", "caddy@latest"},
			`-sidecar/-candidate: candidate: sidecar "caddy@latest": version "latest" is not an exact module version; want e.g. caddy@v2.10.2`},
		{[]string{"-target", "kind", "-candidate", "nginx:1.27+fast"},
			`-candidate=nginx:1.27+fast: "nginx:1.27+fast" is not an image reference (want e.g. registry.local/nginx:1.27, optionally ending in +no-keepalive, or +no-keepalive alone for the reference's image)`},
		{[]string{"-target", "kind", "-mesh", "istio", "-candidate", "nginx:1.27"},
			"-candidate=nginx:1.27: on a cluster only the bring-your-own sidecar mesh (-mesh=sidecar) runs a candidate sidecar beside the reference, not -mesh=istio " +
				"(with -mesh=istio, gate another revision with -candidate=rev=NAME; for another mesh, gate against a stored run with -reference)"},
		{[]string{"-target", "kind", "-mesh", "linkerd", "-candidate", "+no-keepalive"},
			"-candidate=+no-keepalive: on a cluster only the bring-your-own sidecar mesh (-mesh=sidecar) runs a candidate sidecar beside the reference, not -mesh=linkerd " +
				"(for another mesh, gate against a stored run with -reference)"},
	} {
		_, err := normalizeFlags(t, tc.args...)
		assert.EqualError(t, err, tc.want, "%q", tc.args)
	}
}

// normalizeFlags is the Config the flags args give, normalized.
func normalizeFlags(t *testing.T, args ...string) (*Config, error) {
	t.Helper()
	fs := flag.NewFlagSet("meshbench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg := RegisterFlags(fs)
	require.NoError(t, fs.Parse(args))
	return cfg, cfg.Normalize()
}

// On kind, kind.yaml holds the bring-your-own sidecar's limits; another
// mesh is judged by kind-<mesh>.yaml, or not at all, and the run says so.
func TestKindThresholdsAreTheMeshs(t *testing.T) {
	cfg, err := normalizeFlags(t, "-target", "kind")
	require.NoError(t, err)
	assert.Equal(t, "kind.yaml", filepath.Base(cfg.Thresholds))
	assert.Empty(t, cfg.ThresholdsNote)
	cfg, err = normalizeFlags(t, "-target", "kind", "-mesh", "istio-proxyless")
	require.NoError(t, err)
	assert.Equal(t, "none", cfg.Thresholds)
	assert.Regexp(t, `^no fixture for -mesh=istio-proxyless on kind \(.*fixtures/thresholds/kind-istio-proxyless\.yaml\): thresholds off; pass -thresholds FILE to gate$`, cfg.ThresholdsNote)
}

// An Istio canary of another release (1.30 to 1.31-dev, built offline):
// the candidate revision is installed at -candidate-mesh-version from
// -candidate-mesh-charts, and both releases' images are loaded into kind.
// The flags are refused, naming them, without a revision candidate that
// -mesh-install installs, or with a version the adapter cannot install.
func TestCandidateRevisionOfAnotherRelease(t *testing.T) {
	ref, cand := t.TempDir(), t.TempDir()
	cfg, err := normalizeFlags(t, "-target", "kind", "-mesh", "istio-proxyless", "-mesh-install", "-mesh-revision", "mb130",
		"-mesh-version", "1.30-dev.9739e10eb9d7", "-mesh-charts", ref,
		"-candidate", "rev=mb131", "-candidate-mesh-version", "1.31-dev.eed52ebb66ad", "-candidate-mesh-charts", cand)
	require.NoError(t, err)
	assert.Equal(t, []string{"meshbench/pilot:1.30-dev.9739e10eb9d7", "meshbench/proxyv2-agent:1.30-dev.9739e10eb9d7",
		"meshbench/pilot:1.31-dev.eed52ebb66ad", "meshbench/proxyv2-agent:1.31-dev.eed52ebb66ad"}, cfg.meshImages())
	ci := cfg.candidateInstall()
	require.NotNil(t, ci)
	assert.Equal(t, "1.31-dev.eed52ebb66ad", ci.Version)
	assert.Equal(t, "1.30-dev.9739e10eb9d7", cfg.installOptions().Version, "the reference's release stays")

	same, err := normalizeFlags(t, "-target", "kind", "-mesh", "istio-proxyless", "-mesh-install", "-mesh-revision", "mb131", "-candidate", "rev=mb131b")
	require.NoError(t, err)
	assert.Nil(t, same.candidateInstall(), "without the flag the candidate revision is the reference's release")

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-target", "kind", "-mesh", "istio-proxyless", "-mesh-revision", "mb130", "-candidate", "rev=mb131", "-candidate-mesh-version", "1.31-dev.eed52ebb66ad"},
			"-candidate-mesh-version=1.31-dev.eed52ebb66ad: only used with -mesh-install and -candidate=rev=NAME (a canary revision of another release)"},
		{[]string{"-target", "kind", "-mesh", "istio-proxyless", "-mesh-install", "-candidate-mesh-charts", cand},
			"-candidate-mesh-charts=" + cand + ": only used with -mesh-install and -candidate=rev=NAME (a canary revision of another release)"},
		{[]string{"-target", "kind", "-mesh", "istio-proxyless", "-mesh-install", "-candidate", "rev=mb131", "-candidate-mesh-charts", cand + "/absent"},
			"-candidate-mesh-charts=" + cand + "/absent: not a directory"},
		{[]string{"-target", "kind", "-mesh", "istio-proxyless", "-mesh-install", "-candidate", "rev=mb131", "-candidate-mesh-version", "one-thirty-one"},
			`-candidate-mesh-version=one-thirty-one: istio-proxyless: install version "one-thirty-one" is not a chart version (want e.g. 1.31-dev.eed52ebb66ad)`},
	} {
		_, err := normalizeFlags(t, tc.args...)
		assert.EqualError(t, err, tc.want, tc.args)
	}
}

// A gate's budget, when -max-count is not given: 60 pairs a point on the
// local target, 30 on a cluster, never less than -count, and none without
// a candidate or with -gate=none; a given -max-count stands.
func TestDefaultMaxCountIsTheTargets(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		count int
		want  int
	}{
		{[]string{"-candidate", "caddy+access-log"}, 3, gate.DefaultLocalMaxPairs},
		{[]string{"-candidate", "caddy+access-log"}, 70, 70},
		{[]string{"-candidate", "caddy+access-log", "-max-count", "12"}, 3, 12},
		{[]string{"-candidate", "caddy+access-log", "-gate", "none"}, 3, 0},
		{[]string{"-target", "kind", "-candidate", "meshbench/nginx:2"}, 3, gate.DefaultMaxPairs},
		{nil, 3, 0},
	} {
		cfg, err := normalizeFlags(t, tc.args...)
		require.NoError(t, err, "%v", tc.args)
		cfg.defaultMaxCount(tc.count)
		assert.Equal(t, tc.want, cfg.MaxCount, "%v -count %d", tc.args, tc.count)
	}
	assert.Equal(t, 60, gate.DefaultLocalMaxPairs)
	assert.Equal(t, 30, gate.DefaultMaxPairs)
}
