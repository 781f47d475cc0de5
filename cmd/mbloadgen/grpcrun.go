package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"fortio.org/fortio/fgrpc"
	"fortio.org/fortio/fhttp"
	"fortio.org/fortio/jrpc"
	"fortio.org/fortio/periodic"
	"fortio.org/fortio/rapi"
	fstats "fortio.org/fortio/stats"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	xdscreds "google.golang.org/grpc/credentials/xds"
	"google.golang.org/grpc/status"
	_ "google.golang.org/grpc/xds" // the xds:/// resolver and balancers

	"github.com/meshbench/meshbench/framework/load"
)

// gRPC run types, the RunType of a gRPC run's result.
const (
	runTypeXDS  = "meshbench gRPC ping xds"
	runTypeGRPC = "meshbench gRPC ping"
)

// WarmupTimeout bounds the one uncounted call each connection makes before
// a gRPC run, which for xds:/// includes fetching the xDS resources.
const WarmupTimeout = 15 * time.Second

// MaxPayloadSize is the largest payload-size of a gRPC run, in bytes.
const MaxPayloadSize = 4<<20 - 1<<10

// grpcRun is one gRPC ping run asked on the REST API: url=xds:///host:port
// (xDS-managed client, xDS credentials over plaintext) or
// url=grpc://host:port (plaintext gRPC through DNS).
type grpcRun struct {
	url    string
	target string
	xds    bool
	// timeout bounds each call; fortio's HTTP default (3 s) when 0.
	timeout time.Duration
	// payload is sent in every ping, payload-size bytes.
	payload string
	ro      periodic.RunnerOptions
}

// grpcRunResults is a gRPC run's answer: fortio's RunnerResults, with
// RetCodes keyed by gRPC status code (0 is OK), and the same records as
// the HTTP runs.
type grpcRunResults struct {
	periodic.RunnerResults
	RetCodes          map[int]int64
	URL               string
	Destination       string
	PayloadSize       int
	SocketCount       int
	MeshbenchHDR      *load.Latencies `json:",omitempty"`
	MeshbenchTimeline *load.Timeline  `json:",omitempty"`
}

// isGRPCURL says a run URL is for the gRPC runner rather than fortio's.
func isGRPCURL(u string) bool {
	s := strings.ToLower(strings.TrimSpace(u))
	return strings.HasPrefix(s, "xds:") || strings.HasPrefix(s, "grpc:")
}

// grpcTarget returns the dial target of a run URL: xds:///host:port is
// dialed as is, grpc://host:port as dns:///host:port.
func grpcTarget(raw string) (target string, xds bool, err error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", false, fmt.Errorf("gRPC url %q: %w", raw, err)
	}
	var hostport string
	switch strings.ToLower(u.Scheme) {
	case "xds":
		if u.Host != "" || u.RawQuery != "" {
			return "", false, fmt.Errorf("gRPC url %q: want xds:///host:port (no authority, no query)", raw)
		}
		hostport, xds = strings.TrimPrefix(u.Path, "/"), true
	case "grpc":
		if u.Path != "" && u.Path != "/" || u.RawQuery != "" {
			return "", false, fmt.Errorf("gRPC url %q: want grpc://host:port (no path, no query)", raw)
		}
		hostport = u.Host
	default:
		return "", false, fmt.Errorf("gRPC url %q: unknown scheme %q, want xds or grpc", raw, u.Scheme)
	}
	if h, p, err := net.SplitHostPort(hostport); err != nil || h == "" || p == "" {
		return "", false, fmt.Errorf("gRPC url %q: want host:port, got %q", raw, hostport)
	}
	if xds {
		return "xds:///" + hostport, true, nil
	}
	return "dns:///" + hostport, false, nil
}

