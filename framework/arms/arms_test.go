package arms_test

import (
	"fmt"

	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/arms"
)

// proxies is a registry as the local target's: caddy built from source,
// the others taken from PATH.
var proxies = arms.Proxies{Names: []string{"caddy", "envoy", "haproxy", "nginx"}, Versioned: []string{"caddy"}}

func TestParseLocal(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want arms.Spec
	}{
		{"caddy", arms.Spec{Proxy: "caddy"}},
		{"caddy@v2.10.2", arms.Spec{Proxy: "caddy", Version: "v2.10.2"}},
		{"caddy@v2.11.9", arms.Spec{Proxy: "caddy", Version: "v2.11.9"}},
		{"caddy@v2.11.0-beta.2", arms.Spec{Proxy: "caddy", Version: "v2.11.0-beta.2"}},
		{"nginx", arms.Spec{Proxy: "nginx"}},
		{"caddy+no-keepalive", arms.Spec{Proxy: "caddy", Variants: []arms.Variant{arms.NoKeepAlive}}},
		{"caddy+access-log", arms.Spec{Proxy: "caddy", Variants: []arms.Variant{arms.AccessLog}}},
		{"caddy@v2.11.9+no-keepalive+access-log", arms.Spec{Proxy: "caddy", Version: "v2.11.9", Variants: []arms.Variant{arms.NoKeepAlive, arms.AccessLog}}},
		{"caddy+access-log+no-keepalive", arms.Spec{Proxy: "caddy", Variants: []arms.Variant{arms.AccessLog, arms.NoKeepAlive}}},
		// Whether the sidecar renders the variant is the target's to say.
		{"nginx+no-keepalive", arms.Spec{Proxy: "nginx", Variants: []arms.Variant{arms.NoKeepAlive}}},
	} {
		got, err := arms.ParseLocal(tc.in, proxies)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
		assert.Equal(t, tc.in, got.String(), "written back as it was written")
		assert.Equal(t, got.Has(arms.NoKeepAlive), got.NoKeepAlive(), tc.in)
		assert.Equal(t, got.Has(arms.AccessLog), got.AccessLog(), tc.in)
	}
}

// Every error names the part of the spec that is wrong: the sidecar
// without its variants, and the name or version in it.
func TestParseLocalErrors(t *testing.T) {
	names := "caddy, envoy, haproxy, nginx"
	for in, want := range map[string]string{
		"":                                 "sidecar: empty; want a name such as caddy, or name@version such as caddy@v2.10.2",
		"+no-keepalive":                    "sidecar: empty; want a name such as caddy, or name@version such as caddy@v2.10.2",
		"Caddy@v2.10.2":                    `sidecar "Caddy@v2.10.2": "Caddy" is not a sidecar name; want one of ` + names,
		"@v2.10.2":                         `sidecar "@v2.10.2": "" is not a sidecar name; want one of ` + names,
		"caddy+no-keepalive+no-keepalive":  `sidecar "caddy+no-keepalive": "caddy+no-keepalive" is not a sidecar name; want one of ` + names,
		"caddy+fast":                       `sidecar "caddy+fast": "caddy+fast" is not a sidecar name; want one of ` + names,
		"rev=canary":                       `sidecar "rev=canary": "rev=canary" is not a sidecar name; want one of ` + names,
		"traefik@v3.0.0":                   `sidecar "traefik@v3.0.0": unknown sidecar "traefik": want one of ` + names,
		"nginx@1.27.0":                     `sidecar "nginx@1.27.0": nginx is taken from PATH, so no version of it can be built; install the version you want`,
		"nginx@1.27.0+access-log":          `sidecar "nginx@1.27.0": nginx is taken from PATH, so no version of it can be built; install the version you want`,
		"caddy@":                           `sidecar "caddy@": version "" is not an exact module version; want e.g. caddy@v2.10.2`,
		"caddy@2.10.2":                     `sidecar "caddy@2.10.2": version "2.10.2" is not an exact module version; want e.g. caddy@v2.10.2`,
		"caddy@v2.10":                      `sidecar "caddy@v2.10": version "v2.10" is not an exact module version; want e.g. caddy@v2.10.2`,
		"caddy@latest":                     `sidecar "caddy@latest": version "latest" is not an exact module version; want e.g. caddy@v2.10.2`,
		"caddy@v2.10.2@x":                  `sidecar "caddy@v2.10.2@x": version "v2.10.2@x" is not an exact module version; want e.g. caddy@v2.10.2`,
		"caddy@v02.10.2":                   `sidecar "caddy@v02.10.2": version "v02.10.2" is not an exact module version; want e.g. caddy@v2.10.2`,
		"caddy@ v2.10.2":                   `sidecar "caddy@ v2.10.2": version " v2.10.2" is not an exact module version; want e.g. caddy@v2.10.2`,
		"caddy@v2.10.2 ":                   `sidecar "caddy@v2.10.2 ": version "v2.10.2 " is not an exact module version; want e.g. caddy@v2.10.2`,
		"caddy@v2.10.2-":                   `sidecar "caddy@v2.10.2-": version "v2.10.2-" is not an exact module version; want e.g. caddy@v2.10.2`,
		"caddy@master":                     `sidecar "caddy@master": version "master" is not an exact module version; want e.g. caddy@v2.10.2`,
		"caddy@v2.10.2/foo":                `sidecar "caddy@v2.10.2/foo": version "v2.10.2/foo" is not an exact module version; want e.g. caddy@v2.10.2`,
		"caddy@v2.10.2+no-keepalive+fast":  `sidecar "caddy@v2.10.2+no-keepalive+fast": version "v2.10.2+no-keepalive+fast" is not an exact module version; want e.g. caddy@v2.10.2`,
		"caddy@v2.10.2+access-log+garbage": `sidecar "caddy@v2.10.2+access-log+garbage": version "v2.10.2+access-log+garbage" is not an exact module version; want e.g. caddy@v2.10.2`,
	} {
		_, err := arms.ParseLocal(in, proxies)
		assert.EqualError(t, err, want, in)
	}
	_, err := arms.ParseLocal("nginx@1.27.0", proxies)
	var ue *arms.UnversionedError
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, arms.UnversionedError{Ref: "nginx@1.27.0", Name: "nginx"}, *ue)
}

