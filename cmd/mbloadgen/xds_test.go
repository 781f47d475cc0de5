package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlspb "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	xdsserver "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	"k8s.io/apimachinery/pkg/util/wait"
)

// childArgsEnv, when set, makes the test binary run mbloadgen itself with
// these arguments (tab-separated): a test starts mbloadgen processes with
// their own environment, as gRPC reads its xDS bootstrap once per process.
const childArgsEnv = "MBLOADGEN_TEST_CHILD_ARGS"

func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv(childArgsEnv); ok {
		if err := run(strings.Split(args, "\t")); err != nil {
			fmt.Fprintln(os.Stderr, "mbloadgen:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The names of the xDS test's mesh, as Istio's would read.
const (
	xdsNode         = "sidecar~127.0.0.1~loadgen.a~a.svc.cluster.local"
	xdsService      = "backend.a.svc.cluster.local"
	loadgenSPIFFEID = "spiffe://cluster.local/ns/a/sa/loadgen"
	backendSPIFFEID = "spiffe://cluster.local/ns/a/sa/backend"
	// serverListenerTemplate is the bootstrap's
	// server_listener_resource_name_template.
	serverListenerTemplate = "grpc/server?xds.resource.listening_address=%s"
)

// TestXDSRunIsMutualTLS runs a loadgen and a backend as two mbloadgen
// processes, each with its own xDS bootstrap and certificate (file_watcher
// provider), configured by an in-process control plane as Istio configures
// proxyless gRPC: the backend's listener requires client certificates and
// the loadgen's cluster sends its own. The backend's peers show the
// loadgen's SPIFFE ID over mutual TLS, for every call.
func TestXDSRunIsMutualTLS(t *testing.T) {
	dir := t.TempDir()
	pki := newSPIFFECA(t, dir)
	grpcPort, backendHTTP, loadgenHTTP := freePort(t), freePort(t), freePort(t)
	xdsAddr := controlPlane(t, meshResources(grpcPort))
	backendBoot := writeBootstrap(t, dir, "backend", xdsAddr, pki.issue(t, "backend", backendSPIFFEID), pki.caFile)
	loadgenBoot := writeBootstrap(t, dir, "loadgen", xdsAddr, pki.issue(t, "loadgen", loadgenSPIFFEID), pki.caFile)
	startChild(t, backendBoot, "-listen", addrOf(backendHTTP), "-grpc-listen", addrOf(grpcPort))
	startChild(t, loadgenBoot, "-listen", addrOf(loadgenHTTP))
	waitServing(t, addrOf(grpcPort), pki.clientTLS(t, "loadgen"))
	noCert := pki.clientTLS(t, "loadgen")
	noCert.Certificates = nil
	assert.Error(t, healthCheck(context.Background(), addrOf(grpcPort), credentials.NewTLS(noCert)), "a client without a certificate is refused")
	assert.Error(t, healthCheck(context.Background(), addrOf(grpcPort), insecure.NewCredentials()), "a plaintext client is refused")

	lg := "http://" + addrOf(loadgenHTTP)
	target := "xds:///" + xdsService + ":8079"
	q := url.Values{"url": {target}, "c": {"2"}, "qps": {"-1"}, "n": {"40"}, "r": {"0.00001"}, "payload-size": {"64"}}
	code, body := post(t, lg+"/fortio/rest/run?"+q.Encode())
	require.Equal(t, http.StatusOK, code, string(body))
	res := decodeGRPC(t, body)
	assert.Equal(t, "meshbench gRPC ping xds", res.RunType)
	assert.Equal(t, map[int]int64{0: 40}, res.RetCodes)
	assert.Equal(t, int64(40), res.DurationHistogram.Count)
	require.NotNil(t, res.MeshbenchHDR)
	assert.Equal(t, int64(40), res.MeshbenchHDR.Uncorrected.Count())

	got := getPeers(t, "http://"+addrOf(backendHTTP))
	want := PeersReport{XDS: true, Peers: []PeerCalls{{
		PeerKey: PeerKey{Identity: loadgenSPIFFEID, MTLS: true, TLSVersion: "TLS 1.3"},
		Calls:   40 + 2, // and one uncounted first ping per connection
	}}}
	assert.Equal(t, want, got)
}

// spiffeCA is the test's certificate authority, written to caFile.
type spiffeCA struct {
	dir    string
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	caFile string
}

func newSPIFFECA(t *testing.T, dir string) *spiffeCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{Organization: []string{"cluster.local"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	ca := &spiffeCA{dir: dir, cert: cert, key: key, caFile: filepath.Join(dir, "root-cert.pem")}
	require.NoError(t, os.WriteFile(ca.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	return ca
}

// certFiles are one workload's certificate and key files.
type certFiles struct{ cert, key string }

// issue makes a workload certificate with the SPIFFE ID as its only URI
// SAN (and 127.0.0.1, for the test's own health checks), as Istio's CA does.
func (ca *spiffeCA) issue(t *testing.T, name, spiffeID string) certFiles {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	id, err := url.Parse(spiffeID)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), URIs: []*url.URL{id},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:   time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	f := certFiles{cert: filepath.Join(ca.dir, name+"-cert.pem"), key: filepath.Join(ca.dir, name+"-key.pem")}
	require.NoError(t, os.WriteFile(f.cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(f.key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600))
	return f
}

// clientTLS is the TLS of a client holding name's certificate.
func (ca *spiffeCA) clientTLS(t *testing.T, name string) *tls.Config {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(filepath.Join(ca.dir, name+"-cert.pem"), filepath.Join(ca.dir, name+"-key.pem"))
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	return &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
}

// writeBootstrap writes a gRPC xDS bootstrap as Istio's grpc-agent does:
// the control plane, the node, and the certificate provider instance
// "default" (file_watcher) with the workload's certificate and the roots.
func writeBootstrap(t *testing.T, dir, name, xdsAddr string, cf certFiles, caFile string) string {
	t.Helper()
	boot := map[string]any{
		"xds_servers": []any{map[string]any{
			"server_uri":      xdsAddr,
			"channel_creds":   []any{map[string]any{"type": "insecure"}},
			"server_features": []any{"xds_v3"},
		}},
		"node": map[string]any{"id": xdsNode, "locality": map[string]any{}},
		"certificate_providers": map[string]any{"default": map[string]any{
			"plugin_name": "file_watcher",
			"config": map[string]any{
				"certificate_file": cf.cert, "private_key_file": cf.key,
				"ca_certificate_file": caFile, "refresh_interval": "900s",
			},
		}},
		"server_listener_resource_name_template": serverListenerTemplate,
	}
	b, err := json.MarshalIndent(boot, "", "  ")
	require.NoError(t, err)
	path := filepath.Join(dir, name+"-bootstrap.json")
	require.NoError(t, os.WriteFile(path, b, 0o600))
	return path
}

// controlPlane serves the resources over ADS on a loopback port until the
// test ends, to every node, and returns its address.
func controlPlane(t *testing.T, res map[resource.Type][]types.Resource) string {
	t.Helper()
	addr, _ := updatableControlPlane(t, res)
	return addr
}

// pushFunc replaces a control plane's resources with res, at version.
type pushFunc func(version string, res map[resource.Type][]types.Resource)

// updatableControlPlane is controlPlane serving res at version "1", and
// also returns the function that pushes new versions to its clients.
func updatableControlPlane(t *testing.T, res map[resource.Type][]types.Resource) (string, pushFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c := cache.NewSnapshotCache(false, cache.IDHash{}, nil)
	push := func(version string, res map[resource.Type][]types.Resource) {
		t.Helper()
		snap, err := cache.NewSnapshot(version, res)
		require.NoError(t, err)
		require.NoError(t, c.SetSnapshot(ctx, xdsNode, snap))
	}
	push("1", res)
	gs := grpc.NewServer()
	discoverygrpc.RegisterAggregatedDiscoveryServiceServer(gs, xdsserver.NewServer(ctx, c, nil))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(func() {
		gs.Stop()
		cancel()
	})
	return ln.Addr().String(), push
}

// startChild runs mbloadgen with args in a child process whose xDS
// bootstrap is the file boot, until the test ends; its output is logged
// when the test fails.
func startChild(t *testing.T, boot string, args ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childArgsEnv+"="+strings.Join(args, "\t"), BootstrapEnv+"="+boot)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("mbloadgen %s:\n%s", strings.Join(args, " "), out.String())
		}
	})
	waitHealthy(t, "http://"+args[1]+HealthPath)
}

func waitHealthy(t *testing.T, u string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
		resp, err := http.Get(u)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}), "GET %s", u)
}