// parseGRPCRun reads a gRPC run from the REST query as fortio's REST API
// reads an HTTP one (c, qps, t, n, r, p, labels, jitter, uniform,
// nocatchup, timeout), plus payload-size; unlike fortio's, a value it
// cannot parse is an error rather than a default.
func parseGRPCRun(r *http.Request) (*grpcRun, error) {
	g := &grpcRun{url: r.FormValue("url")}
	var err error
	if g.target, g.xds, err = grpcTarget(g.url); err != nil {
		return nil, err
	}
	p := formParser{r: r}
	ro := periodic.RunnerOptions{
		RunType:     runTypeGRPC,
		Out:         os.Stdout,
		NumThreads:  p.int("c"),
		QPS:         p.float("qps"),
		Duration:    p.duration("t"),
		Exactly:     int64(p.int("n")),
		Resolution:  p.float("r"),
		Labels:      r.FormValue("labels"),
		Jitter:      r.FormValue("jitter") == "on",
		Uniform:     r.FormValue("uniform") == "on",
		NoCatchUp:   r.FormValue("nocatchup") == "on",
		Percentiles: rapi.DefaultPercentileList,
	}
	if g.xds {
		ro.RunType = runTypeXDS
	}
	if v := r.FormValue("p"); v != "" {
		if ro.Percentiles, err = fstats.ParsePercentiles(v); err != nil {
			p.errs = append(p.errs, fmt.Errorf("p=%q: %w", v, err))
		}
	}
	g.timeout = p.duration("timeout")
	if g.timeout <= 0 {
		g.timeout = fhttp.HTTPReqTimeOutDefaultValue
	}
	size := p.int("payload-size")
	if size > MaxPayloadSize {
		p.errs = append(p.errs, fmt.Errorf("payload-size=%d: want at most %d bytes (gRPC's default 4 MiB message limit, less room for the other fields)", size, MaxPayloadSize))
		size = 0
	}
	g.payload = strings.Repeat("a", size)
	g.ro = ro
	return g, errors.Join(p.errs...)
}

// formParser reads numbers from a request's form, keeping every error.
type formParser struct {
	r    *http.Request
	errs []error
}

func (p *formParser) value(key string, parse func(string) error) {
	if v := strings.TrimSpace(p.r.FormValue(key)); v != "" {
		if err := parse(v); err != nil {
			p.errs = append(p.errs, fmt.Errorf("%s=%q: %w", key, v, err))
		}
	}
}

func (p *formParser) int(key string) (n int) {
	p.value(key, func(v string) (err error) {
		if n, err = strconv.Atoi(v); err == nil && n < 0 {
			err = errors.New("want a number ≥ 0")
		}
		return err
	})
	return n
}

func (p *formParser) float(key string) (f float64) {
	p.value(key, func(v string) (err error) { f, err = strconv.ParseFloat(v, 64); return err })
	return f
}

func (p *formParser) duration(key string) (d time.Duration) {
	p.value(key, func(v string) (err error) {
		if d, err = time.ParseDuration(v); err == nil && d < 0 {
			err = errors.New("want a duration ≥ 0")
		}
		return err
	})
	return d
}

// dial opens n connections, one per fortio thread (as fortio's HTTP
// runner keeps one per thread), each with one uncounted ping so that its
// handshake (and the xDS resolution) is not measured. A first ping that
// gets no answer (Unavailable, DeadlineExceeded) fails the run; any other
// status is a server's answer, and the run counts such calls in RetCodes
// (as fortio's REST runs allow initial errors).
func (g *grpcRun) dial(ctx context.Context, n int) ([]*grpc.ClientConn, error) {
	creds, err := clientCredentials(g.xds)
	if err != nil {
		return nil, err
	}
	conns := make([]*grpc.ClientConn, 0, n)
	for range n {
		cc, err := grpc.NewClient(g.target, grpc.WithTransportCredentials(creds))
		if err != nil {
			return conns, fmt.Errorf("gRPC client for %s: %w", g.target, err)
		}
		conns = append(conns, cc)
		wctx, cancel := context.WithTimeout(ctx, WarmupTimeout)
		_, err = fgrpc.NewPingServerClient(cc).Ping(wctx, &fgrpc.PingMessage{Payload: g.payload})
		cancel()
		if c := status.Code(err); c == codes.Unavailable || c == codes.DeadlineExceeded || c == codes.Canceled {
			return conns, fmt.Errorf("first ping to %s on connection %d of %d: %w", g.target, len(conns), n, err)
		}
	}
	return conns, nil
}

// clientCredentials are a gRPC client's transport credentials: for an
// xds:/// target, xDS client credentials (the mTLS the control plane
// configures, with plain text where it configures none); else plain text.
func clientCredentials(xds bool) (credentials.TransportCredentials, error) {
	if !xds {
		return insecure.NewCredentials(), nil
	}
	creds, err := xdscreds.NewClientCredentials(xdscreds.ClientOptions{FallbackCreds: insecure.NewCredentials()})
	if err != nil {
		return nil, fmt.Errorf("xDS client credentials: %w", err)
	}
	return creds, nil
}

