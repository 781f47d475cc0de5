package local

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"strconv"

	"github.com/meshbench/meshbench/framework/workload"
)

func init() { registerSidecar("envoy", func() Sidecar { return envoy{} }) }

// envoy is the sidecar when envoy is on PATH (e.g. from
// https://www.envoyproxy.io/docs/envoy/latest/start/install; Debian has no
// package). The config is a static v3 bootstrap in JSON, the way Istio's
// and Cilium's proxies are configured, minus xDS.
type envoy struct{}

// Name is "envoy" (Sidecar).
func (envoy) Name() string { return "envoy" }

// Binary is envoy's path on PATH; it is never built (Sidecar).
func (envoy) Binary(context.Context, *builder) (string, error) {
	return onPath("envoy", "install Envoy from https://www.envoyproxy.io/docs/envoy/latest/start/install")
}

// envoyVersion matches "envoy  version: <sha>/1.31.2/Clean/RELEASE/BoringSSL".
var envoyVersion = regexp.MustCompile(`version: [0-9a-f]+/([0-9]+\.[0-9]+\.[0-9]+[^/]*)/`)

// Version is the release in `envoy --version`, e.g. "1.31.2", or
// "unknown" (Sidecar).
func (envoy) Version(ctx context.Context, bin string) string {
	out, _ := exec.CommandContext(ctx, bin, "--version").CombinedOutput()
	if m := envoyVersion.FindSubmatch(out); m != nil {
		return string(m[1])
	}
	return "unknown"
}

// Command runs envoy without hot restart (several envoys share the host,
// and hot restart's shared memory would make them collide), with
// --concurrency when the threads are fixed.
func (envoy) Command(bin, path string, s SidecarSpec) (argv, env []string) {
	argv = []string{bin, "-c", path, "--disable-hot-restart", "--log-level", "warn", "--service-node", s.Name, "--service-cluster", "meshbench"}
	if s.Threads > 0 {
		argv = append(argv, "--concurrency", strconv.Itoa(s.Threads))
	}
	return argv, nil
}

// Type URLs of the extensions the config uses.
const (
	envoyHCM        = "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
	envoyRouter     = "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"
	envoyDownTLS    = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext"
	envoyUpTLS      = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext"
	envoyHTTPUpOpts = "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
)

type obj = map[string]any

// Config renders the bootstrap. The inbound listener requires a client
// certificate signed by the run's CA and passes its subject to the app in
// workload.PeerHeader (and the connection's address in
// workload.ConnHeader); each outbound listener forwards over mTLS, checking
// the peer's DNS SAN. Plain listeners take HTTP/1.1 and, by Envoy's
// preface detection (codec AUTO), h2c; with H2C the app is called in h2c.
func (envoy) Config(s SidecarSpec) ([]byte, string, error) {
	tlsCerts := []obj{{"certificate_chain": obj{"filename": s.CertFile}, "private_key": obj{"filename": s.KeyFile}}}
	var listeners, clusters []obj
	if in := s.Inbound; in != nil {
		l, app, err := envoyInbound(s, in, tlsCerts)
		if err != nil {
			return nil, "", err
		}
		listeners, clusters = append(listeners, l), append(clusters, app)
	}
	for i, o := range s.Outbound {
		l, peer, err := envoyOutbound(s, i, o, tlsCerts)
		if err != nil {
			return nil, "", err
		}
		listeners, clusters = append(listeners, l), append(clusters, peer)
	}
	b, err := json.MarshalIndent(obj{
		"node":             obj{"id": s.Name, "cluster": "meshbench"},
		"static_resources": obj{"listeners": listeners, "clusters": clusters},
	}, "", "  ")
	if err != nil {
		return nil, "", fmt.Errorf("envoy sidecar %s: %w", s.Name, err)
	}
	return append(b, '\n'), s.stem() + "-envoy.json", nil
}

