package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	fstats "fortio.org/fortio/stats"

	"github.com/meshbench/meshbench/framework/load"
)

// fortio REST API paths, as cmd/mbloadgen serves them.
const (
	fortioRunPath  = "/fortio/rest/run"
	fortioStopPath = "/fortio/rest/stop"
	netInfoPath    = "/meshbench/netinfo"
	healthPath     = "/healthz"
)

// percentiles fortio computes into its own JSON; meshbench recomputes
// every percentile from the histogram, so these are for a human reading it.
const percentiles = "50,90,99,99.9"

// fortioResult is the part of fortio's HTTPRunnerResults JSON (periodic.
// RunnerResults plus the HTTP runner's fields) the target reads. The
// document is fortio's, so unknown fields are expected and ignored.
type fortioResult struct {
	// Error, Message and Exception are jrpc.ServerReply: set when the run
	// could not start (a bad URL, an unknown host).
	Error     bool   `json:"error"`
	Message   string `json:"message"`
	Exception string `json:"exception"`

	RunType           string
	Labels            string
	StartTime         time.Time
	RequestedQPS      string
	RequestedDuration string
	ActualQPS         float64
	ActualDuration    time.Duration
	NumThreads        int
	Version           string
	DurationHistogram *fstats.HistogramData
	RetCodes          map[int]int64 // HTTP status codes, or a grpc run's gRPC status codes (0 is OK): read them with codes
	SocketCount       int64
	URL               string
	// MeshbenchHDR is what mbloadgen adds (cmd/mbloadgen HDRField): the
	// run's HDR histograms. Nil from an mbloadgen that predates it, or
	// with hdr=off.
	MeshbenchHDR *load.Latencies
	// MeshbenchTimeline is what mbloadgen adds when asked with timeline=
	// (cmd/mbloadgen TimelineField): the run's requests per bucket, on the
	// loadgen's clock.
	MeshbenchTimeline *load.Timeline

	// clockOffset is how far the loadgen's clock was ahead of the
	// harness's when it was last primed (loadgen.health).
	clockOffset time.Duration
}

// decodeResult reads one fortio REST answer.
func decodeResult(r io.Reader) (*fortioResult, error) {
	body, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read fortio answer: %w", err)
	}
	var fr fortioResult
	if err := json.Unmarshal(body, &fr); err != nil {
		return nil, fmt.Errorf("decode fortio answer %q: %w", snippet(body), err)
	}
	if fr.Error {
		return nil, fmt.Errorf("fortio: %s: %s", fr.Message, fr.Exception)
	}
	if fr.DurationHistogram == nil {
		return nil, fmt.Errorf("fortio answer without a DurationHistogram: %q", snippet(body))
	}
	return &fr, nil
}

