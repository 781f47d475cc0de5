package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"fortio.org/fortio/fgrpc"
	"fortio.org/fortio/jrpc"
	listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	faultpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	hcmpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typepb "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/meshbench/meshbench/framework/load"
)

// TestRouteProbeParams: each bad or missing parameter gets 400, with a
// message naming it.
func TestRouteProbeParams(t *testing.T) {
	srv := server(t)
	for _, tc := range []struct {
		name, key, value string
		// names is what the message says of the parameter.
		names string
	}{
		{"no target", "target", "", "target: missing"},
		{"http target", "target", "http://h:1", `target="http://h:1"`},
		{"xds target with authority", "target", "xds://h:1", `target="xds://h:1"`},
		{"target without port", "target", "grpc://h", `target="grpc://h"`},
		{"bare target without port", "target", "h", `target="h"`},
		{"no want", "want", "", "want: missing"},
		{"unknown want", "want", "error", `want="error"`},
		{"timeout not a duration", "timeout", "soon", `timeout="soon"`},
		{"zero timeout", "timeout", "0s", `timeout="0s"`},
		{"negative timeout", "timeout", "-1s", `timeout="-1s"`},
		{"timeout over 2m", "timeout", "2m1s", `timeout="2m1s"`},
		{"interval not a duration", "interval", "fast", `interval="fast"`},
		{"interval under 1ms", "interval", "500us", `interval="500us"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := load.RouteProbeQuery("grpc://127.0.0.1:1", load.RouteOK, 0, 0)
			q.Set(tc.key, tc.value)
			code, reply := getReply(t, srv.URL+load.RouteProbePath+"?"+q.Encode())
			assert.Equal(t, http.StatusBadRequest, code)
			assert.True(t, reply.Error)
			assert.Contains(t, reply.Message, tc.names)
		})
	}
	t.Run("every bad parameter", func(t *testing.T) {
		q := url.Values{"want": {"maybe"}, "interval": {"0"}}
		code, reply := getReply(t, srv.URL+load.RouteProbePath+"?"+q.Encode())
		assert.Equal(t, http.StatusBadRequest, code)
		for _, s := range []string{"target: missing", `want="maybe"`, `interval="0"`} {
			assert.Contains(t, reply.Message, s)
		}
	})
}

// getReply GETs u and decodes fortio's error reply.
func getReply(t *testing.T, u string) (int, jrpc.ServerReply) {
	t.Helper()
	resp, err := http.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var reply jrpc.ServerReply
	require.NoError(t, json.Unmarshal(b, &reply), string(b))
	return resp.StatusCode, reply
}

// getRouteProbe asks base's route probe to wait for want on target, at
// most timeout, checks that it answers code and returns its result.
func getRouteProbe(t *testing.T, base, target, want string, timeout time.Duration, code int) load.RouteProbeResult {
	t.Helper()
	client := &http.Client{Timeout: timeout + 10*time.Second}
	resp, err := client.Get(base + load.RouteProbePath + "?" + load.RouteProbeQuery(target, want, timeout, 0).Encode())
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, code, resp.StatusCode, string(b))
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var res load.RouteProbeResult
	require.NoError(t, json.Unmarshal(b, &res), string(b))
	assert.Equal(t, target, res.Target)
	assert.Positive(t, res.Probes, string(b))
	assert.Positive(t, res.WaitedNs, string(b))
	return res
}

// switchPing is a ping server that ends every call with its code, and
// counts the calls that carried the probe's header and those that did not.
type switchPing struct {
	code           atomic.Uint32
	probes, others atomic.Int64
}

func (s *switchPing) Ping(ctx context.Context, in *fgrpc.PingMessage) (*fgrpc.PingMessage, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get(load.RouteProbeHeader); len(v) == 1 && v[0] == load.RouteProbeHeaderValue {
		s.probes.Add(1)
	} else {
		s.others.Add(1)
	}
	if c := codes.Code(s.code.Load()); c != codes.OK {
		return nil, status.Errorf(c, "switched to %s", c)
	}
	return in, nil
}

// switchBackend serves a switchPing, plaintext, on a loopback port until
// the test ends.
func switchBackend(t *testing.T) (string, *switchPing) {
	t.Helper()
	sp := &switchPing{}
	gs := grpc.NewServer()
	fgrpc.RegisterPingServerServer(gs, sp)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	return ln.Addr().String(), sp
}

// TestRouteProbeClassifies probes a plaintext backend whose answer the
// test switches: OK is ok, DATA_LOSS is abort, any other status is error
// (with its message); a state never reached gets 504 with the last seen.
// host:port and grpc://host:port share one connection.
func TestRouteProbeClassifies(t *testing.T) {
	addr, sp := switchBackend(t)
	srv := server(t)

	res := getRouteProbe(t, srv.URL, addr, load.RouteOK, 10*time.Second, http.StatusOK)
	assert.Equal(t, load.RouteOK, res.State)
	assert.Empty(t, res.LastError)

	sp.code.Store(uint32(codes.DataLoss))
	res = getRouteProbe(t, srv.URL, "grpc://"+addr, load.RouteAbort, 10*time.Second, http.StatusOK)
	assert.Equal(t, load.RouteAbort, res.State)
	res = getRouteProbe(t, srv.URL, addr, load.RouteOK, 100*time.Millisecond, http.StatusGatewayTimeout)
	assert.Equal(t, load.RouteAbort, res.State)
	assert.Equal(t, `timed out after 100ms waiting for state "ok"`, res.LastError)

	sp.code.Store(uint32(codes.PermissionDenied))
	res = getRouteProbe(t, srv.URL, addr, load.RouteOK, 100*time.Millisecond, http.StatusGatewayTimeout)
	assert.Equal(t, load.RouteError, res.State)
	assert.Equal(t, `timed out after 100ms waiting for state "ok"; last error: rpc error: code = PermissionDenied desc = switched to PermissionDenied`, res.LastError)

	sp.code.Store(uint32(codes.OK))
	res = getRouteProbe(t, srv.URL, addr, load.RouteOK, 10*time.Second, http.StatusOK)
	assert.Equal(t, load.RouteOK, res.State)

	assert.Positive(t, sp.probes.Load())
	assert.Zero(t, sp.others.Load(), "every probe call carries the header")
	probeConns.mu.Lock()
	_, ok := probeConns.conns["dns:///"+addr]
	probeConns.mu.Unlock()
	assert.True(t, ok, "one connection for host:port and grpc://host:port")
}

// TestRouteProbeEndsWithRequest: the probe stops when its request ends,
// long before its timeout.
func TestRouteProbeEndsWithRequest(t *testing.T) {
	addr, sp := switchBackend(t)
	sp.code.Store(uint32(codes.DataLoss))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(100*time.Millisecond, cancel)
	q := load.RouteProbeQuery(addr, load.RouteOK, 30*time.Second, 0)
	r := httptest.NewRequestWithContext(ctx, http.MethodGet, load.RouteProbePath+"?"+q.Encode(), nil)
	w := httptest.NewRecorder()
	start := time.Now()
	routeProbeHandler(w, r)
	assert.Less(t, time.Since(start), 10*time.Second)
	require.Equal(t, http.StatusGatewayTimeout, w.Code, w.Body.String())
	var res load.RouteProbeResult
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &res))
	assert.Equal(t, load.RouteAbort, res.State)
	assert.Contains(t, res.LastError, "request ended (context canceled) after")
}

// TestXDSRouteProbe measures what the harness measures on Istio: a
// loadgen and a backend as two mbloadgen processes, configured by an
// in-process control plane (as TestXDSRunIsMutualTLS) whose client
// listener has the fault filter. The route probe sees the route of the
// loadgen's xDS client: ok under the plain route, abort once the control
// plane pushes a route that aborts the probe's calls with DATA_LOSS, while
// ordinary pings still succeed, and ok again once the fault is gone.
func TestXDSRouteProbe(t *testing.T) {
	dir := t.TempDir()
	pki := newSPIFFECA(t, dir)
	grpcPort, backendHTTP, loadgenHTTP := freePort(t), freePort(t), freePort(t)
	xdsAddr, push := updatableControlPlane(t, probeResources(grpcPort, false))
	backendBoot := writeBootstrap(t, dir, "backend", xdsAddr, pki.issue(t, "backend", backendSPIFFEID), pki.caFile)
	loadgenBoot := writeBootstrap(t, dir, "loadgen", xdsAddr, pki.issue(t, "loadgen", loadgenSPIFFEID), pki.caFile)
	startChild(t, backendBoot, "-listen", addrOf(backendHTTP), "-grpc-listen", addrOf(grpcPort))
	startChild(t, loadgenBoot, "-listen", addrOf(loadgenHTTP))
	waitServing(t, addrOf(grpcPort), pki.clientTLS(t, "loadgen"))
	lg := "http://" + addrOf(loadgenHTTP)
	target := "xds:///" + xdsService + ":8079"

	res := getRouteProbe(t, lg, target, load.RouteOK, 20*time.Second, http.StatusOK)
	assert.Equal(t, load.RouteOK, res.State)
	res = getRouteProbe(t, lg, target, load.RouteAbort, time.Second, http.StatusGatewayTimeout)
	assert.Equal(t, load.RouteOK, res.State)

	push("2", probeResources(grpcPort, true))
	res = getRouteProbe(t, lg, target, load.RouteAbort, 20*time.Second, http.StatusOK)
	assert.Equal(t, load.RouteAbort, res.State)
	t.Logf("abort route seen after %s, %d probes", time.Duration(res.WaitedNs), res.Probes)
	q := url.Values{"url": {target}, "c": {"1"}, "qps": {"-1"}, "n": {"20"}, "r": {"0.00001"}}
	code, body := post(t, lg+"/fortio/rest/run?"+q.Encode())
	require.Equal(t, http.StatusOK, code, string(body))
	assert.Equal(t, map[int]int64{0: 20}, decodeGRPC(t, body).RetCodes, "pings without the header are not aborted")

	push("3", probeResources(grpcPort, false))
	res = getRouteProbe(t, lg, target, load.RouteOK, 20*time.Second, http.StatusOK)
	assert.Equal(t, load.RouteOK, res.State)
	t.Logf("plain route seen after %s, %d probes", time.Duration(res.WaitedNs), res.Probes)
}

// faultFilterName is the name istiod gives the fault filter, the key of
// its per-route configuration.
const faultFilterName = "envoy.filters.http.fault"

// probeResources are meshResources with the fault filter before the router
// in the client listener, as istiod sends them; with fault, the route
// configuration first has the harness's probe rule: calls carrying
// x-meshbench-probe: on are aborted with DATA_LOSS, 100 %.
func probeResources(grpcPort int, fault bool) map[resource.Type][]types.Resource {
	const cluster = "outbound|8079||" + xdsService
	hostPort := xdsService + ":8079"
	res := meshResources(grpcPort)
	res[resource.ListenerType] = []types.Resource{faultClientListener(hostPort), serverListener(grpcPort)}
	rc := routeConfig(hostPort, cluster)
	if fault {
		vh := rc.GetVirtualHosts()[0]
		vh.Routes = append([]*routepb.Route{probeAbortRoute(cluster)}, vh.Routes...)
	}
	res[resource.RouteType] = []types.Resource{rc}
	return res
}

// faultClientListener is clientListener with the fault filter, without a
// fault of its own, before the router.
func faultClientListener(hostPort string) *listenerpb.Listener {
	fault := &hcmpb.HttpFilter{Name: faultFilterName, ConfigType: &hcmpb.HttpFilter_TypedConfig{TypedConfig: mustAny(&faultpb.HTTPFault{})}}
	hcm := &hcmpb.HttpConnectionManager{
		RouteSpecifier: &hcmpb.HttpConnectionManager_Rds{Rds: &hcmpb.Rds{ConfigSource: adsSource, RouteConfigName: hostPort}},
		HttpFilters:    []*hcmpb.HttpFilter{fault, routerFilter},
	}
	return &listenerpb.Listener{Name: hostPort, ApiListener: &listenerpb.ApiListener{ApiListener: mustAny(hcm)}}
}

// probeAbortRoute is the route of the harness's VirtualService rule as
// istiod translates it: the header match, and the fault's abort in the
// route's per-filter configuration.
func probeAbortRoute(cluster string) *routepb.Route {
	header := &routepb.HeaderMatcher{
		Name: "x-meshbench-probe",
		HeaderMatchSpecifier: &routepb.HeaderMatcher_StringMatch{StringMatch: &matcherpb.StringMatcher{
			MatchPattern: &matcherpb.StringMatcher_Exact{Exact: "on"},
		}},
	}
	abort := &faultpb.HTTPFault{Abort: &faultpb.FaultAbort{
		ErrorType:  &faultpb.FaultAbort_GrpcStatus{GrpcStatus: uint32(codes.DataLoss)},
		Percentage: &typepb.FractionalPercent{Numerator: 100, Denominator: typepb.FractionalPercent_HUNDRED},
	}}
	return &routepb.Route{
		Match: &routepb.RouteMatch{
			PathSpecifier: &routepb.RouteMatch_Prefix{Prefix: "/"},
			Headers:       []*routepb.HeaderMatcher{header},
		},
		Action:               &routepb.Route_Route{Route: &routepb.RouteAction{ClusterSpecifier: &routepb.RouteAction_Cluster{Cluster: cluster}}},
		TypedPerFilterConfig: map[string]*anypb.Any{faultFilterName: mustAny(abort)},
	}
}
