// Package load drives fortio's periodic engine in-process with fhttp's
// HTTP clients or fgrpc's gRPC ping client: a thrown-away warm-up,
// then one measured window, closed loop at maximum rate or open loop at a
// fixed rate; or a user flow (Flow), Locust-style users ramped up at a
// spawn rate, each looping over the flow's steps with think time. Its
// Result carries the raw histograms, the per-status counts and the
// settings that produced them, and says whether the run is valid; it has
// the same shape for every protocol.
//
// Every request's latency goes into HDR histograms (3 significant digits
// from 1 µs to 60 s; see Recorder and Latencies), one per fortio thread,
// merged at the end; open-loop runs also get a histogram corrected for
// coordinated omission. fortio's own histogram is kept beside them.
package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"fortio.org/fortio/periodic"
	fstats "fortio.org/fortio/stats"
	flog "fortio.org/log"

	"github.com/meshbench/meshbench/framework/stats"
	"github.com/meshbench/meshbench/framework/validity"
)

// Protocol is the wire protocol the load generator speaks. How far it goes
// down the path is the target's business (the local target carries h2 and
// grpc end to end).
type Protocol string

// Protocols meshbench can drive.
const (
	HTTP1 Protocol = "http1" // HTTP/1.1 with keep-alive
	H2    Protocol = "h2"    // HTTP/2 (cleartext, prior knowledge, on plain http:// URLs)
	// GRPC is unary gRPC calls of fortio's ping service (fgrpc.PingServer/Ping)
	// over cleartext HTTP/2, one connection per unit of concurrency.
	GRPC Protocol = "grpc"
)

// HTTP2 reports whether p runs over HTTP/2 (h2 or grpc).
func (p Protocol) HTTP2() bool { return p == H2 || p == GRPC }

// ParseProtocol turns a flag value into a Protocol.
func ParseProtocol(s string) (Protocol, error) {
	switch p := Protocol(strings.ToLower(s)); p {
	case HTTP1, H2, GRPC:
		return p, nil
	case "http1.1", "http/1.1", "h1":
		return HTTP1, nil
	case "http2", "http/2", "h2c":
		return H2, nil
	}
	return "", fmt.Errorf("unknown protocol %q: want http1, h2 or grpc", s)
}

