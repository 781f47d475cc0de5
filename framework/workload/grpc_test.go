package workload

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"fortio.org/fortio/fgrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// serve runs h on a real loopback listener, HTTP/1.1 and h2c.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := Server("", h, true)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// TestGRPCThroughProxy calls the gRPC backend through the h2c frontend, as
// the loadgen does: replies carry the response size, trailers (the status)
// survive the proxy, and each app counts its caller from the metadata.
func TestGRPCThroughProxy(t *testing.T) {
	be := serve(t, GRPCEcho(EchoOptions{Size: 300}))
	u, err := url.Parse(be)
	require.NoError(t, err)
	fe := serve(t, Proxy(ProxyOptions{Upstream: u, H2C: true}))

	conn, err := grpc.NewClient(strings.TrimPrefix(fe, "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	ctx := metadata.AppendToOutgoingContext(context.Background(),
		strings.ToLower(SourceHeader), "loadgen", strings.ToLower(PeerHeader), "CN=loadgen,O=meshbench",
		strings.ToLower(ProtoHeader), "HTTP/2.0") // as an inbound sidecar would
	for i := range 3 {
		out, err := fgrpc.NewPingServerClient(conn).Ping(ctx, &fgrpc.PingMessage{Seq: int64(i), Payload: "x"})
		require.NoError(t, err)
		assert.Len(t, out.GetPayload(), 300)
		assert.Equal(t, int64(i), out.GetSeq())
	}
	h, err := grpc_health_v1.NewHealthClient(conn).Check(ctx, &grpc_health_v1.HealthCheckRequest{Service: fgrpc.DefaultHealthServiceName})
	require.NoError(t, err)
	assert.Equal(t, grpc_health_v1.HealthCheckResponse_SERVING, h.GetStatus())

	// A failed call's status is a trailer too, and comes through as such.
	err = conn.Invoke(ctx, "/fgrpc.PingServer/Nope", &fgrpc.PingMessage{}, &fgrpc.PingMessage{})
	assert.Equal(t, codes.Unimplemented, status.Code(err), "%v", err)

	// One HTTP/2 connection carried the five calls on each hop.
	assert.Equal(t, Stats{Role: "frontend", Requests: 5, Callers: []Caller{{Source: "loadgen", Peer: "loadgen", Proto: "HTTP/2.0", Requests: 5, Connections: 1}}}, stats(t, fe))
	// The frontend strips the sidecar's headers: the backend counts its own
	// hop, h2c from the frontend.
	assert.Equal(t, Stats{Role: "backend", Requests: 5, Callers: []Caller{{Source: "frontend", Peer: Direct, Proto: "HTTP/2.0", Requests: 5, Connections: 1}}}, stats(t, be))
}