func snippet(b []byte) string {
	const n = 300
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// runQuery is the REST query and JSON body that run o for d on one loadgen.
// fortio reads headers and the payload from the JSON body, the rest from
// the query; a grpc run's ping payload is payload-size bytes, in the
// query.
func runQuery(o load.Options, d time.Duration) (url.Values, []byte, error) {
	q := url.Values{}
	q.Set("url", o.URL)
	q.Set("c", strconv.Itoa(o.Concurrency))
	qps := "-1" // fortio: max speed
	if !o.ClosedLoop() {
		qps = strconv.FormatFloat(o.QPS, 'g', -1, 64)
	}
	q.Set("qps", qps)
	q.Set("t", d.String())
	q.Set("r", strconv.FormatFloat(o.Resolution.Divider, 'g', -1, 64))
	q.Set("p", percentiles)
	// no nocatchup: an open loop catches up (load.runnerOptions)
	q.Set("timeout", o.Timeout.String())
	if o.Protocol == load.H2 {
		q.Set("h2", "on") // h2c with prior knowledge on http:// URLs
	}
	if o.Protocol == load.GRPC && o.RequestSize > 0 {
		// the ping's payload, which the server echoes (grpcPayload)
		q.Set("payload-size", strconv.Itoa(o.RequestSize))
	}
	if o.NewConnections {
		// fortio's REST API has no keep-alive switch: each connection
		// carries one request, then the client closes it
		q.Set("connection-reuse", "1")
	}
	if o.Labels != "" {
		q.Set("labels", o.Labels)
	}
	if o.NoHDR {
		q.Set("hdr", "off") // mbloadgen's own parameter
	}
	if o.Timeline > 0 {
		q.Set("timeline", o.Timeline.String()) // mbloadgen's own parameter
	}
	body := map[string]any{}
	if len(o.Headers) > 0 {
		keys := make([]string, 0, len(o.Headers))
		for k := range o.Headers {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		hs := make([]string, len(keys))
		for i, k := range keys {
			hs[i] = k + ": " + o.Headers[k]
		}
		body["headers"] = hs
	}
	if o.RequestSize > 0 && o.Protocol != load.GRPC {
		body["payload"] = strings.Repeat("x", o.RequestSize)
	}
	if len(body) == 0 {
		return q, nil, nil
	}
	b, err := json.Marshal(body)
	return q, b, err
}

// loadgen is one mbloadgen replica, reached through a port-forward.
type loadgen struct {
	pod  string
	node string
	base string // http://127.0.0.1:port
	hc   *http.Client
	// offset is how far the replica's clock is ahead of the harness's, as
	// its last health check measured it (0 from an mbloadgen that does not
	// tell its time: the clocks are taken to agree).
	offset time.Duration
}

// timeHeader is cmd/mbloadgen's TimeHeader.
const timeHeader = "X-Meshbench-Time"

// run runs o for d on the replica and returns fortio's result. When ctx
// ends first, the run is stopped on the replica, which otherwise would
// keep loading the cluster.
func (l *loadgen) run(ctx context.Context, o load.Options, d time.Duration) (*fortioResult, error) {
	q, body, err := runQuery(o, d)
	if err != nil {
		return nil, fmt.Errorf("loadgen %s: %w", l.pod, err)
	}
	// The answer comes when the run ends: allow for the run, the timeout of
	// the last requests and fortio's own connection warm-up.
	rctx, cancel := context.WithTimeout(ctx, d+o.Timeout+30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, l.base+fortioRunPath+"?"+q.Encode(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("loadgen %s: %w", l.pod, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := l.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil || rctx.Err() != nil {
			l.stop(context.WithoutCancel(ctx))
		}
		return nil, fmt.Errorf("loadgen %s: run against %s: %w", l.pod, o.URL, err)
	}
	defer resp.Body.Close()
	fr, err := decodeResult(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("loadgen %s: run against %s (HTTP %s): %w", l.pod, o.URL, resp.Status, err)
	}
	fr.clockOffset = l.offset
	return fr, nil
}

// stop stops every run on the replica; best effort.
func (l *loadgen) stop(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.base+fortioStopPath, nil)
	if err != nil {
		return
	}
	if resp, err := l.hc.Do(req); err == nil {
		resp.Body.Close()
	}
}

// health checks that the replica answers, on the connection the next run
// will use, and measures how far its clock is from the harness's: its
// time against the middle of the round trip, to within half of it.
func (l *loadgen) health(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, l.base+healthPath, nil)
	if err != nil {
		return err
	}
	sent := time.Now()
	resp, err := l.hc.Do(req)
	if err != nil {
		return fmt.Errorf("loadgen %s: %w", l.pod, err)
	}
	if ns, err := strconv.ParseInt(resp.Header.Get(timeHeader), 10, 64); err == nil {
		got := time.Now()
		l.offset = time.Unix(0, ns).Sub(sent.Add(got.Sub(sent) / 2))
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("loadgen %s: GET %s: %s", l.pod, healthPath, resp.Status)
	}
	return nil
}

// netInfo is what mbloadgen answers on /meshbench/netinfo.
type netInfo struct {
	Hostname   string `json:"hostname"`
	Fortio     string `json:"fortio"`
	Cores      int    `json:"cores"`
	Interfaces []struct {
		Name string `json:"name"`
		MTU  int    `json:"mtu"`
		Up   bool   `json:"up"`
	} `json:"interfaces"`
}

// podMTU is the MTU of the pod's network: its eth0, else the first
// interface that is up and not loopback.
func (n netInfo) podMTU() int {
	for _, i := range n.Interfaces {
		if i.Name == "eth0" {
			return i.MTU
		}
	}
	for _, i := range n.Interfaces {
		if i.Up && i.Name != "lo" {
			return i.MTU
		}
	}
	return 0
}

func (l *loadgen) netInfo(ctx context.Context) (netInfo, error) {
	var n netInfo
	err := getJSON(ctx, l.hc, l.base+netInfoPath, &n)
	if err != nil {
		return n, fmt.Errorf("loadgen %s: %w", l.pod, err)
	}
	return n, nil
}

func getJSON(ctx context.Context, hc *http.Client, u string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %q", u, resp.Status, snippet(b))
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("GET %s: decode %q: %w", u, snippet(b), err)
	}
	return nil
}