// waitServing waits until the xDS-managed backend has its listener and
// answers a health check over mutual TLS.
func waitServing(t *testing.T, addr string, cfg *tls.Config) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var last error
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		last = healthCheck(ctx, addr, credentials.NewTLS(cfg))
		return last == nil, nil
	})
	require.NoError(t, err, "health check of %s over mTLS: %v", addr, last)
}

// healthCheck asks addr's health service once, with creds.
func healthCheck(ctx context.Context, addr string, creds credentials.TransportCredentials) error {
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return fmt.Errorf("client for %s: %w", addr, err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	hr, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		return fmt.Errorf("health check of %s: %w", addr, err)
	}
	if hr.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("health check of %s: %s", addr, hr.GetStatus())
	}
	return nil
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func addrOf(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// lockedBuffer collects a child's output.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// meshResources are what istiod would send for a proxyless backend on
// grpcPort: the client's API listener, route, EDS cluster with mTLS and
// endpoints, and the server's inbound listener requiring client
// certificates.
func meshResources(grpcPort int) map[resource.Type][]types.Resource {
	const cluster = "outbound|8079||" + xdsService
	hostPort := xdsService + ":8079"
	return map[resource.Type][]types.Resource{
		resource.ListenerType: {clientListener(hostPort), serverListener(grpcPort)},
		resource.RouteType:    {routeConfig(hostPort, cluster)},
		resource.ClusterType:  {edsCluster(cluster)},
		resource.EndpointType: {endpoints(cluster, grpcPort)},
	}
}

func mustAny(m proto.Message) *anypb.Any {
	a, err := anypb.New(m)
	if err != nil {
		panic(err)
	}
	return a
}

var adsSource = &corepb.ConfigSource{ConfigSourceSpecifier: &corepb.ConfigSource_Ads{Ads: &corepb.AggregatedConfigSource{}}}

var routerFilter = &hcmpb.HttpFilter{Name: "envoy.filters.http.router", ConfigType: &hcmpb.HttpFilter_TypedConfig{TypedConfig: mustAny(&routerpb.Router{})}}

func clientListener(hostPort string) *listenerpb.Listener {
	hcm := &hcmpb.HttpConnectionManager{
		RouteSpecifier: &hcmpb.HttpConnectionManager_Rds{Rds: &hcmpb.Rds{ConfigSource: adsSource, RouteConfigName: hostPort}},
		HttpFilters:    []*hcmpb.HttpFilter{routerFilter},
	}
	return &listenerpb.Listener{Name: hostPort, ApiListener: &listenerpb.ApiListener{ApiListener: mustAny(hcm)}}
}

func routeConfig(hostPort, cluster string) *routepb.RouteConfiguration {
	return &routepb.RouteConfiguration{Name: hostPort, VirtualHosts: []*routepb.VirtualHost{{
		Name: hostPort, Domains: []string{hostPort, xdsService},
		Routes: []*routepb.Route{{
			Match:  &routepb.RouteMatch{PathSpecifier: &routepb.RouteMatch_Prefix{Prefix: "/"}},
			Action: &routepb.Route_Route{Route: &routepb.RouteAction{ClusterSpecifier: &routepb.RouteAction_Cluster{Cluster: cluster}}},
		}},
	}}}
}

// certProvider is the bootstrap's certificate provider instance, with the
// certificate names Istio asks for ("default", "ROOTCA").
func certProvider(name string) *tlspb.CertificateProviderPluginInstance {
	return &tlspb.CertificateProviderPluginInstance{InstanceName: "default", CertificateName: name}
}

// commonTLS is Istio's proxyless TLS context: the workload certificate and
// the roots from the provider, and the peer's SPIFFE ID to match when set.
// istiod sends each provider instance twice, in the current fields and in
// the deprecated ones for older gRPC clients, and so does the test.
func commonTLS(peerID string) *tlspb.CommonTlsContext {
	def := &tlspb.CertificateValidationContext{CaCertificateProviderInstance: certProvider("ROOTCA")}
	if peerID != "" {
		//lint:ignore SA1019 istiod sends match_subject_alt_names to proxyless gRPC
		def.MatchSubjectAltNames = []*matcherpb.StringMatcher{{MatchPattern: &matcherpb.StringMatcher_Exact{Exact: peerID}}}
	}
	combined := &tlspb.CommonTlsContext_CombinedCertificateValidationContext{DefaultValidationContext: def}
	//lint:ignore SA1019 istiod also sends the roots' provider in the deprecated field
	combined.ValidationContextCertificateProviderInstance = deprecatedProvider("ROOTCA")
	ctx := &tlspb.CommonTlsContext{
		TlsCertificateProviderInstance: certProvider("default"),
		ValidationContextType:          &tlspb.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: combined},
	}
	//lint:ignore SA1019 istiod also sends the certificate's provider in the deprecated field
	ctx.TlsCertificateCertificateProviderInstance = deprecatedProvider("default")
	return ctx
}