// Options are the settings of one load. The zero value of every field means
// its documented default, filled in by Normalize.
type Options struct {
	// URL is the target, http:// only (TLS is the mesh's job, not the
	// loadgen's). For grpc it may also be a gRPC target as a remote loadgen
	// dials it (cmd/mbloadgen): grpc://host:port, plain gRPC, or
	// xds:///host:port, through its xDS client (a proxyless mesh); the
	// in-process client dials http:// and grpc:// hosts only.
	URL string `json:"url"`
	// Concurrency is the number of connections, each with one request in
	// flight (fortio's -c). Default 1.
	Concurrency int `json:"concurrency"`
	// QPS is the total target rate in requests per second for an open-loop
	// run (fortio's qps option). 0 means closed loop at maximum rate.
	QPS float64 `json:"qps"`
	// RateFraction, when > 0, says QPS was set as this fraction of a
	// capacity measured in the same run (the upgrade gate's open-loop
	// point: suite.GateLoad), so that runs on machines of another speed
	// are compared by the fraction, not by the absolute rate.
	RateFraction float64 `json:"rateFraction,omitempty"`
	// Duration is the measured window. Default 5s.
	Duration time.Duration `json:"duration"`
	// Warmup runs before the window with the same settings and is thrown
	// away: connection set-up and TLS handshakes dominate the first seconds.
	// Default 1s; negative means none.
	Warmup time.Duration `json:"warmup"`
	// Protocol is http1 (default), h2 or grpc.
	Protocol Protocol `json:"protocol"`
	// RequestSize is the request body in bytes; non-zero turns GETs into
	// POSTs. For grpc it is the ping request's payload. Default 0.
	RequestSize int `json:"requestSize"`
	// NewConnections opens a new TCP connection for every request, as a
	// short-lived client does: keep-alive off (fhttp's DisableKeepAlive,
	// which sends Connection: close), so each request pays a connect on
	// the client's hop. http1 only (see CheckClient). Default false: one
	// connection per unit of concurrency, kept alive. The targets set it
	// from testbed.Workload.NewConnections (testbed.LoadOptions).
	NewConnections bool `json:"newConnections,omitempty"`
	// Timeout is the per-request timeout (a gRPC call's deadline). Default 3s.
	Timeout time.Duration `json:"timeout"`
	// Resolution is the latency histogram's bucket divider. Default
	// stats.DefaultResolution (10µs); fortio's own 1ms default would put every
	// sub-millisecond latency in one bucket.
	Resolution stats.Resolution `json:"resolution"`
	// RateTolerance is the fraction by which an open-loop run may miss its
	// target rate and still be valid. Default 0.05 (5%).
	RateTolerance float64 `json:"rateTolerance"`
	// MaxErrorRate is the fraction of failed requests above which a run is
	// invalid. Default 0 (any error invalidates the run).
	MaxErrorRate float64 `json:"maxErrorRate"`
	// Headers are added to every request, e.g. the caller's name; for grpc
	// they are sent as metadata (HTTP/2 headers, lower-cased). The targets
	// set them from testbed.Workload.Headers (testbed.LoadOptions), and the
	// local target adds its source header.
	Headers map[string]string `json:"headers,omitempty"`
	// Timeline, when > 0, is the bucket width of a per-request timeline of
	// the window (Result.Timeline), which faults are judged on. Default 0:
	// none.
	Timeline time.Duration `json:"timeline,omitempty"`
	// ExpectErrors is the expected-disruption mode of a fault: failed
	// requests are measured, not a reason to distrust the run.
	ExpectErrors bool `json:"expectErrors,omitempty"`
	// Labels is free text copied into the result.
	Labels string `json:"labels,omitempty"`
	// Flow, when set, drives the load as users running a flow instead of
	// connections at a rate (see Flow): Concurrency is then its users, QPS
	// must be 0, and its ramp replaces Warmup. Run, RunFlow and Start
	// drive it; Warm and Measure do not.
	Flow *Flow `json:"flow,omitempty"`
	// NoHDR turns HDR recording off and leaves fortio's histogram alone,
	// to measure what HDR recording costs (BenchmarkLoadgenCeiling).
	// Default false: record.
	NoHDR bool `json:"noHDR,omitempty"`
}

// Normalize fills in defaults and validates o.
func (o *Options) Normalize() error {
	var errs []error
	if o.Flow != nil {
		errs = append(errs, o.normalizeFlow()...)
	}
	u, err := url.Parse(o.URL)
	switch {
	case o.URL == "":
		errs = append(errs, errors.New("url: missing"))
	case err != nil:
		errs = append(errs, fmt.Errorf("url %q: %w", o.URL, err))
	case o.Protocol == GRPC && grpcTarget(u):
	case u.Scheme != "http" || u.Host == "":
		errs = append(errs, fmt.Errorf("url %q: want http://host:port/path", o.URL))
	}
	if o.Concurrency == 0 {
		o.Concurrency = 1
	}
	if o.Concurrency < 0 {
		errs = append(errs, fmt.Errorf("concurrency %d: must be >= 1", o.Concurrency))
	}
	if o.QPS < 0 || math.IsNaN(o.QPS) || math.IsInf(o.QPS, 0) {
		errs = append(errs, fmt.Errorf("qps %v: must be >= 0 (0 is closed loop at max rate)", o.QPS))
	}
	if o.Duration == 0 {
		o.Duration = 5 * time.Second
	}
	if o.Duration < 0 {
		errs = append(errs, fmt.Errorf("duration %v: must be > 0", o.Duration))
	}
	if o.Warmup == 0 {
		o.Warmup = time.Second
	}
	if o.Warmup < 0 {
		o.Warmup = 0
	}
	errs = append(errs, o.normalizeClient()...)
	if o.Timeout == 0 {
		o.Timeout = 3 * time.Second
	}
	if o.Resolution.Divider == 0 {
		o.Resolution = stats.DefaultResolution
	}
	if o.Resolution.Divider < 0 {
		errs = append(errs, fmt.Errorf("resolution %v: divider must be > 0", o.Resolution.Divider))
	}
	if o.RateTolerance == 0 {
		o.RateTolerance = 0.05
	}
	if o.RateTolerance < 0 || o.RateTolerance >= 1 {
		errs = append(errs, fmt.Errorf("rate tolerance %v: must be in [0, 1)", o.RateTolerance))
	}
	if o.Timeline < 0 {
		errs = append(errs, fmt.Errorf("timeline %v: must be >= 0", o.Timeline))
	}
	if o.MaxErrorRate < 0 || o.MaxErrorRate >= 1 {
		errs = append(errs, fmt.Errorf("max error rate %v: must be in [0, 1)", o.MaxErrorRate))
	}
	return errors.Join(errs...)
}

