package local

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"text/template"

	"github.com/meshbench/meshbench/framework/workload"
)

func init() { registerSidecar("nginx", func() Sidecar { return nginx{} }) }

// nginx is the sidecar when nginx is on PATH (Debian: apt-get install
// nginx-light). Upstream connections are kept alive on both sides.
type nginx struct{}

// Name is "nginx" (Sidecar).
func (nginx) Name() string { return "nginx" }

// Binary is nginx's path on PATH; it is never built (Sidecar).
func (nginx) Binary(context.Context, *builder) (string, error) {
	return onPath("nginx", "Debian: apt-get install nginx-light")
}

var nginxVersion = regexp.MustCompile(`nginx/(\S+)`)

// Version is the version in `nginx -v`, or "unknown" (Sidecar).
func (nginx) Version(ctx context.Context, bin string) string {
	out, _ := exec.CommandContext(ctx, bin, "-v").CombinedOutput()
	if m := nginxVersion.FindSubmatch(out); m != nil {
		return string(m[1])
	}
	return "unknown"
}

// Command is nginx with the run directory as its prefix, errors to stderr
// and the config at path (Sidecar).
func (nginx) Command(bin, path string, s SidecarSpec) (argv, env []string) {
	return []string{bin, "-p", s.Dir, "-e", "stderr", "-c", path}, nil
}

var nginxTmpl = template.Must(template.New("nginx").Parse(`# meshbench sidecar for {{.S.Name}}
daemon off;
master_process on;
{{if .Root}}user root;{{end}}
worker_processes {{if .S.Threads}}{{.S.Threads}}{{else}}auto{{end}};
pid {{.Dir}}/{{.S.Name}}-nginx.pid;
error_log stderr warn;
events { worker_connections 8192; }
http {
  access_log off;
  client_body_temp_path {{.Tmp}}/body;
  proxy_temp_path {{.Tmp}}/proxy;
  fastcgi_temp_path {{.Tmp}}/fastcgi;
  uwsgi_temp_path {{.Tmp}}/uwsgi;
  scgi_temp_path {{.Tmp}}/scgi;
  keepalive_requests 1000000;
{{- with .S.Inbound}}
  upstream app { server {{.App}}; keepalive 512; }
  server {
    listen {{.Listen}} ssl;
    ssl_certificate {{$.S.CertFile}};
    ssl_certificate_key {{$.S.KeyFile}};
    ssl_client_certificate {{$.S.CAFile}};
    ssl_verify_client on;
    location / {
      proxy_pass http://app;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header {{$.Peer}} $ssl_client_s_dn;
      proxy_set_header {{$.Conn}} $remote_addr:$remote_port;
    }
  }
{{- end}}
{{- range $i, $o := .S.Outbound}}
  upstream peer{{$i}} { server {{$o.Peer}}; keepalive 512; }
  server {
    listen {{$o.Listen}}{{if $.S.H2C}} http2{{end}};
    location / {
      proxy_pass https://peer{{$i}};
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host {{$o.ServerName}};
      proxy_ssl_certificate {{$.S.CertFile}};
      proxy_ssl_certificate_key {{$.S.KeyFile}};
      proxy_ssl_trusted_certificate {{$.S.CAFile}};
      proxy_ssl_verify on;
      proxy_ssl_name {{$o.ServerName}};
      proxy_ssl_server_name on;
      proxy_ssl_session_reuse on;
    }
  }
{{- end}}
}
`))

// Config renders nginx.conf. The app side speaks HTTP/1.1 (nginx does not
// proxy h2c to upstreams); with H2C the plain listeners accept h2c.
func (nginx) Config(s SidecarSpec) ([]byte, string, error) {
	tmp := filepath.Join(s.Dir, s.stem()+"-nginx-tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, "", fmt.Errorf("nginx temp dir for %s: %w", s.Name, err)
	}
	var buf bytes.Buffer
	err := nginxTmpl.Execute(&buf, map[string]any{
		"S": s, "Dir": s.Dir, "Tmp": tmp, "Root": os.Geteuid() == 0, "Peer": workload.PeerHeader,
		"Conn": workload.ConnHeader,
	})
	if err != nil {
		return nil, "", fmt.Errorf("render nginx config for %s: %w", s.Name, err)
	}
	return buf.Bytes(), s.stem() + "-nginx.conf", nil
}