func TestParseCluster(t *testing.T) {
	const digest = "nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for spec, want := range map[string]arms.Spec{
		"nginx":                              {Image: "nginx"},
		"meshbench/nginx:1.27":               {Image: "meshbench/nginx:1.27"},
		"localhost:5000/a/b:v1+no-keepalive": {Image: "localhost:5000/a/b:v1", Variants: []arms.Variant{arms.NoKeepAlive}},
		"+no-keepalive":                      {Variants: []arms.Variant{arms.NoKeepAlive}},
		"rev=canary":                         {Revision: "canary"},
		"rev=1-28-0":                         {Revision: "1-28-0"},
		digest:                               {Image: digest},
	} {
		c, err := arms.ParseCluster(spec)
		require.NoError(t, err, spec)
		assert.Equal(t, want, c, spec)
		assert.Equal(t, spec, c.String(), "written back as it was written")
	}
}

// A revision is a DNS label, as istio.io/rev's; an image reference has no
// "=". Every error names the part that is wrong.
func TestParseClusterErrors(t *testing.T) {
	notImage := `%q is not an image reference (want e.g. registry.local/nginx:1.27, optionally ending in +no-keepalive, or +no-keepalive alone for the reference's image)`
	for spec, want := range map[string]string{
		"":           "empty; want IMAGE, IMAGE+no-keepalive, +no-keepalive or rev=NAME",
		"rev=":       "no revision name (want e.g. rev=canary, the revision istioctl install --revision=canary installs)",
		"rev=1.28":   `"1.28" is not a revision name: must not contain dots`,
		"rev=Canary": `"Canary" is not a revision name: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
		"nginx=1.27": fmt.Sprintf(notImage, "nginx=1.27"),
		"revision=a": fmt.Sprintf(notImage, "revision=a"),
		// The access log is a variant of the local sidecars only.
		"nginx+access-log":                fmt.Sprintf(notImage, "nginx+access-log"),
		"nginx+access-log+no-keepalive":   fmt.Sprintf(notImage, "nginx+access-log"),
		"nginx+no-keepalive+no-keepalive": fmt.Sprintf(notImage, "nginx+no-keepalive"),
		"Nginx:1.27":                      fmt.Sprintf(notImage, "Nginx:1.27"),
		"nginx:1.27+fast":                 fmt.Sprintf(notImage, "nginx:1.27+fast"),
		"caddy@v2.11.9":                   fmt.Sprintf(notImage, "caddy@v2.11.9"),
		"nginx 1.27":                      fmt.Sprintf(notImage, "nginx 1.27"),
		"-nginx":                          fmt.Sprintf(notImage, "-nginx"),
	} {
		_, err := arms.ParseCluster(spec)
		assert.EqualError(t, err, want, spec)
	}
}

func TestSpecRef(t *testing.T) {
	for want, s := range map[string]arms.Spec{
		"caddy":         {Proxy: "caddy", Variants: []arms.Variant{arms.AccessLog}},
		"caddy@v2.10.2": {Proxy: "caddy", Version: "v2.10.2", Variants: []arms.Variant{arms.NoKeepAlive}},
		"nginx:1.27":    {Image: "nginx:1.27", Variants: []arms.Variant{arms.NoKeepAlive}},
		"":              {Variants: []arms.Variant{arms.NoKeepAlive}},
	} {
		assert.Equal(t, want, s.Ref(), s.String())
	}
	assert.Empty(t, arms.Spec{}.String())
}
