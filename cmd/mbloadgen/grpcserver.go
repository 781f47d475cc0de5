package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sort"
	"sync"
	"time"

	"fortio.org/fortio/fgrpc"
	flog "fortio.org/log"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	xdscreds "google.golang.org/grpc/credentials/xds"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/xds"
)

// PeersPath serves what the gRPC backend's connections saw of their peers
// (Peers).
const PeersPath = "/meshbench/peers"

// BootstrapEnv names the xDS bootstrap file; Istio's grpc-agent injection
// sets it in the app's containers. When it is set (or gRPC's
// BootstrapConfigEnv, the bootstrap itself), -grpc-listen serves an
// xDS-managed server.
const (
	BootstrapEnv       = "GRPC_XDS_BOOTSTRAP"
	BootstrapConfigEnv = "GRPC_XDS_BOOTSTRAP_CONFIG"
)

// xdsBootstrapped says gRPC has an xDS bootstrap in its environment.
func xdsBootstrapped() bool {
	return os.Getenv(BootstrapEnv) != "" || os.Getenv(BootstrapConfigEnv) != ""
}

// Peers counts the ping calls the gRPC backend answered, per what the
// call's connection saw of its client: the path proof of a proxyless
// mesh. Its zero value is not usable; see NewPeers.
type Peers struct {
	xds   bool
	mu    sync.Mutex
	calls map[PeerKey]int64
}

// PeerKey is what one connection's handshake saw of the client.
type PeerKey struct {
	// Identity is the client certificate's SPIFFE ID
	// (spiffe://cluster.local/ns/NS/sa/SA), or "" without one.
	Identity string `json:"identity"`
	// MTLS says the client presented a certificate.
	MTLS bool `json:"mtls"`
	// TLSVersion is e.g. "TLS 1.3", or "" on a plaintext connection.
	TLSVersion string `json:"tlsVersion"`
}

// PeerCalls is one entry of PeersReport.
type PeerCalls struct {
	PeerKey
	// Calls counts the ping calls answered.
	Calls int64 `json:"calls"`
}

// PeersReport is what PeersPath answers.
type PeersReport struct {
	// XDS says the gRPC backend is xDS-managed (BootstrapEnv was set).
	XDS   bool        `json:"xds"`
	Peers []PeerCalls `json:"peers"`
}

// NewPeers returns an empty count; xds says whether the server it counts
// for is xDS-managed.
func NewPeers(xds bool) *Peers {
	return &Peers{xds: xds, calls: map[PeerKey]int64{}}
}

// record counts one call from the peer of ctx.
func (p *Peers) record(ctx context.Context) {
	k := peerKey(ctx)
	p.mu.Lock()
	p.calls[k]++
	p.mu.Unlock()
}

// Report lists the peers sorted by identity (then mTLS, TLS version).
func (p *Peers) Report() PeersReport {
	if p == nil {
		return PeersReport{Peers: []PeerCalls{}}
	}
	p.mu.Lock()
	r := PeersReport{XDS: p.xds, Peers: make([]PeerCalls, 0, len(p.calls))}
	for k, n := range p.calls {
		r.Peers = append(r.Peers, PeerCalls{PeerKey: k, Calls: n})
	}
	p.mu.Unlock()
	sort.Slice(r.Peers, func(i, j int) bool {
		a, b := r.Peers[i], r.Peers[j]
		if a.Identity != b.Identity {
			return a.Identity < b.Identity
		}
		if a.MTLS != b.MTLS {
			return !a.MTLS
		}
		return a.TLSVersion < b.TLSVersion
	})
	return r
}

// ServeHTTP answers the report as JSON.
func (p *Peers) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(p.Report())
}

// peerKey reads the TLS state of the call's connection: the client's
// SPIFFE ID (as gRPC's TLS credentials found it, else the first spiffe URI
// SAN of its leaf certificate), whether it presented a certificate, and
// the TLS version. A plaintext connection gives the zero key.
func peerKey(ctx context.Context) PeerKey {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return PeerKey{}
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok {
		return PeerKey{}
	}
	st := info.State
	k := PeerKey{MTLS: len(st.PeerCertificates) > 0, TLSVersion: tls.VersionName(st.Version)}
	switch {
	case info.SPIFFEID != nil:
		k.Identity = info.SPIFFEID.String()
	case k.MTLS:
		for _, u := range st.PeerCertificates[0].URIs {
			if u.Scheme == "spiffe" {
				k.Identity = u.String()
				break
			}
		}
	}
	return k
}

