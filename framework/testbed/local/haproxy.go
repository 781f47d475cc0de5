package local

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"text/template"

	"github.com/meshbench/meshbench/framework/workload"
)

func init() { registerSidecar("haproxy", func() Sidecar { return haproxy{} }) }

// haproxy is the sidecar when haproxy is on PATH (Debian: apt-get install
// haproxy). Connections to peers and apps are reused (http-reuse always).
type haproxy struct{}

// Name is "haproxy" (Sidecar).
func (haproxy) Name() string { return "haproxy" }

// Binary is haproxy's path on PATH; it is never built (Sidecar).
func (haproxy) Binary(context.Context, *builder) (string, error) {
	return onPath("haproxy", "Debian: apt-get install haproxy")
}

var haproxyVersion = regexp.MustCompile(`(?i)HA-?Proxy version (\S+)`)

// Version is the version in `haproxy -v`, or "unknown" (Sidecar).
func (haproxy) Version(ctx context.Context, bin string) string {
	out, _ := exec.CommandContext(ctx, bin, "-v").CombinedOutput()
	if m := haproxyVersion.FindSubmatch(out); m != nil {
		return string(m[1])
	}
	return "unknown"
}

// Command is `haproxy -db -f path`: in the foreground, with the config at
// path (Sidecar).
func (haproxy) Command(bin, path string, _ SidecarSpec) (argv, env []string) {
	return []string{bin, "-db", "-f", path}, nil
}

var haproxyTmpl = template.Must(template.New("haproxy").Parse(`# meshbench sidecar for {{.S.Name}}
global
  maxconn 8000
{{- if .S.Threads}}
  nbthread {{.S.Threads}}
{{- end}}
defaults
  mode http
  timeout connect 5s
  timeout client 60s
  timeout server 60s
  option http-keep-alive
  http-reuse always
{{- with .S.Inbound}}
frontend inbound
  bind {{.Listen}} ssl crt {{$.S.BundleFile}} ca-file {{$.S.CAFile}} verify required alpn http/1.1
  http-request set-header {{$.Peer}} %[ssl_c_s_dn(CN)]
  http-request set-header {{$.Conn}} %[src]:%[src_port]
  default_backend app
backend app
  server app {{.App}}{{if $.S.H2C}} proto h2{{end}}
{{- end}}
{{- range $i, $o := .S.Outbound}}
frontend outbound{{$i}}
  bind {{$o.Listen}}
  default_backend peer{{$i}}
backend peer{{$i}}
  http-request set-header Host {{$o.ServerName}}
  server peer {{$o.Peer}} ssl crt {{$.S.BundleFile}} ca-file {{$.S.CAFile}} verify required sni str({{$o.ServerName}}) verifyhost {{$o.ServerName}} alpn http/1.1
{{- end}}
`))

// Config renders haproxy.cfg. Plain listeners accept HTTP/1.1 and, by
// haproxy's preface detection, cleartext HTTP/2.
func (haproxy) Config(s SidecarSpec) ([]byte, string, error) {
	var buf bytes.Buffer
	if err := haproxyTmpl.Execute(&buf, map[string]any{"S": s, "Peer": workload.PeerHeader, "Conn": workload.ConnHeader}); err != nil {
		return nil, "", fmt.Errorf("render haproxy config for %s: %w", s.Name, err)
	}
	return buf.Bytes(), s.stem() + "-haproxy.cfg", nil
}
