package load

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"fortio.org/fortio/fgrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// pingCounter is a gRPC ping server that counts what it answered: it fails
// calls carrying x-fail with ResourceExhausted and holds calls carrying
// x-hold until they are cancelled.
type pingCounter struct {
	mu      sync.Mutex
	ok      int64
	failed  int64
	sources map[string]int64
	payload int
}

func (p *pingCounter) Ping(ctx context.Context, in *fgrpc.PingMessage) (*fgrpc.PingMessage, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	p.mu.Lock()
	p.sources[strings.Join(md.Get("x-meshbench-src"), ",")]++
	p.payload = len(in.GetPayload())
	p.mu.Unlock()
	if len(md.Get("x-hold")) > 0 {
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(md.Get("x-fail")) > 0 {
		p.failed++
		return nil, status.Error(codes.ResourceExhausted, "told to fail")
	}
	p.ok++
	return in, nil
}

func startPing(t *testing.T) (*pingCounter, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	p := &pingCounter{sources: map[string]int64{}}
	fgrpc.RegisterPingServerServer(srv, p)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return p, "http://" + ln.Addr().String() + "/"
}

// TestGRPCAgainstRealServer runs gRPC loads against a real in-process ping
// server: every call is in the result once, with its status as its code,
// and the server saw each of them plus one opening call per connection.
func TestGRPCAgainstRealServer(t *testing.T) {
	ctx := context.Background()
	p, url := startPing(t)
	res, err := Measure(ctx, Options{URL: url, Protocol: GRPC, Concurrency: 3, Duration: 300 * time.Millisecond, RequestSize: 64,
		Headers: map[string]string{"X-Meshbench-Src": "loadgen"}})
	require.NoError(t, err)
	assert.Positive(t, res.Requests)
	assert.Equal(t, map[int]int64{200: res.Requests}, res.Codes)
	assert.Equal(t, res.Requests, res.Latency.Count)
	assert.Zero(t, res.Errors)
	assert.Empty(t, res.Invalid)
	assert.Equal(t, res.Requests+3, p.ok, "every call of the window, and one opening call per connection")
	assert.Equal(t, map[string]int64{"loadgen": p.ok}, p.sources, "headers travel as metadata")
	assert.Equal(t, 64, p.payload)

	bad, err := Measure(ctx, Options{URL: url, Protocol: GRPC, Concurrency: 2, Duration: 200 * time.Millisecond,
		Headers: map[string]string{"X-Fail": "yes"}})
	require.NoError(t, err)
	assert.Positive(t, bad.Requests)
	assert.Equal(t, map[int]int64{1008: bad.Requests}, bad.Codes)
	assert.Equal(t, bad.Requests, bad.Errors)
	assert.Equal(t, bad.Requests+2, p.failed)
	require.Len(t, bad.Invalid, 1)
	assert.Contains(t, bad.Invalid[0].Detail, "requests failed (codes 1008(ResourceExhausted):")

	held, err := Measure(ctx, Options{URL: url, Protocol: GRPC, Duration: 150 * time.Millisecond, Timeout: 50 * time.Millisecond,
		Headers: map[string]string{"X-Hold": "yes"}})
	require.NoError(t, err)
	assert.Positive(t, held.Requests)
	assert.Equal(t, map[int]int64{GRPCCode(codes.DeadlineExceeded): held.Requests}, held.Codes, "the per-request timeout is the call's deadline")

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = Run(cctx, Options{URL: url, Protocol: GRPC, Duration: 5 * time.Second, Warmup: -1})
	assert.ErrorIs(t, err, context.Canceled)
}

func TestGRPCCode(t *testing.T) {
	assert.Equal(t, 200, GRPCCode(codes.OK))
	assert.Equal(t, 1014, GRPCCode(codes.Unavailable))
	assert.Equal(t, "-1:1 200:5 1014(Unavailable):2 1016(Unauthenticated):1 1017:1", FormatCodes(map[int]int64{200: 5, 1014: 2, -1: 1, 1016: 1, 1017: 1}))
}

// TestGRPCInProcessDialsNoXDS: an xds:/// target is for a loadgen with an
// xDS client (cmd/mbloadgen); the in-process client says it has none,
// before it opens a connection.
func TestGRPCInProcessDialsNoXDS(t *testing.T) {
	_, err := Measure(context.Background(), Options{URL: "xds:///backend.ns.svc.cluster.local:8079", Protocol: GRPC, Duration: time.Second})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `grpc target "xds:///backend.ns.svc.cluster.local:8079": the in-process client has no xDS client; it dials http:// and grpc:// hosts`)
}