func deprecatedProvider(name string) *tlspb.CommonTlsContext_CertificateProviderInstance {
	return &tlspb.CommonTlsContext_CertificateProviderInstance{InstanceName: "default", CertificateName: name}
}

func tlsSocket(m proto.Message) *corepb.TransportSocket {
	return &corepb.TransportSocket{Name: "envoy.transport_sockets.tls", ConfigType: &corepb.TransportSocket_TypedConfig{TypedConfig: mustAny(m)}}
}

func edsCluster(name string) *clusterpb.Cluster {
	return &clusterpb.Cluster{
		Name:                 name,
		ClusterDiscoveryType: &clusterpb.Cluster_Type{Type: clusterpb.Cluster_EDS},
		EdsClusterConfig:     &clusterpb.Cluster_EdsClusterConfig{EdsConfig: adsSource, ServiceName: name},
		LbPolicy:             clusterpb.Cluster_ROUND_ROBIN,
		TransportSocket:      tlsSocket(&tlspb.UpstreamTlsContext{CommonTlsContext: commonTLS(backendSPIFFEID)}),
	}
}

func endpoints(cluster string, port int) *endpointpb.ClusterLoadAssignment {
	addr := &corepb.Address{Address: &corepb.Address_SocketAddress{SocketAddress: &corepb.SocketAddress{
		Address: "127.0.0.1", PortSpecifier: &corepb.SocketAddress_PortValue{PortValue: uint32(port)},
	}}}
	return &endpointpb.ClusterLoadAssignment{ClusterName: cluster, Endpoints: []*endpointpb.LocalityLbEndpoints{{
		Locality:            &corepb.Locality{Region: "r", Zone: "z"},
		LoadBalancingWeight: wrapperspb.UInt32(1),
		LbEndpoints: []*endpointpb.LbEndpoint{{
			HostIdentifier:      &endpointpb.LbEndpoint_Endpoint{Endpoint: &endpointpb.Endpoint{Address: addr}},
			LoadBalancingWeight: wrapperspb.UInt32(1),
		}},
	}}}
}

