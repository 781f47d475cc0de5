package local

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// Sidecar is a real proxy that the local target runs beside each workload
// of the meshed arm, the way a sidecar mesh does. Adding a proxy is one file
// implementing this interface and registering itself in sidecars.
type Sidecar interface {
	// Name is the flag value, e.g. "caddy".
	Name() string
	// Binary finds or builds the proxy executable.
	Binary(ctx context.Context, b *builder) (string, error)
	// Version reports the proxy's version, from the binary.
	Version(ctx context.Context, bin string) string
	// Config renders the proxy's configuration for one sidecar, returning
	// the file contents and its file name.
	Config(s SidecarSpec) (data []byte, file string, err error)
	// Command is the argv that runs the proxy with the config at path, and
	// any environment it needs.
	Command(bin, path string, s SidecarSpec) (argv, env []string)
}

// SidecarSpec is one sidecar's wiring.
type SidecarSpec struct {
	// Name is the workload the sidecar belongs to, e.g. "backend".
	Name string
	// Dir is the run directory, for any state the proxy writes.
	Dir string
	// CertFile, KeyFile are the workload's mTLS identity, BundleFile both
	// in one file; CAFile the run's CA.
	CertFile, KeyFile, BundleFile, CAFile string
	// Inbound, when set, terminates mTLS from peers and forwards to the app,
	// setting workload.PeerHeader to the verified client identity.
	Inbound *Inbound
	// Outbound are plain listeners the app (or loadgen) calls, each
	// forwarding over mTLS to one peer's inbound listener.
	Outbound []Outbound
	// H2C makes every hop HTTP/2, for the h2 and grpc protocols: the plain
	// sides (app and loadgen facing) accept cleartext HTTP/2 as well as
	// HTTP/1.1, the app is called in h2c, and peers over mTLS in h2 (ALPN
	// h2). Only proxies implementing h2Upstream are given it.
	H2C bool
	// Threads limits the proxy's worker threads; 0 leaves its default.
	Threads int
	// NoKeepAlive opens a new connection to the peer for every request
	// (a configuration variant; only sidecars implementing variants).
	NoKeepAlive bool
	// AccessLog writes a line for every request the sidecar serves to
	// the file AccessLogFile names (a configuration variant; only
	// sidecars implementing variants).
	AccessLog bool
	// File is a stem for the files the proxy writes, unique in the run
	// directory; default Name.
	File string
	// Admin, when set, is a unix socket for the proxy's admin endpoint,
	// which serves Go's pprof (only proxies implementing pprofEndpoint
	// are given it); "" keeps the admin endpoint off.
	Admin string
}

// AccessLogFile is where the sidecar writes its access log, with AccessLog.
func (s SidecarSpec) AccessLogFile() string {
	return filepath.Join(s.Dir, s.stem()+"-access.log")
}

func (s SidecarSpec) stem() string {
	if s.File != "" {
		return s.File
	}
	return s.Name
}

// Inbound is a sidecar's mTLS listener in front of its app.
type Inbound struct {
	Listen string // host:port, TLS with required client certificate
	App    string // host:port of the app, plain HTTP
	// Plain, when set, also takes plain HTTP from callers outside the mesh
	// (permissive mode), with no verified peer. Only proxies implementing
	// permissive are asked for it.
	Plain string
}

// Outbound is a sidecar's plain listener towards one peer.
type Outbound struct {
	Listen     string // host:port, plain HTTP
	Peer       string // host:port of the peer's inbound listener
	ServerName string // TLS name the peer's certificate must carry
}

// h2Upstream is a sidecar that proxies HTTP/2 to its upstreams, its app in
// h2c and its peers in h2 over mTLS, with trailers, so that h2 and gRPC
// run end to end. A sidecar without it cannot serve those protocols: the
// scenario is skipped with the reason.
type h2Upstream interface{ h2Upstream() }

// sidecars are the registered proxies, by name: each proxy's file
// registers itself (registerSidecar) from an init func.
var sidecars = map[string]func() Sidecar{}

// registerSidecar adds a proxy the local target can run as the sidecar;
// a name registered twice panics at start, naming it.
func registerSidecar(name string, mk func() Sidecar) {
	if err := addSidecar(name, mk); err != nil {
		panic(err)
	}
}

// addSidecar is registerSidecar's check and insertion.
func addSidecar(name string, mk func() Sidecar) error {
	if _, dup := sidecars[name]; dup {
		return fmt.Errorf("local: sidecar %q registered twice", name)
	}
	sidecars[name] = mk
	return nil
}

// SidecarNames lists the proxies the local target knows, sorted.
func SidecarNames() []string {
	names := make([]string, 0, len(sidecars))
	for n := range sidecars {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// lookSidecar returns the named proxy, or a clear error.
func lookSidecar(name string) (Sidecar, error) {
	mk, ok := sidecars[name]
	if !ok {
		return nil, fmt.Errorf("unknown sidecar %q: want one of %s", name, strings.Join(SidecarNames(), ", "))
	}
	return mk(), nil
}

// onPath finds an executable for proxies that must already be installed.
func onPath(name, hint string) (string, error) {
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("sidecar %s: %s is not on PATH (%s)", name, name, hint)
	}
	return p, nil
}