// normalizeClient fills in and checks what the client sends: the
// protocol, the request size and how it connects.
func (o *Options) normalizeClient() []error {
	var errs []error
	if o.Protocol == "" {
		o.Protocol = HTTP1
	}
	if _, err := ParseProtocol(string(o.Protocol)); err != nil {
		errs = append(errs, err)
	}
	if o.RequestSize < 0 {
		errs = append(errs, fmt.Errorf("request size %d: must be >= 0", o.RequestSize))
	}
	if err := o.CheckClient(); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// CheckClient refuses client settings that do not go together: a new
// connection per request (NewConnections) with h2 or grpc, which
// multiplex every request over one connection, or with a Flow, whose
// users keep their connections alive. Normalize calls it, and a target's
// workload is checked with it before anything runs.
func (o Options) CheckClient() error {
	var errs []error
	if o.NewConnections && o.Protocol != "" && o.Protocol != HTTP1 {
		errs = append(errs, fmt.Errorf("new connections: protocol %s multiplexes requests over one connection; a new connection per request is http1 only", o.Protocol))
	}
	if o.NewConnections && o.Flow != nil {
		errs = append(errs, errors.New("new connections: a flow's users keep their connections alive; a new connection per request drives connections, not a flow"))
	}
	return errors.Join(errs...)
}

// ClosedLoop reports whether o runs at maximum rate.
func (o Options) ClosedLoop() bool { return o.QPS == 0 }

// Result is one measured window.
type Result struct {
	// Options are the settings the window ran with.
	Options Options `json:"options"`
	// Start and Elapsed bound the measured window (warm-up excluded).
	Start   time.Time     `json:"start"`
	Elapsed time.Duration `json:"elapsed"`
	// TargetQPS is the requested rate (0 for closed loop); AchievedQPS is
	// what was served, in requests per second.
	TargetQPS   float64 `json:"targetQPS"`
	AchievedQPS float64 `json:"achievedQPS"`
	// Requests is every request sent in the window, Errors those that did
	// not return 200 (socket errors count as code -1).
	Requests int64 `json:"requests"`
	Errors   int64 `json:"errors"`
	// Codes counts responses per HTTP status code. A gRPC call counts as
	// 200 when its status is OK, and as GRPCCode(status) otherwise (1000
	// plus the gRPC code: 1014 is Unavailable, 1004 DeadlineExceeded).
	Codes map[int]int64 `json:"codes"`
	// Latency is fortio's raw histogram of every request's latency, in
	// seconds, at Options.Resolution, so results can be merged and
	// recomputed later. It is coarse in the tails (buckets 10 ms wide at
	// 10–20 ms, one overflow bucket above 1 s); percentiles come from it only
	// when HDR is nil, as in results files written before HDR recording.
	Latency *fstats.HistogramData `json:"latency"`
	// Timeline counts requests per time bucket when Options.Timeline is set.
	Timeline *Timeline `json:"timeline,omitempty"`
	// HDR holds the window's HDR histograms: every request uncorrected and,
	// in open loop, corrected for coordinated omission. Nil when not
	// recorded (Options.NoHDR, older results, a shard without them).
	HDR *Latencies `json:"hdr,omitempty"`
	// Invalid lists why the run must not be trusted; empty when valid.
	Invalid validity.Reasons `json:"invalid,omitempty"`
	// Step names the flow step a per-step result is of; empty otherwise.
	Step string `json:"step,omitempty"`
	// Steps are a flow's per-step results, in the flow's order; the
	// Result itself counts every step's requests together.
	Steps []*Result `json:"steps,omitempty"`
}

// Valid reports whether nothing invalidated the run.
func (r *Result) Valid() bool { return len(r.Invalid) == 0 }

// LatencySource names the histogram a Result's percentiles are read from.
type LatencySource string

// The sources, in order of preference.
const (
	// FromCorrected is HDR.Corrected: open-loop runs, latency from each
	// request's intended send time. What the thresholds and the gate judge
	// in open loop.
	FromCorrected LatencySource = "hdr-corrected"
	// FromUncorrected is HDR.Uncorrected: closed-loop runs, where a request
	// is sent when the previous one is answered and has no other intended
	// time.
	FromUncorrected LatencySource = "hdr-uncorrected"
	// FromFortio is fortio's coarser histogram, Latency: results without
	// HDR data.
	FromFortio LatencySource = "fortio"
)

// LatencySource is where Percentile and Max read: HDR.Corrected when there
// is one (open loop), else HDR.Uncorrected, else fortio's Latency.
func (r *Result) LatencySource() LatencySource {
	switch {
	case r.HDR != nil && r.HDR.Corrected.Count() > 0:
		return FromCorrected
	case r.HDR != nil && r.HDR.Uncorrected.Count() > 0:
		return FromUncorrected
	}
	return FromFortio
}

// Percentile returns the p-th latency percentile in seconds, from
// LatencySource: corrected for coordinated omission in open loop.
func (r *Result) Percentile(p float64) float64 {
	switch r.LatencySource() {
	case FromCorrected:
		return r.HDR.Corrected.Percentile(p)
	case FromUncorrected:
		return r.HDR.Uncorrected.Percentile(p)
	}
	return stats.Percentile(r.Latency, p)
}

// UncorrectedPercentile returns the p-th percentile in seconds of the
// latencies as sent: HDR.Uncorrected, or fortio's Latency without HDR. It
// equals Percentile in closed loop.
func (r *Result) UncorrectedPercentile(p float64) float64 {
	if r.HDR != nil && r.HDR.Uncorrected.Count() > 0 {
		return r.HDR.Uncorrected.Percentile(p)
	}
	return stats.Percentile(r.Latency, p)
}

// Max returns the largest latency in seconds, from LatencySource.
func (r *Result) Max() float64 { return r.Percentile(100) }

// errFlow is Warm's and Measure's answer to a flow, whose users live
// across the ramp and the window.
var errFlow = errors.New("a flow's users live across the ramp and the window: run it with Run, RunFlow or Start")

// fortioLog is set once: fortio's logger is process-wide.
var fortioLog sync.Once

// Run warms up (see Warm), then measures one window (see Measure); a flow
// (o.Flow) ramps up its users instead of the warm-up (see RunFlow).
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Flow != nil {
		return RunFlow(ctx, o, *o.Flow)
	}
	if err := Warm(ctx, o); err != nil {
		return nil, err
	}
	return Measure(ctx, o)
}

