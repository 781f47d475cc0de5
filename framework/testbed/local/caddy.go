package local

import (
	"context"
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/meshbench/meshbench/framework/workload"
)

func init() { registerSidecar("caddy", func() Sidecar { return caddy{} }) }

// caddy is the default sidecar: Caddy v2, built from this module's go.mod
// tool dependency, so nothing but Go is needed.
type caddy struct{}

const caddyPkg = "github.com/caddyserver/caddy/v2/cmd/caddy"

// Name is "caddy" (Sidecar).
func (caddy) Name() string { return "caddy" }

// permissive: Caddy's inbound side can also take plain text.
func (caddy) permissive() {}

// variants: Caddy renders the no-keep-alive configuration.
func (caddy) variants() {}

// pprofEndpoint: Caddy's admin endpoint serves Go's net/http/pprof.
func (caddy) pprofEndpoint() {}

// h2Upstream: Caddy's reverse proxy speaks h2 over TLS and h2c upstream,
// trailers included, so it carries h2 and gRPC end to end.
func (caddy) h2Upstream() {}

// Binary builds Caddy from this module's go.mod tool dependency into the
// binary cache and returns its path (Sidecar).
func (caddy) Binary(ctx context.Context, b *builder) (string, error) {
	return b.build(ctx, "caddy", caddyPkg)
}

// Version reads the Caddy module version from the binary's build info:
// `caddy version` says "unknown" for a binary built as a go.mod tool.
func (caddy) Version(_ context.Context, bin string) string {
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		return "unknown"
	}
	if bi.Main.Path == "github.com/caddyserver/caddy/v2" {
		return bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path == "github.com/caddyserver/caddy/v2" {
			return d.Version
		}
	}
	return "unknown"
}

// Command is `caddy run --config path`, with Caddy's data, config and home
// directories in the run directory and GOMAXPROCS set to the threads when
// they are fixed (Sidecar).
func (caddy) Command(bin, path string, s SidecarSpec) (argv, env []string) {
	env = []string{"XDG_DATA_HOME=" + s.Dir, "XDG_CONFIG_HOME=" + s.Dir, "HOME=" + s.Dir}
	if s.Threads > 0 {
		env = append(env, "GOMAXPROCS="+strconv.Itoa(s.Threads))
	}
	return []string{bin, "run", "--config", path}, env
}

// Config renders Caddy's native JSON: one server per listener, automatic
// HTTPS off, the workload certificate loaded from files, and client
// certificates required and verified against the run's CA on the inbound
// side. With H2C every hop is HTTP/2: h2c on the plain sides and to the
// app, h2 over mTLS between peers.
func (caddy) Config(s SidecarSpec) ([]byte, string, error) {
	caPool := obj{"provider": "file", "pem_files": []string{s.CAFile}}
	servers := caddyInbound(s, caPool)
	for i, out := range s.Outbound {
		servers[fmt.Sprintf("outbound%d", i)] = caddyOutbound(s, out, caPool)
	}
	admin := obj{"disabled": true}
	if s.Admin != "" {
		// Only this process can reach the socket's directory; nothing is
		// written back to disk when a profile is taken.
		admin = obj{"listen": "unix/" + s.Admin, "config": obj{"persist": false}}
	}
	cfg := obj{
		"admin":   admin,
		"logging": obj{"logs": caddyLogs(s, servers)},
		"storage": obj{"module": "file_system", "root": s.Dir},
		"apps": obj{
			"http": obj{"servers": servers},
			"tls": obj{"certificates": obj{"load_files": []obj{{
				"certificate": s.CertFile, "key": s.KeyFile, "tags": []string{"mesh"},
			}}}},
		},
	}
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, "", fmt.Errorf("render caddy config for %s: %w", s.Name, err)
	}
	return data, s.stem() + "-caddy.json", nil
}

// caddyPlain is the protocols a sidecar speaks in plain text.
func caddyPlain(s SidecarSpec) []string {
	if s.H2C {
		return []string{"h1", "h2c"}
	}
	return []string{"h1"}
}

