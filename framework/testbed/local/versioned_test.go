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
