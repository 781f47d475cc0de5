package load

import (
	"net/url"
	"time"

	"google.golang.org/grpc/codes"
)

// RouteProbePath is mbloadgen's route probe, a long poll that measures
// config propagation: it pings a gRPC target through one persistent
// connection (its xDS client for xds:/// targets), every call carrying
// RouteProbeHeader, until the route the call took is in the wanted state,
// and answers a RouteProbeResult: 200 when it got there, 504 when it did
// not in time. The harness asks it with RouteProbeQuery after toggling a
// routing rule that aborts the calls carrying the header with
// RouteProbeAbortCode, and the ordinary load (without it) never matches.
const RouteProbePath = "/meshbench/route-probe"

// RouteProbeHeader: RouteProbeHeaderValue is the gRPC metadata every probe
// call carries, the header the probe's routing rule matches.
const (
	RouteProbeHeader      = "x-meshbench-probe"
	RouteProbeHeaderValue = "on"
)

// RouteProbeAbortCode is the gRPC status the probe's fault aborts with; a
// call ending with it was routed by the rule.
const RouteProbeAbortCode = codes.DataLoss

// The states of a probed route, as one probe call classifies it.
const (
	// RouteOK: the call succeeded, so the abort rule is not in force.
	RouteOK string = "ok"
	// RouteAbort: the call ended with RouteProbeAbortCode, so it is.
	RouteAbort string = "abort"
	// RouteError: the call ended with any other status (no answer yet,
	// an unreachable backend): the route's state is unknown.
	RouteError string = "error"
)

// RouteProbeResult is what RouteProbePath answers.
type RouteProbeResult struct {
	// State is the state of the last probe call that ended: the one asked
	// for on a 200, the last seen on a 504 ("" when no call ended).
	State string `json:"state"`
	// Probes counts the probe calls that ended during the request.
	Probes int `json:"probes"`
	// WaitedNs is the time, measured by the loadgen, from the request's
	// arrival until the answer of the probe call whose state matched, in
	// nanoseconds; on a 504, until the loadgen gave up.
	WaitedNs int64 `json:"waitedNs"`
	// LastError is the message of the last probe call in RouteError, if
	// any; on a 504 it starts by saying that the probe timed out (or that
	// its request ended).
	LastError string `json:"lastError,omitempty"`
	// Target is the target as asked.
	Target string `json:"target"`
}

// RouteProbeQuery is the query of a RouteProbePath request: probe target
// (xds:///host:port, grpc://host:port or host:port) until its route is in
// state want (RouteOK or RouteAbort), for at most timeout, one call every
// interval. A timeout or interval ≤ 0 is left out, for the loadgen's
// default (30 s, at most 2 min; 5 ms, at least 1 ms).
func RouteProbeQuery(target, want string, timeout, interval time.Duration) url.Values {
	q := url.Values{"target": {target}, "want": {want}}
	if timeout > 0 {
		q.Set("timeout", timeout.String())
	}
	if interval > 0 {
		q.Set("interval", interval.String())
	}
	return q
}

// The route probe's bounds (load.RouteProbePath).
const (
	// RouteProbeTimeout is a probe's default timeout; MaxRouteProbeTimeout
	// the longest one may ask for.
	RouteProbeTimeout    = 30 * time.Second
	MaxRouteProbeTimeout = 2 * time.Minute
	// RouteProbeInterval is the default time between two probe calls'
	// starts; MinRouteProbeInterval the shortest one may ask for.
	RouteProbeInterval    = 5 * time.Millisecond
	MinRouteProbeInterval = time.Millisecond
	// RouteProbeCallTimeout bounds each probe call.
	RouteProbeCallTimeout = time.Second
)