// pinger is one fortio thread: its own connection, one call in flight,
// and the status of every call it made.
type pinger struct {
	client  fgrpc.PingServerClient
	req     *fgrpc.PingMessage
	timeout time.Duration
	codes   map[codes.Code]int64
}

// Run makes one ping with the per-call timeout (periodic.Runnable).
func (p *pinger) Run(ctx context.Context, _ periodic.ThreadID) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	_, err := p.client.Ping(ctx, p.req)
	c := status.Code(err)
	p.codes[c]++
	return err == nil, c.String()
}

// closeAll closes every connection.
func closeAll(conns []*grpc.ClientConn) error {
	var errs []error
	for _, c := range conns {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// grpcRunHandler runs one gRPC load for runHandler, which holds the run
// slot, and answers its grpcRunResults, or fortio's jrpc error reply when
// the run cannot start.
func grpcRunHandler(w http.ResponseWriter, r *http.Request, hdr bool, bucket time.Duration) {
	g, err := parseGRPCRun(r)
	if err != nil {
		_ = jrpc.ReplyError(w, "bad gRPC run", err)
		return
	}
	res, err := g.execute(r.Context(), hdr, bucket)
	if err != nil {
		_ = jrpc.ReplyError(w, "Aborting because of error", err)
		return
	}
	body, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		replyError(w, http.StatusInternalServerError, fmt.Sprintf("encode the gRPC run's result: %v", err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// execute runs g on fortio's periodic engine, listed in fortio's REST
// runs so that /fortio/rest/status shows it and /fortio/rest/stop stops
// it, with the HDR histograms (hdr) and the timeline (bucket > 0) that
// HTTP runs record.
func (g *grpcRun) execute(ctx context.Context, hdr bool, bucket time.Duration) (_ *grpcRunResults, err error) {
	g.ro.RunID = rapi.NextRunID()
	defer rapi.RemoveRun(g.ro.RunID)
	aborter := rapi.UpdateRun(&g.ro) // normalizes g.ro
	// As fortio's rapi.Run: tells a stop that waits that the run is over.
	defer func() { aborter.StartChan <- false }()
	// The runner takes g.ro over (its Runners array too): from here on,
	// its Options are the run's.
	runner := periodic.NewPeriodicRunner(&g.ro)
	ro := runner.Options()
	conns, err := g.dial(ctx, ro.NumThreads)
	defer func() {
		if cerr := closeAll(conns); cerr != nil && err == nil {
			err = fmt.Errorf("close gRPC connections: %w", cerr)
		}
	}()
	if err != nil {
		ro.Abort()
		return nil, err
	}
	pingers := make([]*pinger, len(conns))
	for i, cc := range conns {
		req := &fgrpc.PingMessage{Payload: g.payload}
		pingers[i] = &pinger{client: fgrpc.NewPingServerClient(cc), req: req, timeout: g.timeout, codes: map[codes.Code]int64{}}
		ro.Runners[i] = pingers[i]
	}
	rec, tl := newRecorders(ro, hdr, bucket, g.timeout)
	res := runner.Run()
	ro.ReleaseRunners()
	return g.results(res, pingers, rec, tl)
}

// results adds to fortio's RunnerResults the calls' status codes and the
// records of the run.
func (g *grpcRun) results(res periodic.RunnerResults, ps []*pinger, rec *load.Recorder, tl *load.TimelineRecorder) (*grpcRunResults, error) {
	out := &grpcRunResults{RunnerResults: res, RetCodes: map[int]int64{}, URL: g.url, Destination: g.target, PayloadSize: len(g.payload), SocketCount: len(ps)}
	for _, p := range ps {
		for c, n := range p.codes {
			out.RetCodes[int(c)] += n
		}
	}
	if res.Error { // stopped before it started: nothing recorded
		return out, nil
	}
	if rec != nil {
		var err error
		if out.MeshbenchHDR, err = rec.Latencies(res.StartTime); err != nil {
			return nil, fmt.Errorf("HDR latencies: %w", err)
		}
	}
	if tl != nil {
		out.MeshbenchTimeline = tl.Timeline()
	}
	return out, nil
}
