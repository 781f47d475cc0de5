package load

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"fortio.org/fortio/fhttp"
	"fortio.org/fortio/periodic"
)

// httpCaller is one fortio thread's HTTP client (fhttp's fast client for
// HTTP/1.1, its std client for h2) and the status of every request it
// made. Only its thread touches it during the run.
type httpCaller struct {
	client fhttp.Fetcher
	codes  map[int]int64
}

var _ periodic.Runnable = (*httpCaller)(nil)

// Run sends one request (periodic.Runnable). It does per request what
// fortio's HTTP runner does that meshbench reads, and nothing else: the
// status counted and handed to the access loggers, which judge success as
// fortio does (2xx, or 418).
func (c *httpCaller) Run(ctx context.Context, _ periodic.ThreadID) (bool, string) {
	code, _, _ := c.client.StreamFetch(ctx)
	c.codes[code]++
	return fortioOK(code), codeText(code)
}

// fortioOK is fortio's own test of a successful HTTP status (fhttp's
// codeIsOK): any 2xx, and 418.
func fortioOK(code int) bool {
	return (code >= 200 && code <= 299) || code == http.StatusTeapot
}

// codeText is the access loggers' details of a request: its status, with
// no allocation for 200.
func codeText(code int) string {
	if code == http.StatusOK {
		return "200"
	}
	return strconv.Itoa(code)
}

// httpOptions are fhttp's client settings for o.
func httpOptions(o Options) (*fhttp.HTTPOptions, error) {
	ho := &fhttp.HTTPOptions{
		URL:            o.URL,
		H2:             o.Protocol == H2,
		NumConnections: 1,
		HTTPReqTimeOut: o.Timeout,
		// a new connection per request: Connection: close, and the
		// socket closed after each response
		DisableKeepAlive: o.NewConnections,
	}
	for k, v := range o.Headers {
		if err := ho.AddAndValidateExtraHeader(k + ":" + v); err != nil {
			return nil, fmt.Errorf("header %q: %w", k, err)
		}
	}
	if o.RequestSize > 0 {
		ho.Payload = make([]byte, o.RequestSize)
		ho.ContentType = "application/octet-stream"
	}
	return ho, nil
}

// runHTTP runs HTTP requests (h2c with prior knowledge for h2) with fhttp's
// clients on fortio's periodic engine, one connection per thread, each
// opened by one uncounted request before the window, in parallel, as
// fhttp.RunHTTPTest does. It does not use RunHTTPTest: per request, that
// runner also records the response's size and header size in two
// histograms meshbench never reads and formats the status as a string,
// about 9 of its 13 heap allocations per request (fortio's histograms box
// their debug-log arguments even when debug logging is off), which
// costs the loadgen CPU that the target then lacks (BenchmarkLoadgenCeiling).
func runHTTP(ctx context.Context, o Options, ro periodic.RunnerOptions) (*window, error) {
	ho, err := httpOptions(o)
	if err != nil {
		return nil, err
	}
	ro.RunType = "HTTP"
	r := periodic.NewPeriodicRunner(&ro)
	defer r.Options().Abort()
	// The clients' connection-time histograms at the run's resolution, as
	// RunHTTPTest sets them.
	ho.Resolution, ho.Offset, ho.UniqueID = r.Options().Resolution, r.Options().Offset, r.Options().RunID
	ho.Init(o.URL)
	callers := make([]*httpCaller, r.Options().NumThreads)
	defer func() {
		for _, c := range callers {
			if c != nil {
				c.client.Close()
			}
		}
	}()
	for i := range callers {
		ho.ID = i // the client's id in fortio's logs
		client, err := fhttp.NewClient(ho)
		if err != nil {
			return nil, fmt.Errorf("fortio http client for %s: %w", o.URL, err)
		}
		callers[i] = &httpCaller{client: client, codes: map[int]int64{}}
		r.Options().Runners[i] = callers[i]
	}
	connect(ctx, callers)
	res := r.Run()
	r.Options().ReleaseRunners()
	w := &window{start: res.StartTime, elapsed: res.ActualDuration, qps: res.ActualQPS, codes: map[int]int64{}, latency: res.DurationHistogram}
	for _, c := range callers {
		for code, n := range c.codes {
			w.codes[code] += n
		}
	}
	return w, nil
}

// connect sends every caller's first, uncounted request at once, which
// opens its connection: failures show in the window.
func connect(ctx context.Context, callers []*httpCaller) {
	var wg sync.WaitGroup
	for _, c := range callers {
		wg.Go(func() { c.client.StreamFetch(ctx) })
	}
	wg.Wait()
}
