// Command mbloadgen is meshbench's load generator for cluster targets: a
// fortio server built from fortio's library packages only (the fortio CLI
// and its root package are not needed). The harness reaches it through a
// port-forward and drives it with fortio's REST API:
//
//	POST /fortio/rest/run?url=http://backend.ns.svc:8080/&c=8&qps=-1&t=30s&r=0.00001
//
// runs one load synchronously and answers with fortio's HTTPRunnerResults
// JSON, whose DurationHistogram is recorded at the resolution r (in seconds;
// fortio's 1ms default would hide sub-millisecond latencies), plus the field
// MeshbenchHDR (see HDRField): every request's latency in HDR histograms,
// uncorrected and, in open loop, corrected for coordinated omission. hdr=off
// leaves them out.
// /fortio/rest/status and /fortio/rest/stop list and stop runs. A loadgen
// runs one load at a time.
//
// The same endpoint runs gRPC loads, fortio's ping on fortio's periodic
// engine, for Istio's proxyless data plane (gRFC A29):
//
//	POST /fortio/rest/run?url=xds:///backend.ns.svc.cluster.local:8079&c=8&qps=-1&t=30s&r=0.00001&payload-size=64
//
// url=xds:///host:port dials through xDS (the bootstrap in
// GRPC_XDS_BOOTSTRAP) with xDS credentials, plaintext as their fallback;
// url=grpc://host:port dials dns:///host:port in plaintext. Each of the c
// threads has its own connection, opened by one uncounted ping. The answer
// is fortio's RunnerResults with RetCodes keyed by gRPC status code (0 is
// OK) and the same HDRField and TimelineField as HTTP runs; a run that
// cannot start (a bad url, an unreachable backend) gets fortio's jrpc
// error reply.
//
// It also serves fortio's echo handler on / (so two mbloadgens, or one, can
// be a test's server as well as its client), fortio's debug handler on
// /debug, a readiness endpoint on /healthz (with the loadgen's clock in
// TimeHeader), and on /meshbench/netinfo the
// pod's network interfaces with their MTU and the fortio version, which a
// restricted pod cannot otherwise reveal without exec.
//
// /meshbench/route-probe (load.RouteProbePath) measures config
// propagation to the loadgen's gRPC client, a long poll:
//
//	GET /meshbench/route-probe?target=xds:///backend.ns.svc.cluster.local:8079&want=abort&timeout=30s&interval=5ms
//
// pings the target through one connection per target, kept between
// requests (its xDS watches with it), each call carrying the header
// x-meshbench-probe: on, until a call's route is in the wanted state: ok
// (the call succeeded) or abort (it ended with DATA_LOSS, the status of
// the harness's fault rule for that header). It answers
// load.RouteProbeResult, 200 once there and 504 on timeout.
//
// With -grpc-listen it is also a gRPC backend: fortio's ping service (the
// payload echoed after the message's DelayNanos) and the standard health
// service. When GRPC_XDS_BOOTSTRAP is set, as Istio's proxyless injection
// sets it, the server is xDS-managed (xds.NewGRPCServer, xDS credentials,
// plaintext as their fallback) and serves once the control plane has sent
// its listener. /meshbench/peers (PeersPath) counts its ping calls per
// client, as the connection's TLS saw it: SPIFFE ID, client certificate
// (mTLS) and TLS version; the harness's proof of a proxyless path.
//
//	mbloadgen -listen :8080 [-grpc-listen :8079]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"

	"fortio.org/fortio/fhttp"
	"fortio.org/fortio/jrpc"
	"fortio.org/fortio/rapi"
	flog "fortio.org/log"

	"github.com/meshbench/meshbench/framework/load"
)

// TimeHeader is on every /healthz answer: the loadgen's clock, in Unix
// nanoseconds, so that the harness can put the loadgen's timelines on its
// own clock.
const TimeHeader = "X-Meshbench-Time"

// Paths served besides fortio's REST API.
const (
	HealthPath  = "/healthz"
	NetInfoPath = "/meshbench/netinfo"
	DebugPath   = "/debug"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mbloadgen:", err)
		os.Exit(2)
	}
}

func run(args []string) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serve(ctx, o)
}

// options are mbloadgen's flags.
type options struct {
	// listen is the HTTP address (REST API, echo, health); ":8080".
	listen string
	// grpcListen is the gRPC backend's address; "" (the default) serves none.
	grpcListen string
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("mbloadgen", flag.ContinueOnError)
	fs.StringVar(&o.listen, "listen", ":8080", "address to serve the REST API, echo and health endpoints on")
	fs.StringVar(&o.grpcListen, "grpc-listen", "", "address to serve the gRPC ping and health services on, e.g. :8079 (default: none); xDS-managed when "+BootstrapEnv+" is set")
	level := fs.String("loglevel", "info", "fortio log level: debug, verbose, info, warning, error")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	lvl, err := flog.ValidateLevel(*level)
	if err != nil {
		return o, fmt.Errorf("-loglevel: %w", err)
	}
	flog.SetLogLevelQuiet(lvl)
	return o, nil
}