// envoyInbound renders the inbound mTLS listener of sidecar s, which
// requires a client certificate signed by the run's CA and passes its
// subject in workload.PeerHeader, and the cluster of its app (called in
// h2c with s.H2C). tlsCerts is the sidecar's own certificate.
func envoyInbound(s SidecarSpec, in *Inbound, tlsCerts []obj) (listener, app obj, err error) {
	addr, err := envoyAddress(in.Listen)
	if err != nil {
		return nil, nil, fmt.Errorf("envoy sidecar %s: inbound: %w", s.Name, err)
	}
	hcm := envoyHTTP("inbound", "app", "", []obj{{
		"header":        obj{"key": workload.PeerHeader, "value": "%DOWNSTREAM_PEER_SUBJECT%"},
		"append_action": "OVERWRITE_IF_EXISTS_OR_ADD",
	}, {
		"header":        obj{"key": workload.ConnHeader, "value": "%DOWNSTREAM_DIRECT_REMOTE_ADDRESS%"},
		"append_action": "OVERWRITE_IF_EXISTS_OR_ADD",
	}})
	listener = obj{
		"name":    "inbound",
		"address": addr,
		"filter_chains": []obj{{
			"transport_socket": obj{"name": "envoy.transport_sockets.tls", "typed_config": obj{
				"@type":                      envoyDownTLS,
				"require_client_certificate": true,
				"common_tls_context": obj{
					"tls_certificates":   tlsCerts,
					"validation_context": obj{"trusted_ca": obj{"filename": s.CAFile}},
					"alpn_protocols":     []string{"http/1.1"},
				},
			}},
			"filters": []obj{hcm},
		}},
	}
	app, err = envoyCluster("app", in.App)
	if err != nil {
		return nil, nil, fmt.Errorf("envoy sidecar %s: app: %w", s.Name, err)
	}
	if s.H2C {
		app["typed_extension_protocol_options"] = obj{"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": obj{
			"@type":                envoyHTTPUpOpts,
			"explicit_http_config": obj{"http2_protocol_options": obj{}},
		}}
	}
	return listener, app, nil
}

// envoyOutbound renders sidecar s's i-th outbound listener, plain, and the
// cluster of its peer, reached over mTLS with tlsCerts, checking the
// peer's DNS SAN.
func envoyOutbound(s SidecarSpec, i int, o Outbound, tlsCerts []obj) (listener, peer obj, err error) {
	name := "peer" + strconv.Itoa(i)
	addr, err := envoyAddress(o.Listen)
	if err != nil {
		return nil, nil, fmt.Errorf("envoy sidecar %s: outbound %s: %w", s.Name, o.ServerName, err)
	}
	listener = obj{
		"name":          "outbound" + strconv.Itoa(i),
		"address":       addr,
		"filter_chains": []obj{{"filters": []obj{envoyHTTP("outbound"+strconv.Itoa(i), name, o.ServerName, nil)}}},
	}
	peer, err = envoyCluster(name, o.Peer)
	if err != nil {
		return nil, nil, fmt.Errorf("envoy sidecar %s: peer %s: %w", s.Name, o.ServerName, err)
	}
	peer["transport_socket"] = obj{"name": "envoy.transport_sockets.tls", "typed_config": obj{
		"@type": envoyUpTLS,
		"sni":   o.ServerName,
		"common_tls_context": obj{
			"tls_certificates": tlsCerts,
			"validation_context": obj{
				"trusted_ca":                    obj{"filename": s.CAFile},
				"match_typed_subject_alt_names": []obj{{"san_type": "DNS", "matcher": obj{"exact": o.ServerName}}},
			},
			"alpn_protocols": []string{"http/1.1"},
		},
	}}
	return listener, peer, nil
}

// envoyHTTP is an HTTP connection manager routing everything to cluster,
// rewriting Host to host when set and adding headers to each request.
func envoyHTTP(name, cluster, host string, headers []obj) obj {
	route := obj{"cluster": cluster, "timeout": "0s"}
	if host != "" {
		route["host_rewrite_literal"] = host
	}
	vh := obj{"name": name, "domains": []string{"*"}, "routes": []obj{{"match": obj{"prefix": "/"}, "route": route}}}
	if len(headers) > 0 {
		vh["request_headers_to_add"] = headers
	}
	return obj{"name": "envoy.filters.network.http_connection_manager", "typed_config": obj{
		"@type":        envoyHCM,
		"stat_prefix":  name,
		"codec_type":   "AUTO",
		"route_config": obj{"name": name, "virtual_hosts": []obj{vh}},
		"http_filters": []obj{{"name": "envoy.filters.http.router", "typed_config": obj{"@type": envoyRouter}}},
	}}
}

// envoyCluster is a static cluster of one endpoint.
func envoyCluster(name, hostport string) (obj, error) {
	addr, err := envoyAddress(hostport)
	if err != nil {
		return nil, err
	}
	return obj{
		"name":            name,
		"type":            "STATIC",
		"connect_timeout": "5s",
		"load_assignment": obj{"cluster_name": name, "endpoints": []obj{{
			"lb_endpoints": []obj{{"endpoint": obj{"address": addr}}},
		}}},
	}, nil
}

func envoyAddress(hostport string) (obj, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil, err
	}
	p, err := strconv.Atoi(port)
	if err != nil || p <= 0 || p > 65535 {
		return nil, fmt.Errorf("address %s: bad port", hostport)
	}
	return obj{"socket_address": obj{"address": host, "port_value": p}}, nil
}