// Warm runs o.Warmup worth of load and throws the result away, so that the
// measured window starts with connections and handshakes done.
func Warm(ctx context.Context, o Options) error {
	if err := o.Normalize(); err != nil {
		return fmt.Errorf("load options: %w", err)
	}
	if o.Flow != nil {
		return errFlow
	}
	if o.Warmup <= 0 {
		return nil
	}
	if _, _, err := runFortio(ctx, o, o.Warmup, nil, false); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	return nil
}

// Measure runs one measured window of o.Duration against o.URL and judges
// it. It returns early, with ctx's error, when ctx is cancelled.
func Measure(ctx context.Context, o Options) (*Result, error) {
	if err := o.Normalize(); err != nil {
		return nil, fmt.Errorf("load options: %w", err)
	}
	if o.Flow != nil {
		return nil, errFlow
	}
	start := time.Now()
	var tl *timeline
	if o.Timeline > 0 {
		tl = newTimeline(start, o.Timeline, o.Duration+o.Timeout+time.Second, o.Concurrency)
	}
	fr, lat, err := runFortio(ctx, o, o.Duration, tl, !o.NoHDR)
	if err != nil {
		return nil, err
	}
	res := NewResult(o, start, fr.elapsed, fr.qps, fr.codes, fr.latency)
	res.HDR = lat
	if tl != nil {
		res.Timeline = tl.sum()
	}
	return res, nil
}

