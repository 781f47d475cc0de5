package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"fortio.org/fortio/fgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/meshbench/meshbench/framework/load"
)

// routeProbe is one long poll asked on load.RouteProbePath (the query of
// load.RouteProbeQuery).
type routeProbe struct {
	// target is as asked; dial is its gRPC dial target (grpcTarget).
	target string
	dial   string
	xds    bool
	// want is the state waited for: load.RouteOK or load.RouteAbort.
	want     string
	timeout  time.Duration
	interval time.Duration
}

// parseRouteProbe reads a route probe from the request's query; every
// error names its parameter.
func parseRouteProbe(r *http.Request) (*routeProbe, error) {
	p := &routeProbe{target: strings.TrimSpace(r.FormValue("target")), want: strings.TrimSpace(r.FormValue("want"))}
	var errs []error
	if p.target == "" {
		errs = append(errs, errors.New("target: missing, want xds:///host:port, grpc://host:port or host:port"))
	} else if dial, xds, err := grpcTarget(probeURL(p.target)); err != nil {
		errs = append(errs, fmt.Errorf("target=%q: %w", p.target, err))
	} else {
		p.dial, p.xds = dial, xds
	}
	switch p.want {
	case load.RouteOK, load.RouteAbort:
	case "":
		errs = append(errs, fmt.Errorf("want: missing, want %s or %s", load.RouteOK, load.RouteAbort))
	default:
		errs = append(errs, fmt.Errorf("want=%q: want %s or %s", p.want, load.RouteOK, load.RouteAbort))
	}
	var err error
	if p.timeout, err = durationParam(r, "timeout", load.RouteProbeTimeout, time.Millisecond, load.MaxRouteProbeTimeout); err != nil {
		errs = append(errs, err)
	}
	if p.interval, err = durationParam(r, "interval", load.RouteProbeInterval, load.MinRouteProbeInterval, load.MaxRouteProbeTimeout); err != nil {
		errs = append(errs, err)
	}
	return p, errors.Join(errs...)
}

// probeURL reads a bare host:port as grpc://host:port.
func probeURL(target string) string {
	if strings.Contains(target, "://") {
		return target
	}
	return "grpc://" + target
}

// durationParam reads the duration key of the request's query: def when
// it is absent, an error naming key when it does not parse or is outside
// [lo, hi].
func durationParam(r *http.Request, key string, def, lo, hi time.Duration) (time.Duration, error) {
	v := strings.TrimSpace(r.FormValue(key))
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return def, fmt.Errorf("%s=%q: %w", key, v, err)
	}
	if d < lo || d > hi {
		return def, fmt.Errorf("%s=%q: want a duration from %s to %s", key, v, lo, hi)
	}
	return d, nil
}

// routeProbeHandler answers load.RouteProbePath: 400 on a bad query, else
// the load.RouteProbeResult, with 200 once a probe call's route is in the
// wanted state and 504 when the timeout passes (or the request ends)
// before.
func routeProbeHandler(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	p, err := parseRouteProbe(r)
	if err != nil {
		replyError(w, http.StatusBadRequest, fmt.Sprintf("bad route probe: %v", err))
		return
	}
	cc, err := probeConns.get(p.dial, p.xds)
	if err != nil {
		replyError(w, http.StatusInternalServerError, fmt.Sprintf("route probe of %s: %v", p.target, err))
		return
	}
	res, ok := p.run(r.Context(), cc, start)
	code := http.StatusOK
	if !ok {
		code = http.StatusGatewayTimeout
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(res)
}

// run probes the route, one call every p.interval from start (the
// request's arrival), until a call's route is in p.want, p.timeout has
// passed or ctx ends; ok says it got there.
func (p *routeProbe) run(reqCtx context.Context, cc *grpc.ClientConn, start time.Time) (res load.RouteProbeResult, ok bool) {
	ctx, cancel := context.WithDeadline(reqCtx, start.Add(p.timeout))
	defer cancel()
	client := fgrpc.NewPingServerClient(cc)
	tick := time.NewTicker(p.interval)
	defer tick.Stop()
	res.Target = p.target
	for {
		state, err := probeCall(ctx, client)
		if state == p.want || !cutShort(ctx, err) {
			res.Probes++
			res.State = state
			if state == load.RouteError {
				res.LastError = err.Error()
			}
		}
		if state == p.want {
			res.WaitedNs = time.Since(start).Nanoseconds()
			return res, true
		}
		select {
		case <-ctx.Done():
			return p.gaveUp(reqCtx, res, start), false
		case <-tick.C:
		}
	}
}

// gaveUp completes the result of a probe that timed out, or whose request
// (reqCtx) ended: the wait, and why it ended before the last error.
func (p *routeProbe) gaveUp(reqCtx context.Context, res load.RouteProbeResult, start time.Time) load.RouteProbeResult {
	waited := time.Since(start)
	res.WaitedNs = waited.Nanoseconds()
	why := fmt.Sprintf("timed out after %s waiting for state %q", p.timeout, p.want)
	if err := reqCtx.Err(); err != nil {
		why = fmt.Sprintf("request ended (%v) after %s waiting for state %q", err, waited.Round(time.Millisecond), p.want)
	}
	if res.LastError != "" {
		why += "; last error: " + res.LastError
	}
	res.LastError = why
	return res
}

// probeCall makes one ping carrying load.RouteProbeHeader, within
// load.RouteProbeCallTimeout, and classifies its route: load.RouteOK when it
// succeeded, load.RouteAbort when it ended with load.RouteProbeAbortCode,
// else load.RouteError. err is the call's.
func probeCall(ctx context.Context, client fgrpc.PingServerClient) (state string, err error) {
	ctx, cancel := context.WithTimeout(ctx, load.RouteProbeCallTimeout)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, load.RouteProbeHeader, load.RouteProbeHeaderValue)
	_, err = client.Ping(ctx, &fgrpc.PingMessage{})
	switch {
	case err == nil:
		return load.RouteOK, nil
	case status.Code(err) == load.RouteProbeAbortCode:
		return load.RouteAbort, err
	}
	return load.RouteError, err
}

// cutShort says a probe call ended with err because ctx (the probe's
// deadline, or its request) ended, which says nothing of the route. gRPC
// may fail a call on the deadline before ctx's own timer has fired, hence
// the margin.
func cutShort(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return true
	}
	if c := status.Code(err); c != codes.DeadlineExceeded && c != codes.Canceled {
		return false
	}
	d, ok := ctx.Deadline()
	return ok && time.Until(d) < time.Millisecond
}

// connRegistry holds the route probe's connections, one per dial target.
type connRegistry struct {
	mu    sync.Mutex
	conns map[string]*grpc.ClientConn
}

// probeConns are opened on first use and kept for the process's life,
// never idle: an xDS channel's watches then persist between probes, and a
// probe sees a route update as soon as the xDS client has it.
var probeConns = &connRegistry{conns: map[string]*grpc.ClientConn{}}

// get returns the connection to target, opening it when there is none:
// for xDS, with xDS credentials and plaintext as their fallback (as
// grpcRun.dial), else in plaintext.
func (c *connRegistry) get(target string, xds bool) (*grpc.ClientConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cc, ok := c.conns[target]; ok {
		return cc, nil
	}
	creds, err := clientCredentials(xds)
	if err != nil {
		return nil, err
	}
	cc, err := grpc.NewClient(target, grpc.WithTransportCredentials(creds), grpc.WithIdleTimeout(0))
	if err != nil {
		return nil, fmt.Errorf("gRPC client for %s: %w", target, err)
	}
	c.conns[target] = cc
	return cc, nil
}
