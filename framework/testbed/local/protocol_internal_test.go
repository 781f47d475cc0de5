package local

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/testbed"
)

// TestSupportsHTTP2 skips h2 and gRPC, with the reason, on the sidecars
// that proxy to their peers in HTTP/1.1 only.
func TestSupportsHTTP2(t *testing.T) {
	for _, name := range SidecarNames() {
		sc, err := lookSidecar(name)
		require.NoError(t, err)
		tg := &Target{meshes: []meshArm{{arm: testbed.Meshed, sc: sc}}, def: testbed.Workload{Protocol: load.HTTP1}}
		assert.NoError(t, tg.Supports(testbed.Workload{}, nil), name)
		_, h2 := sc.(h2Upstream)
		assert.Equal(t, name == "caddy", h2, "%s: only caddy is known to proxy h2 upstream", name)
		for _, p := range []load.Protocol{load.H2, load.GRPC} {
			err := tg.Supports(testbed.Workload{Protocol: p}, nil)
			if h2 {
				assert.NoError(t, err, "%s %s", name, p)
				continue
			}
			assert.EqualError(t, err, fmt.Sprintf("protocol %s runs HTTP/2 end to end and needs a sidecar that proxies HTTP/2 to its peers and app (caddy); %s proxies in HTTP/1.1", p, name))
		}
	}
}

// TestCaddyHTTP2Config: with H2C every hop of the sidecar is HTTP/2; h2c on
// the plain sides and to the app, h2 (and only h2) to the peer over mTLS.
func TestCaddyHTTP2Config(t *testing.T) {
	spec := SidecarSpec{Name: "frontend", H2C: true, Inbound: &Inbound{Listen: "127.0.0.1:1", App: "127.0.0.1:2"},
		Outbound: []Outbound{{Listen: "127.0.0.1:3", Peer: "127.0.0.1:4", ServerName: "backend.meshbench.local"}}}
	versions := func(spec SidecarSpec) map[string]any {
		data, _, err := caddy{}.Config(spec)
		require.NoError(t, err)
		var cfg struct {
			Apps struct {
				HTTP struct {
					Servers map[string]struct {
						Protocols []string `json:"protocols"`
						Routes    []struct {
							Handle []struct {
								Transport struct {
									Versions []string `json:"versions"`
								} `json:"transport"`
							} `json:"handle"`
						} `json:"routes"`
					} `json:"servers"`
				} `json:"http"`
			} `json:"apps"`
		}
		require.NoError(t, json.Unmarshal(data, &cfg))
		out := map[string]any{}
		for name, s := range cfg.Apps.HTTP.Servers {
			out[name] = []any{s.Protocols, s.Routes[0].Handle[0].Transport.Versions}
		}
		return out
	}
	assert.Equal(t, map[string]any{
		"inbound":   []any{[]string{"h1", "h2"}, []string{"h2c"}},
		"outbound0": []any{[]string{"h1", "h2c"}, []string{"2"}},
	}, versions(spec))
	spec.H2C = false
	assert.Equal(t, map[string]any{
		"inbound":   []any{[]string{"h1", "h2"}, []string{"1.1"}},
		"outbound0": []any{[]string{"h1"}, []string{"1.1"}},
	}, versions(spec))
}