// NewResult builds the judged Result of one fortio window, in-process or
// read back from a remote fortio's JSON: its start, length, achieved rate,
// responses per status code and latency histogram (seconds).
func NewResult(o Options, start time.Time, elapsed time.Duration, achievedQPS float64, codes map[int]int64, latency *fstats.HistogramData) *Result {
	res := &Result{
		Options:     o,
		Start:       start,
		Elapsed:     elapsed,
		TargetQPS:   o.QPS,
		AchievedQPS: achievedQPS,
		Codes:       map[int]int64{},
		Latency:     latency,
	}
	for code, n := range codes {
		res.Codes[code] += n
		res.Requests += n
	}
	res.Errors = Failed(codes)
	res.Invalid = o.Judge(res)
	return res
}

// Failed is how many requests of codes (return code → count) failed:
// every code but 200, as a result's Errors counts them.
func Failed(codes map[int]int64) int64 {
	var n int64
	for code, c := range codes {
		if code != 200 {
			n += c
		}
	}
	return n
}

// Judge lists the reasons a result measured with o is invalid: no request,
// too many errors, or an open-loop run that missed its rate. Targets that
// merge several loadgens judge the merged result with it.
func (o Options) Judge(r *Result) validity.Reasons {
	var why validity.Reasons
	if r.Requests == 0 {
		why.Add(validity.NoRequests, "no request completed")
	}
	if r.Errors > 0 && !o.ExpectErrors && float64(r.Errors) > o.MaxErrorRate*float64(r.Requests) {
		why.Add(validity.Errors, "errors: %d of %d requests failed (codes %s)", r.Errors, r.Requests, FormatCodes(r.Codes))
	}
	if !o.ClosedLoop() && r.AchievedQPS < o.QPS*(1-o.RateTolerance) {
		why.Add(validity.MissedRate, "missed target rate: achieved %.1f req/s of %.1f (tolerance %.0f%%); the loadgen slowed down with the system, so latency is understated (coordinated omission)",
			r.AchievedQPS, o.QPS, o.RateTolerance*100)
	}
	return why
}

// FormatCodes prints status counts in code order, e.g. "-1:2 200:991
// 503:9", gRPC statuses with their name: "1014(Unavailable):9".
func FormatCodes(codes map[int]int64) string {
	keys := make([]int, 0, len(codes))
	for k := range codes {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d:%d", k, codes[k])
		if name := grpcName(k); name != "" {
			parts[i] = fmt.Sprintf("%d(%s):%d", k, name, codes[k])
		}
	}
	return strings.Join(parts, " ")
}

// window is what a fortio run of either protocol gives back.
type window struct {
	start   time.Time
	elapsed time.Duration
	qps     float64
	codes   map[int]int64
	latency *fstats.HistogramData
}

