package workload

import (
	"context"
	"net/http"
	"strings"
	"time"

	"fortio.org/fortio/fgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	"google.golang.org/grpc/health/grpc_health_v1"
)

// GRPCEcho returns the backend handler for gRPC: fortio's ping service
// (fgrpc.PingServer/Ping, what the loadgen calls) whose reply carries a
// payload of o.Size bytes after o.Delay, and the standard health service
// with "ping" SERVING.
//
// It is served by net/http's HTTP/2 server (cleartext with prior
// knowledge, see Server) through grpc-go's ServeHTTP, so that one listener
// also answers StatsPath (and FirstPath) over HTTP/1.1; that costs more CPU per call than
// grpc-go's own transport, the same in every arm. Callers are counted from
// their HTTP/2 headers exactly as the HTTP backend counts them:
// SourceHeader is the loadgen's gRPC metadata, PeerHeader and ProtoHeader
// the inbound sidecar's.
func GRPCEcho(o EchoOptions) http.Handler {
	c := newCounter("backend")
	srv := grpc.NewServer()
	fgrpc.RegisterPingServerServer(srv, &pinger{payload: strings.Repeat("a", o.Size), delay: o.Delay})
	hs := health.NewServer()
	hs.SetServingStatus(fgrpc.DefaultHealthServiceName, grpc_health_v1.HealthCheckResponse_SERVING)
	grpc_health_v1.RegisterHealthServer(srv, hs)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.serveOwn(w, r) {
			return
		}
		c.count(r)
		srv.ServeHTTP(w, r)
	})
}

// pinger answers fortio's ping with a fixed payload: the reply has the
// workload's response size whatever the request carried.
type pinger struct {
	payload string
	delay   time.Duration
}

// Ping answers after the configured delay with the request's Seq, the
// time in Unix nanoseconds and the fixed payload; it returns the context's
// error if cancelled first (fgrpc.PingServerServer).
func (p *pinger) Ping(ctx context.Context, in *fgrpc.PingMessage) (*fgrpc.PingMessage, error) {
	if p.delay > 0 {
		t := time.NewTimer(p.delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	}
	return &fgrpc.PingMessage{Seq: in.GetSeq(), Ts: time.Now().UnixNano(), Payload: p.payload}, nil
}