// pingServer answers fortio's ping: the message back, with the server's
// time, after the message's DelayNanos (as fortio's own ping server).
type pingServer struct{ peers *Peers }

// Ping echoes in (fgrpc.PingServerServer).
func (s *pingServer) Ping(ctx context.Context, in *fgrpc.PingMessage) (*fgrpc.PingMessage, error) {
	s.peers.record(ctx)
	out := &fgrpc.PingMessage{Seq: in.GetSeq(), Payload: in.GetPayload(), DelayNanos: in.GetDelayNanos(), Ts: time.Now().UnixNano()}
	if d := time.Duration(in.GetDelayNanos()); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return out, nil
}

// pingServiceDesc is fgrpc's PingServer service; fgrpc registers it on a
// *grpc.Server only, and an xDS server is a grpc.ServiceRegistrar.
var pingServiceDesc = grpc.ServiceDesc{
	ServiceName: "fgrpc.PingServer",
	HandlerType: (*fgrpc.PingServerServer)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Ping",
		Handler: func(srv any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
			in := new(fgrpc.PingMessage)
			if err := dec(in); err != nil {
				return nil, err
			}
			h := func(ctx context.Context, req any) (any, error) {
				return srv.(fgrpc.PingServerServer).Ping(ctx, req.(*fgrpc.PingMessage))
			}
			if icpt == nil {
				return h(ctx, in)
			}
			return icpt(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: "/fgrpc.PingServer/Ping"}, h)
		},
	}},
	Metadata: "ping.proto",
}

// grpcBackend is the ping and health server that -grpc-listen serves.
type grpcBackend interface {
	grpc.ServiceRegistrar
	Serve(net.Listener) error
	GracefulStop()
	Stop()
}

// newGRPCBackend returns the ping and health server, xDS-managed (with
// xDS credentials, plaintext as their fallback) when xdsManaged, else a
// plaintext gRPC server.
func newGRPCBackend(peers *Peers, xdsManaged bool) (grpcBackend, error) {
	var srv grpcBackend
	if xdsManaged {
		creds, err := xdscreds.NewServerCredentials(xdscreds.ServerOptions{FallbackCreds: insecure.NewCredentials()})
		if err != nil {
			return nil, fmt.Errorf("xDS server credentials: %w", err)
		}
		xs, err := xds.NewGRPCServer(grpc.Creds(creds), xds.ServingModeCallback(logServingMode))
		if err != nil {
			return nil, fmt.Errorf("xDS gRPC server (bootstrap %s=%q): %w", BootstrapEnv, os.Getenv(BootstrapEnv), err)
		}
		srv = xs
	} else {
		srv = grpc.NewServer(grpc.Creds(insecure.NewCredentials()))
	}
	srv.RegisterService(&pingServiceDesc, &pingServer{peers: peers})
	hs := health.NewServer()
	hs.SetServingStatus(fgrpc.DefaultHealthServiceName, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	return srv, nil
}

func logServingMode(addr net.Addr, args xds.ServingModeChangeArgs) {
	if args.Err != nil {
		flog.Warnf("xDS gRPC listener %s is %s: %v", addr, args.Mode, args.Err)
		return
	}
	flog.Infof("xDS gRPC listener %s is %s", addr, args.Mode)
}

// serveGRPC serves the gRPC backend on ln until ctx ends, then stops it
// gracefully (for at most grace).
func serveGRPC(ctx context.Context, ln net.Listener, srv grpcBackend, grace time.Duration) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("gRPC server on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	done := make(chan struct{})
	go func() { srv.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
		srv.Stop()
	}
	if err := <-errc; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return fmt.Errorf("gRPC server on %s: %w", ln.Addr(), err)
	}
	return nil
}
