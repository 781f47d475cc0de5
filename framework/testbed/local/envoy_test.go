package local

import (
	"encoding/json"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
)

// TestEnvoyConfigIsAValidBootstrap checks the rendered config against
// Envoy's own API (go-control-plane's generated types and validation
// rules): every field name, enum and extension type URL must be known to
// Envoy, with no envoy binary needed. TestOtherSidecars runs it for real
// when envoy is on PATH.
func TestEnvoyConfigIsAValidBootstrap(t *testing.T) {
	spec := SidecarSpec{
		Name: "frontend", Dir: "/run/mb", CertFile: "/run/mb/frontend.pem", KeyFile: "/run/mb/frontend-key.pem",
		CAFile: "/run/mb/ca.pem", H2C: true, Threads: 2,
		Inbound:  &Inbound{Listen: "127.0.0.1:20001", App: "127.0.0.1:20002"},
		Outbound: []Outbound{{Listen: "127.0.0.1:20003", Peer: "127.0.0.1:20004", ServerName: "backend.meshbench.local"}},
	}
	data, file, err := envoy{}.Config(spec)
	require.NoError(t, err)
	assert.Equal(t, "frontend-envoy.json", file)
	var b bootstrapv3.Bootstrap
	require.NoError(t, protojson.UnmarshalOptions{}.Unmarshal(data, &b), "%s", data)
	require.NoError(t, b.ValidateAll())

	res := b.GetStaticResources()
	require.Len(t, res.GetListeners(), 2)
	require.Len(t, res.GetClusters(), 2)
	assert.Equal(t, uint32(20001), res.GetListeners()[0].GetAddress().GetSocketAddress().GetPortValue())
	assert.Equal(t, "envoy.transport_sockets.tls", res.GetClusters()[1].GetTransportSocket().GetName())
	assert.Equal(t, []string{"backend.meshbench.local"}, sniList(t, data))
	assert.Contains(t, string(data), `"value": "%DOWNSTREAM_PEER_SUBJECT%"`)
	assert.Contains(t, string(data), `"value": "%DOWNSTREAM_DIRECT_REMOTE_ADDRESS%"`)
	assert.Contains(t, string(data), `"require_client_certificate": true`)
	assert.Contains(t, string(data), `"http2_protocol_options": {}`, "h2c to the app")

	argv, _ := envoy{}.Command("/usr/bin/envoy", "/run/mb/frontend-envoy.json", spec)
	assert.Equal(t, "/usr/bin/envoy -c /run/mb/frontend-envoy.json --disable-hot-restart --log-level warn --service-node frontend --service-cluster meshbench --concurrency 2", strings.Join(argv, " "))

	_, _, err = envoy{}.Config(SidecarSpec{Name: "x", Inbound: &Inbound{Listen: "127.0.0.1", App: "127.0.0.1:1"}})
	assert.ErrorContains(t, err, "envoy sidecar x: inbound: address 127.0.0.1: missing port in address")
}

func TestEnvoyVersion(t *testing.T) {
	m := envoyVersion.FindStringSubmatch("envoy  version: 6d9bb7d9a85d616b220d1f8fe67b61f82bbdb8d3/1.31.2/Clean/RELEASE/BoringSSL")
	require.NotNil(t, m)
	assert.Equal(t, "1.31.2", m[1])
}

// sniList returns the SNI of every upstream TLS context in the config.
func sniList(t *testing.T, data []byte) []string {
	t.Helper()
	var cfg struct {
		StaticResources struct {
			Clusters []struct {
				TransportSocket *struct {
					TypedConfig struct {
						SNI string `json:"sni"`
					} `json:"typed_config"`
				} `json:"transport_socket"`
			} `json:"clusters"`
		} `json:"static_resources"`
	}
	require.NoError(t, json.Unmarshal(data, &cfg))
	var out []string
	for _, c := range cfg.StaticResources.Clusters {
		if c.TransportSocket != nil {
			out = append(out, c.TransportSocket.TypedConfig.SNI)
		}
	}
	return out
}