// caddyInbound is the sidecar's inbound servers, by name: mTLS that
// passes the verified subject to the app, and in permissive mode plain
// text from outside the mesh.
func caddyInbound(s SidecarSpec, caPool obj) obj {
	servers := obj{}
	in := s.Inbound
	if in == nil {
		return servers
	}
	servers["inbound"] = obj{
		"listen":          []string{in.Listen},
		"protocols":       []string{"h1", "h2"},
		"automatic_https": obj{"disable": true},
		"tls_connection_policies": []obj{{
			"certificate_selection": obj{"any_tag": []string{"mesh"}},
			"client_authentication": obj{"ca": caPool, "mode": "require_and_verify"},
		}},
		"routes": caddyToApp(in.App, s.H2C, obj{"set": obj{
			workload.PeerHeader:  []string{"{http.request.tls.client.subject}"},
			workload.ProtoHeader: []string{"{http.request.proto}"},
			workload.ConnHeader:  []string{"{http.request.remote}"},
		}}),
	}
	if in.Plain != "" {
		// Permissive mode: plain text from outside the mesh, with no
		// verified peer (a caller's own peer header is dropped).
		servers["inbound-plain"] = obj{
			"listen":          []string{in.Plain},
			"protocols":       caddyPlain(s),
			"automatic_https": obj{"disable": true},
			"routes": caddyToApp(in.App, s.H2C, obj{
				"delete": []string{workload.PeerHeader},
				"set": obj{workload.ProtoHeader: []string{"{http.request.proto}"},
					workload.ConnHeader: []string{"{http.request.remote}"}},
			}),
		}
	}
	return servers
}

// caddyOutbound is one outbound server: plain text from the app, proxied
// to the peer's sidecar over mTLS.
func caddyOutbound(s SidecarSpec, out Outbound, caPool obj) obj {
	return obj{
		"listen":          []string{out.Listen},
		"protocols":       caddyPlain(s),
		"automatic_https": obj{"disable": true},
		"routes": []obj{{"handle": []obj{{
			"handler":   "reverse_proxy",
			"upstreams": []obj{{"dial": out.Peer}},
			// Address the peer by its service name, as a mesh does; Caddy
			// also insists that Host matches SNI once client certs are on.
			"headers": obj{"request": obj{"set": obj{"Host": []string{out.ServerName}}}},
			"transport": obj{
				"protocol":   "http",
				"versions":   peerVersions(s.H2C),
				"keep_alive": keepAlive(s.NoKeepAlive),
				"tls": obj{
					"ca":                          caPool,
					"client_certificate_file":     s.CertFile,
					"client_certificate_key_file": s.KeyFile,
					"server_name":                 out.ServerName,
				},
			},
		}}}},
	}
}

// caddyLogs is the logging config: errors only, and with an access log
// every server logs each request it serves, as JSON, to one file.
func caddyLogs(s SidecarSpec, servers obj) obj {
	logs := obj{"default": obj{"level": "ERROR"}}
	if !s.AccessLog {
		return logs
	}
	for _, srv := range servers {
		srv.(obj)["logs"] = obj{}
	}
	logs["default"] = obj{"level": "ERROR", "exclude": []string{"http.log.access"}}
	logs["access"] = obj{"level": "INFO", "include": []string{"http.log.access"},
		"writer": obj{"output": "file", "filename": s.AccessLogFile(), "roll": false}}
	return logs
}

// keepAlive is the outbound transport's connection reuse.
func keepAlive(off bool) map[string]any {
	if off {
		return map[string]any{"enabled": false}
	}
	return map[string]any{"max_idle_conns_per_host": 1024}
}

// caddyToApp is an inbound route to the app, with header operations on
// the request: who the verified peer is, which HTTP version the hop into
// the sidecar spoke, and which connection it came on.
func caddyToApp(app string, h2c bool, headers obj) []obj {
	return []obj{{"handle": []obj{{
		"handler":   "reverse_proxy",
		"upstreams": []obj{{"dial": app}},
		"headers":   obj{"request": headers},
		"transport": obj{"protocol": "http", "versions": appVersions(h2c),
			"keep_alive": obj{"max_idle_conns_per_host": 1024}},
	}}}}
}

// peerVersions is what the outbound side speaks to a peer over mTLS: h2
// (ALPN h2 only) when the workload is HTTP/2 end to end.
func peerVersions(h2 bool) []string {
	if h2 {
		return []string{"2"}
	}
	return []string{"1.1"}
}

// appVersions is what the inbound side speaks to its app.
func appVersions(h2c bool) []string {
	if h2c {
		return []string{"h2c"}
	}
	return []string{"1.1"}
}