// serverListener is the backend's inbound listener: any connection, mutual
// TLS required, every RPC to the app (non-forwarding route).
func serverListener(port int) *listenerpb.Listener {
	hcm := &hcmpb.HttpConnectionManager{
		RouteSpecifier: &hcmpb.HttpConnectionManager_RouteConfig{RouteConfig: &routepb.RouteConfiguration{
			Name: "inbound|8079",
			VirtualHosts: []*routepb.VirtualHost{{Name: "inbound", Domains: []string{"*"}, Routes: []*routepb.Route{{
				Match:  &routepb.RouteMatch{PathSpecifier: &routepb.RouteMatch_Prefix{Prefix: "/"}},
				Action: &routepb.Route_NonForwardingAction{NonForwardingAction: &routepb.NonForwardingAction{}},
			}}}},
		}},
		HttpFilters: []*hcmpb.HttpFilter{routerFilter},
	}
	downstream := &tlspb.DownstreamTlsContext{RequireClientCertificate: wrapperspb.Bool(true), CommonTlsContext: commonTLS("")}
	return &listenerpb.Listener{
		Name: fmt.Sprintf(serverListenerTemplate, addrOf(port)),
		Address: &corepb.Address{Address: &corepb.Address_SocketAddress{SocketAddress: &corepb.SocketAddress{
			Address: "127.0.0.1", PortSpecifier: &corepb.SocketAddress_PortValue{PortValue: uint32(port)},
		}}},
		FilterChains: []*listenerpb.FilterChain{{
			Name:            "inbound-mtls",
			Filters:         []*listenerpb.Filter{{Name: "envoy.filters.network.http_connection_manager", ConfigType: &listenerpb.Filter_TypedConfig{TypedConfig: mustAny(hcm)}}},
			TransportSocket: tlsSocket(downstream),
		}},
	}
}
