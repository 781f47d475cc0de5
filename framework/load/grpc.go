package load

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"fortio.org/fortio/fgrpc"
	"fortio.org/fortio/periodic"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// grpcCodeBase offsets gRPC status codes in Result.Codes, away from HTTP's.
const grpcCodeBase = 1000

// GRPCCode is the Result.Codes key of a gRPC call that ended with status
// c: 200 for OK, so that a gRPC result reads like an HTTP one, and 1000+c
// otherwise (1014 is Unavailable). A call that never reached a server
// ends with Unavailable, as gRPC reports it.
func GRPCCode(c codes.Code) int {
	if c == codes.OK {
		return http.StatusOK
	}
	return grpcCodeBase + int(c)
}

// grpcName names a Result.Codes key that is a gRPC status, or "".
func grpcName(code int) string {
	if code <= grpcCodeBase || code > grpcCodeBase+int(codes.Unauthenticated) {
		return ""
	}
	return codes.Code(code - grpcCodeBase).String()
}

// grpcTarget reports whether u is a gRPC target a loadgen dials:
// grpc://host:port (plain gRPC) or xds:///host:port (its xDS client).
func grpcTarget(u *url.URL) bool {
	switch u.Scheme {
	case "grpc":
		return u.Host != ""
	case "xds":
		return u.Host == "" && strings.TrimPrefix(u.Path, "/") != ""
	}
	return false
}

// grpcCaller is one fortio thread's gRPC client: its own connection, one
// call in flight, and the status of every call it made.
type grpcCaller struct {
	client  fgrpc.PingServerClient
	req     *fgrpc.PingMessage
	md      metadata.MD
	o       *Options
	results map[codes.Code]int64
}

var _ periodic.Runnable = (*grpcCaller)(nil)

// Run makes one ping call with the per-request timeout (periodic.Runnable).
func (g *grpcCaller) Run(ctx context.Context, _ periodic.ThreadID) (bool, string) {
	err := g.call(ctx)
	g.results[status.Code(err)]++
	if err != nil {
		return false, err.Error()
	}
	return true, "OK"
}

func (g *grpcCaller) call(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(metadata.NewOutgoingContext(ctx, g.md), g.o.Timeout)
	defer cancel()
	_, err := g.client.Ping(ctx, g.req)
	return err
}

// runGRPC runs unary calls of fortio's ping service with fgrpc's client on
// fortio's periodic engine, one connection per thread, each opened by one
// uncounted call before the window as fortio's HTTP runner does. It does
// not use fgrpc.RunGRPCTest: that runner never closes its connections (a
// TODO in fortio 1.75), so a sweep would pile idle HTTP/2 connections up
// on the first hop's sidecar and skew its memory; it also has no
// per-call deadline, and it counts every failed call as one "ERROR"
// without its status.
func runGRPC(ctx context.Context, o Options, ro periodic.RunnerOptions) (_ *window, err error) {
	u, err := url.Parse(o.URL)
	if err != nil {
		return nil, fmt.Errorf("grpc target %q: %w", o.URL, err)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("grpc target %q: the in-process client has no xDS client; it dials http:// and grpc:// hosts", o.URL)
	}
	ro.RunType = "meshbench gRPC ping"
	r := periodic.NewPeriodicRunner(&ro)
	defer r.Options().Abort()
	md := metadata.MD{}
	for k, v := range o.Headers {
		md.Append(strings.ToLower(k), v)
	}
	req := &fgrpc.PingMessage{Payload: strings.Repeat("a", o.RequestSize)}
	callers := make([]*grpcCaller, r.Options().NumThreads)
	var conns []*grpc.ClientConn
	defer func() {
		for _, c := range conns {
			err = errors.Join(err, c.Close())
		}
	}()
	for i := range callers {
		conn, err := grpc.NewClient("passthrough:///"+u.Host, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return nil, fmt.Errorf("grpc client for %s: %w", u.Host, err)
		}
		conns = append(conns, conn)
		callers[i] = &grpcCaller{client: fgrpc.NewPingServerClient(conn), req: req, md: md, o: &o, results: map[codes.Code]int64{}}
		r.Options().Runners[i] = callers[i]
		_ = callers[i].call(ctx) // opens the connection; failures show in the window
	}
	res := r.Run()
	r.Options().ReleaseRunners()
	w := &window{start: res.StartTime, elapsed: res.ActualDuration, qps: res.ActualQPS, codes: map[int]int64{}, latency: res.DurationHistogram}
	for _, c := range callers {
		for code, n := range c.results {
			w.codes[GRPCCode(code)] += n
		}
	}
	return w, nil
}
