package local

import (
	"context"
	"debug/buildinfo"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSidecarRef(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want SidecarRef
	}{
		{"caddy", SidecarRef{Name: "caddy"}},
		{"caddy@v2.10.2", SidecarRef{Name: "caddy", Version: "v2.10.2"}},
		{"caddy@v2.11.9", SidecarRef{Name: "caddy", Version: "v2.11.9"}},
		{"caddy@v2.11.0-beta.2", SidecarRef{Name: "caddy", Version: "v2.11.0-beta.2"}},
		{"nginx", SidecarRef{Name: "nginx"}},
	} {
		got, err := ParseSidecarRef(tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
		assert.Equal(t, tc.in, got.String())
	}
}

func TestParseSidecarRefErrors(t *testing.T) {
	names := "caddy, envoy, haproxy, nginx"
	for in, want := range map[string]string{
		"":                  "sidecar: empty; want a name such as caddy, or name@version such as caddy@v2.10.2",
		"Caddy@v2.10.2":     `sidecar "Caddy@v2.10.2": "Caddy" is not a sidecar name; want one of ` + names,
		"@v2.10.2":          `sidecar "@v2.10.2": "" is not a sidecar name; want one of ` + names,
		"traefik@v3.0.0":    `sidecar "traefik@v3.0.0": unknown sidecar "traefik": want one of ` + names,
		"nginx@1.27.0":      `sidecar "nginx@1.27.0": nginx is taken from PATH, so no version of it can be built; install the version you want and write -sidecar=nginx`,
		"caddy@":            `sidecar "caddy@": version "" is not an exact module version; want e.g. caddy@v2.10.2`,
		"caddy@2.10.2":      `sidecar "caddy@2.10.2": version "2.10.2" is not an exact module version; want e.g. caddy@v2.10.2`,
		"caddy@v2.10":       `sidecar "caddy@v2.10": version "v2.10" is not an exact module version; want e.g. caddy@v2.10.2`,
		"caddy@latest":      `sidecar "caddy@latest": version "latest" is not an exact module version; want e.g. caddy@v2.10.2`,
		"caddy@v2.10.2@x":   `sidecar "caddy@v2.10.2@x": version "v2.10.2@x" is not an exact module version; want e.g. caddy@v2.10.2`,
		"caddy@v02.10.2":    `sidecar "caddy@v02.10.2": version "v02.10.2" is not an exact module version; want e.g. caddy@v2.10.2`,
		"caddy@ v2.10.2":    `sidecar "caddy@ v2.10.2": version " v2.10.2" is not an exact module version; want e.g. caddy@v2.10.2`,
		"caddy@v2.10.2 ":    `sidecar "caddy@v2.10.2 ": version "v2.10.2 " is not an exact module version; want e.g. caddy@v2.10.2`,
		"caddy@v2.10.2-":    `sidecar "caddy@v2.10.2-": version "v2.10.2-" is not an exact module version; want e.g. caddy@v2.10.2`,
		"caddy@master":      `sidecar "caddy@master": version "master" is not an exact module version; want e.g. caddy@v2.10.2`,
		"caddy@v2.10.2/foo": `sidecar "caddy@v2.10.2/foo": version "v2.10.2/foo" is not an exact module version; want e.g. caddy@v2.10.2`,
	} {
		_, err := ParseSidecarRef(in)
		require.Error(t, err, in)
		assert.Equal(t, want, err.Error(), in)
	}
}

func TestSidecarForKeepsTheProxyAndNamesTheVersion(t *testing.T) {
	sc, err := SidecarFor(SidecarRef{Name: "caddy", Version: "v2.10.2"})
	require.NoError(t, err)
	assert.Equal(t, "caddy@v2.10.2", sc.Name())
	plain, err := SidecarFor(SidecarRef{Name: "caddy"})
	require.NoError(t, err)
	assert.Equal(t, "caddy", plain.Name())
	// Same configuration and command as the plain proxy: only the binary
	// differs, so a version gate compares versions and nothing else.
	spec := SidecarSpec{Name: "backend", Dir: "/tmp/x", CertFile: "c", KeyFile: "k", CAFile: "ca",
		Inbound: &Inbound{Listen: "127.0.0.1:1", App: "127.0.0.1:2"}}
	a, fa, err := sc.Config(spec)
	require.NoError(t, err)
	b, fb, err := plain.Config(spec)
	require.NoError(t, err)
	assert.Equal(t, string(b), string(a))
	assert.Equal(t, fb, fa)

	_, err = SidecarFor(SidecarRef{Name: "nginx", Version: "1.27.0"})
	assert.EqualError(t, err, "sidecar nginx@1.27.0: nginx cannot be built at a version")
}

func TestBuildSidecarRefusesAnUnbuildableVersionFast(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := BuildSidecar(ctx, SidecarRef{Name: "nginx", Version: "1.0.0"}, t.TempDir(), nil)
	assert.EqualError(t, err, "sidecar nginx@1.0.0: nginx cannot be built at a version")
}

// TestBuildSidecarVersion builds an older Caddy from the Go module proxy
// into a fresh directory, checks the binary is that version, and that a
// second call reuses it. Cold (modules not downloaded, nothing in the Go
// build cache) it took 9m29s on 2 shared, busy cores; with the Go caches
// warm, 17s. Run it with -timeout 30m, as make test does.
func TestBuildSidecarVersion(t *testing.T) {
	if testing.Short() || os.Getenv("MESHBENCH_BUILD_VERSIONS") == "" {
		t.Skip("builds Caddy from the module proxy, about 10 minutes cold on 2 cores: set MESHBENCH_BUILD_VERSIONS=1 to run it")
	}
	ctx := context.Background()
	if d, ok := t.Deadline(); ok {
		if time.Until(d) < 15*time.Minute {
			t.Skip("a cold build can take 10 minutes: run with -timeout 30m")
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-time.Minute))
		defer cancel()
	}
	// $MESHBENCH_CACHE (make test, CI) keeps the build for the next run,
	// as the gate's own builds do; else a fresh directory, a cold build.
	dir := ""
	if os.Getenv("MESHBENCH_CACHE") == "" {
		dir = t.TempDir()
	}
	ref := SidecarRef{Name: "caddy", Version: "v2.10.2"}
	start := time.Now()
	bin, err := BuildSidecar(ctx, ref, dir, t.Logf)
	require.NoError(t, err)
	t.Logf("built %s in %v", bin, time.Since(start).Round(time.Second))
	bi, err := buildinfo.ReadFile(bin)
	require.NoError(t, err)
	assert.Equal(t, "github.com/caddyserver/caddy/v2", bi.Main.Path)
	assert.Equal(t, "v2.10.2", bi.Main.Version)
	sc, err := SidecarFor(ref)
	require.NoError(t, err)
	assert.Equal(t, "v2.10.2", sc.Version(ctx, bin))

	st, err := os.Stat(bin)
	require.NoError(t, err)
	again, err := BuildSidecar(ctx, ref, dir, t.Logf)
	require.NoError(t, err)
	assert.Equal(t, bin, again)
	st2, err := os.Stat(again)
	require.NoError(t, err)
	assert.Equal(t, st.ModTime(), st2.ModTime(), "the second call must reuse the binary")
}