// runnerOptions are fortio's engine settings for one window of length d.
//
// An open loop catches up, as wrk2's does: a request whose time passed
// while its connection waited for a late answer is sent as soon as the
// answer comes, and the Recorder counts it from its intended send time.
// fortio's NoCatchUp would skip it instead, so a few late answers (a p99
// above the interval between one connection's requests) cost the run its
// rate and made it invalid although the system kept up: on kind, 3 of 3
// meshed proxyless gRPC runs at 1632 req/s over 8 connections (one
// request per 4.9 ms each, 3-5 % of answers later than that) achieved
// 1472-1526 req/s (CI, 2026-12-04). Caught up, a run misses its rate only
// when the system cannot serve it.
func runnerOptions(o Options, d time.Duration) periodic.RunnerOptions {
	qps := o.QPS
	if o.ClosedLoop() {
		qps = -1 // fortio: negative is max speed
	}
	ro := periodic.RunnerOptions{
		QPS:         qps,
		Duration:    d,
		NumThreads:  o.Concurrency,
		Resolution:  o.Resolution.Divider,
		Offset:      time.Duration(o.Resolution.Offset * float64(time.Second)),
		Percentiles: []float64{50, 90, 99, 99.9},
		Out:         io.Discard,
		Labels:      o.Labels,
		Stop:        periodic.NewAborter(),
	}
	return ro
}

// runFortio runs one fortio window of length d in o's protocol, recording
// HDR histograms when hdr is set and the timeline when tl is, and stops it
// early when ctx is cancelled.
func runFortio(ctx context.Context, o Options, d time.Duration, tl *timeline, hdr bool) (*window, *Latencies, error) {
	fortioLog.Do(func() { flog.SetLogLevelQuiet(flog.Error) })
	ro := runnerOptions(o, d)
	var rec *Recorder
	var loggers accessLoggers
	if hdr {
		rec = NewRecorder(&ro)
		loggers = append(loggers, rec)
	}
	if tl != nil {
		loggers = append(loggers, tl)
	}
	switch len(loggers) {
	case 0:
	case 1:
		ro.AccessLogger = loggers[0]
	default:
		ro.AccessLogger = loggers
	}
	// fortio clears ro.Stop when the run ends, so keep our own reference.
	stop := ro.Stop
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			stop.Abort(false)
		case <-done:
		}
	}()
	var w *window
	var err error
	if o.Protocol == GRPC {
		w, err = runGRPC(ctx, o, ro)
	} else {
		w, err = runHTTP(ctx, o, ro)
	}
	if err != nil {
		return nil, nil, err
	}
	if ctx.Err() != nil {
		return nil, nil, fmt.Errorf("load against %s interrupted: %w", o.URL, ctx.Err())
	}
	if rec == nil {
		return w, nil, nil
	}
	lat, err := rec.Latencies(w.start)
	if err != nil {
		return nil, nil, fmt.Errorf("load against %s: %w", o.URL, err)
	}
	return w, lat, nil
}

// accessLoggers hands every request to several access loggers, in order
// (the HDR recorder, then the timeline).
type accessLoggers []periodic.AccessLogger

// Start calls every logger's Start in order, each given the context the
// previous one returned (periodic.AccessLogger).
func (ls accessLoggers) Start(ctx context.Context, id periodic.ThreadID, iter int64, t time.Time) context.Context {
	for _, l := range ls {
		ctx = l.Start(ctx, id, iter, t)
	}
	return ctx
}

// Report hands the finished request to every logger in order
// (periodic.AccessLogger).
func (ls accessLoggers) Report(ctx context.Context, id periodic.ThreadID, iter int64, t time.Time, latency float64, ok bool, details string) {
	for _, l := range ls {
		l.Report(ctx, id, iter, t, latency, ok, details)
	}
}

// Info calls every logger's Info, in order (the recorder's marks the
// schedule's start), and joins them with ", " (periodic.AccessLogger).
func (ls accessLoggers) Info() string {
	infos := make([]string, len(ls))
	for i, l := range ls {
		infos[i] = l.Info()
	}
	return strings.Join(infos, ", ")
}