// serve serves HTTP on o.listen, and the gRPC backend on o.grpcListen
// when set, until ctx ends or either server fails.
func serve(ctx context.Context, o options) error {
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.listen, err)
	}
	gctx, stopGRPC := context.WithCancel(ctx)
	defer stopGRPC()
	peers, grpcErrc, err := startGRPC(gctx, o.grpcListen)
	if err != nil {
		_ = ln.Close()
		return err
	}
	srv := &http.Server{Handler: NewMux(peers), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	flog.Printf("mbloadgen %s serving fortio %s REST API on %s", moduleVersion("github.com/meshbench/meshbench"), fortioVersion(), ln.Addr())
	select {
	case err := <-errc:
		return err
	case err = <-grpcErrc:
	case <-ctx.Done():
	}
	// Runs in flight are stopped; their callers get an error or a short result.
	rapi.StopByRunID(0, false)
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if serr := srv.Shutdown(sctx); serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, fmt.Errorf("shutdown: %w", serr))
	}
	if ctx.Err() != nil && grpcErrc != nil {
		stopGRPC()
		err = errors.Join(err, <-grpcErrc)
	}
	return err
}

// startGRPC starts the gRPC backend on addr, unless addr is "" (then
// peers and the channel are nil). The channel gets the backend's end,
// nil once ctx ends and it has stopped.
func startGRPC(ctx context.Context, addr string) (*Peers, <-chan error, error) {
	if addr == "" {
		return nil, nil, nil
	}
	xdsManaged := xdsBootstrapped()
	peers := NewPeers(xdsManaged)
	srv, err := newGRPCBackend(peers, xdsManaged)
	if err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("-grpc-listen %s: %w", addr, err)
	}
	if xdsManaged {
		flog.Printf("mbloadgen serving gRPC ping and health on %s, xDS-managed (%s=%q): it serves once the management server sends its listener", ln.Addr(), BootstrapEnv, os.Getenv(BootstrapEnv))
	} else {
		flog.Printf("mbloadgen serving gRPC ping and health on %s, plaintext", ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- serveGRPC(ctx, ln, srv, 5*time.Second) }()
	return peers, errc, nil
}

// NewMux returns mbloadgen's handlers. rapi.AddHandlers is not used because
// it also serves the working directory as fortio's data directory; the run,
// status, stop and dns handlers it would add are added here one by one.
//
// Runs are synchronous and one at a time in the process: two runs in one
// loadgen would share its CPU, and fortio's REST handler sets a process-wide
// flag on every run, so concurrent runs race. A run asked for while another
// is in progress gets 409 Conflict; async=on gets 400. Each run records HDR
// histograms through fortio's REST hook (rapi.SetHook), which NewMux sets.
//
// peers is the gRPC backend's count of its callers, served on PeersPath
// (empty when nil).
func NewMux(peers *Peers) *http.ServeMux {
	mux := http.NewServeMux()
	const ui = "/fortio/"
	rapi.SetHook(runs.hook)
	mux.HandleFunc(ui+rapi.RestRunURI, runHandler)
	mux.HandleFunc(ui+rapi.RestStatusURI, rapi.RESTStatusHandler)
	mux.HandleFunc(ui+rapi.RestStopURI, rapi.RESTStopHandler)
	mux.HandleFunc(ui+rapi.RestDNS, rapi.RESTDNSHandler)
	mux.HandleFunc(HealthPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set(TimeHeader, strconv.FormatInt(time.Now().UnixNano(), 10))
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc(NetInfoPath, netInfoHandler)
	mux.Handle(PeersPath, peers)
	mux.HandleFunc(load.RouteProbePath, routeProbeHandler)
	mux.HandleFunc(DebugPath, fhttp.DebugHandler)
	mux.HandleFunc("/", fhttp.EchoHandler)
	return mux
}

// replyError answers like fortio's REST API does on error.
func replyError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(jrpc.ServerReply{Error: true, Message: msg})
}

// NetInfo is what /meshbench/netinfo answers.
type NetInfo struct {
	Hostname string `json:"hostname"`
	// Fortio is the fortio module version the binary was built with.
	Fortio string `json:"fortio"`
	// Cores is the CPUs the Go runtime may use (GOMAXPROCS, which follows
	// the container's CPU limit).
	Cores      int         `json:"cores"`
	Interfaces []Interface `json:"interfaces"`
}

// Interface is one network interface of the pod.
type Interface struct {
	Name  string   `json:"name"`
	MTU   int      `json:"mtu"`
	Up    bool     `json:"up"`
	Addrs []string `json:"addrs,omitempty"`
}

func netInfoHandler(w http.ResponseWriter, _ *http.Request) {
	info, err := ReadNetInfo()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(info)
}

// ReadNetInfo reads the host name, the fortio version and every network
// interface of this process's network namespace.
func ReadNetInfo() (NetInfo, error) {
	host, _ := os.Hostname()
	info := NetInfo{Hostname: host, Fortio: fortioVersion(), Cores: runtime.GOMAXPROCS(0)}
	ifs, err := net.Interfaces()
	if err != nil {
		return info, fmt.Errorf("list interfaces: %w", err)
	}
	for _, i := range ifs {
		it := Interface{Name: i.Name, MTU: i.MTU, Up: i.Flags&net.FlagUp != 0}
		if addrs, err := i.Addrs(); err == nil {
			for _, a := range addrs {
				it.Addrs = append(it.Addrs, a.String())
			}
		}
		info.Interfaces = append(info.Interfaces, it)
	}
	return info, nil
}

func fortioVersion() string { return moduleVersion("fortio.org/fortio") }

// moduleVersion returns the version of module path in the binary's build
// information, "(devel)" for the main module, or "unknown".
func moduleVersion(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	if bi.Main.Path == path {
		return bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path == path {
			if d.Replace != nil {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return "unknown"
}
