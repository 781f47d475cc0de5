package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/mesh"
)

// The pins of this module: the local sidecar from go.mod, the kind
// sidecar from versions.env, and every adapter that installs a release.
func TestPinsOfThisModule(t *testing.T) {
	pins, err := pinsOf("../..")
	require.NoError(t, err)
	gomod, err := os.ReadFile("../../go.mod")
	require.NoError(t, err)
	caddy, err := caddyPin(gomod)
	require.NoError(t, err)
	env, err := os.ReadFile("../../" + versionsEnv)
	require.NoError(t, err)
	suite, err := envValue(env, "NGINX_SUITE")
	require.NoError(t, err)
	want := []pin{{"local", "caddy@" + caddy}, {"kind-sidecar", "nginx@" + suite}}
	for _, name := range []string{"linkerd", "istio", "istio-ambient", "istio-proxyless", "cilium"} {
		m, err := mesh.New(name)
		require.NoError(t, err)
		want = append(want, pin{name, mesh.DefaultVersion(m)})
	}
	assert.Equal(t, want, pins)
	for _, p := range pins {
		assert.NotEmpty(t, p.Version, p.Name)
	}
}

// Cilium's images are built offline from versions.env's CILIUM_VERSION; the
// adapter installs its own pin. The two must be one version, or the gate
// would compare a release that is not what the images run.
func TestCiliumPinMatchesTheOfflineBuild(t *testing.T) {
	env, err := os.ReadFile("../../" + versionsEnv)
	require.NoError(t, err)
	v, err := envValue(env, "CILIUM_VERSION")
	require.NoError(t, err)
	m, err := mesh.New("cilium")
	require.NoError(t, err)
	assert.Equal(t, strings.TrimPrefix(v, "v"), mesh.DefaultVersion(m))
}

// istio-proxyless installs the images hack/offline/istio.sh builds from
// versions.env's ISTIO_VERSION_131, tagged <minor>-dev.<commit> (istio.sh
// istio_tag): the adapter's default must be that tag, or the charts would
// ask for images nobody built.
func TestIstioProxylessPinMatchesTheOfflineBuild(t *testing.T) {
	env, err := os.ReadFile("../../" + versionsEnv)
	require.NoError(t, err)
	v, err := envValue(env, "ISTIO_VERSION_131")
	require.NoError(t, err)
	m, err := mesh.New("istio-proxyless")
	require.NoError(t, err)
	assert.Equal(t, "1.31-dev."+v[strings.LastIndex(v, "-")+1:], mesh.DefaultVersion(m))
}

func TestEnvValue(t *testing.T) {
	for _, tc := range []struct{ name, data, want, err string }{
		{"plain", "# c\nDEBIAN_SUITE=bookworm\nNGINX_SUITE=trixie\n", "trixie", ""},
		{"missing", "DEBIAN_SUITE=bookworm\n", "", "no NGINX_SUITE= line"},
		{"twice", "NGINX_SUITE=bookworm\nX=1\nNGINX_SUITE=trixie\n", "", "NGINX_SUITE is set 2 times (lines [1 3])"},
		{"expanded", "NGINX_SUITE=${DEBIAN_SUITE}\n", "", "line 1: NGINX_SUITE=${DEBIAN_SUITE} is not a plain version or suite name"},
		{"empty", "NGINX_SUITE=\n", "", "line 1: NGINX_SUITE= is not a plain version or suite name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := envValue([]byte(tc.data), "NGINX_SUITE")
			if tc.err != "" {
				assert.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestChangedPins(t *testing.T) {
	base, err := readPins([]byte("local=caddy@v2.10.2\nkind-sidecar=nginx@bookworm\nistio=1.27.0\ncilium=1.19.3\n"))
	require.NoError(t, err)
	head := []pin{{"local", "caddy@v2.11.9"}, {"kind-sidecar", "nginx@bookworm"}, {"istio", "1.28.0"}, {"cilium", "1.19.3"}, {"linkerd", "2025.10.1"}}
	assert.Equal(t, []pinChange{
		{"local", "caddy@v2.10.2", "caddy@v2.11.9"},
		{"istio", "1.27.0", "1.28.0"},
		{"linkerd", "", "2025.10.1"},
	}, changedPins(base, head))
	assert.Empty(t, changedPins(head, head))
}

func TestReadPinsRefusesWhatItCannotRead(t *testing.T) {
	for _, tc := range []struct{ data, err string }{
		{"local=caddy@v2.10.2\nistio 1.28.0\n", `line 2: "istio 1.28.0" is not NAME=VERSION`},
		{"local=\n", `line 1: "local=" is not NAME=VERSION`},
		{"istio=1.27.0\n\nistio=1.28.0\n", "line 3: istio pinned twice"},
	} {
		_, err := readPins([]byte(tc.data))
		assert.EqualError(t, err, tc.err)
	}
}

// `meshbench pins -base FILE` prints what changed, as the workflow reads it.
func TestPinsCommandAgainstABase(t *testing.T) {
	var all bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"pins"}, &all, &all))
	base := strings.Replace(all.String(), "kind-sidecar=nginx@", "kind-sidecar=nginx@old-", 1)
	file := filepath.Join(t.TempDir(), "base.pins")
	require.NoError(t, os.WriteFile(file, []byte(base), 0o644))
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"pins", "-base", file}, &out, &out))
	f := strings.Fields(out.String())
	require.Len(t, f, 3, out.String())
	assert.Equal(t, "kind-sidecar", f[0])
	assert.Equal(t, strings.Replace(f[2], "nginx@", "nginx@old-", 1), f[1])

	require.NoError(t, os.WriteFile(file, []byte("nonsense\n"), 0o644))
	err := run(context.Background(), []string{"pins", "-base", file}, &out, &out)
	assert.EqualError(t, err, "pins: -base "+file+`: line 1: "nonsense" is not NAME=VERSION`)
}
