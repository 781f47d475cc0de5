// Package workload holds the applications that meshbench measures a mesh
// around: an echo backend that answers with a fixed-size body (over HTTP, or
// as fortio's gRPC ping service), and a frontend that reverse-proxies to it
// (HTTP/1.1, or h2c, which carries gRPC with its trailers), or, asked with
// ?fanout=k, calls it k times like a backend-for-frontend. Both count who
// called them, as told by the
// peer-identity header that an inbound sidecar sets after verifying the
// caller's mTLS certificate, so a run can prove which path its requests took.
package workload

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// PeerHeader is set by an inbound sidecar to the verified identity of the
// mTLS client it accepted the request from. Apps never trust it from
// anywhere else: the frontend strips it before forwarding.
const PeerHeader = "X-Meshbench-Peer"

// SourceHeader is the caller's claimed name: the loadgen sends "loadgen",
// and the frontend replaces it with "frontend" when it forwards. An edge is
// secured when the identity its callee's sidecar verified (PeerHeader)
// matches this claim.
const SourceHeader = "X-Meshbench-Src"

// ProtoHeader is set by an inbound sidecar to the HTTP version of the
// request it accepted ("HTTP/2.0" for h2 over mTLS), so that the app can
// tell which protocol the hop into its sidecar spoke. Apps that get none
// count their own hop's (http.Request.Proto). The frontend strips it
// before forwarding.
const ProtoHeader = "X-Meshbench-Proto"

// ConnHeader is set by an inbound sidecar to the remote address
// (host:port) of the connection it accepted the request on, so that the
// app counts the connections its callers opened to the sidecar, not the
// sidecar's own pooled ones to the app. Apps that get none count the
// connections they accepted themselves. The frontend strips it before
// forwarding.
const ConnHeader = "X-Meshbench-Conn"

// Unknown is the source name of requests that did not say who they are.
const Unknown = "unknown"

// StatsPath serves a Stats document; it is not counted as a request.
const StatsPath = "/meshbench/stats"

// FirstPath serves, as JSON, the first request the app served from each
// caller (a list of First); it is not counted as a request.
const FirstPath = "/meshbench/first"

// ownPrefix starts the paths an app answers itself (StatsPath,
// FirstPath): one comparison per request tells them from the load's.
const ownPrefix = "/meshbench/"

// Direct is the peer name under which requests without PeerHeader are
// counted: they reached the app without passing an inbound sidecar.
const Direct = "direct"

// Stats is what an app reports about the requests it served.
type Stats struct {
	// Role is "backend" or "frontend".
	Role string `json:"role"`
	// Requests is the total number of requests served.
	Requests int64 `json:"requests"`
	// Callers counts requests per (claimed source, verified peer).
	Callers []Caller `json:"callers"`
}

// Caller is one kind of caller an app has seen.
type Caller struct {
	// Source is the caller's claim (SourceHeader), or Unknown.
	Source string `json:"source"`
	// Peer is the identity the inbound sidecar verified with mTLS, or
	// Direct when the request did not come through a sidecar.
	Peer string `json:"peer"`
	// Proto is the HTTP version the caller's hop spoke: ProtoHeader, or
	// the app's own hop when it has none ("HTTP/1.1", "HTTP/2.0").
	Proto string `json:"proto,omitempty"`
	// Requests is how many requests the app served from this caller, a count.
	Requests int64 `json:"requests"`
	// Connections counts, summed over the stats reads, the connections
	// that carried this caller's requests between two reads of StatsPath:
	// the inbound sidecar's accepted connections as ConnHeader names them,
	// or the app's own without one. A connection that carries requests
	// across a read is counted again after it, so the difference of two
	// reads is the connections used in between. Connections are told
	// apart by remote address under ConnHeader, so a port reused between
	// two reads would be counted once; the set of addresses is cut every
	// maxConnKeys, which counts the connections open across the cut again
	// (at most the caller's concurrency per maxConnKeys connections).
	Connections int64 `json:"connections,omitempty"`
}

// First is the first request an app served from one caller, as it
// arrived there: what the client and the proxies on its path sent, for a
// test to assert at the backend. It is kept once per caller, when the
// caller is first seen, so it costs no request anything.
type First struct {
	// Source, Peer and Proto name the caller, as in Caller.
	Source string `json:"source"`
	Peer   string `json:"peer"`
	Proto  string `json:"proto,omitempty"`
	// Method is the request's method: POST when the client sends a body.
	Method string `json:"method"`
	// ContentLength is the request body's declared length in bytes; -1
	// when unknown (chunked), 0 for none.
	ContentLength int64 `json:"contentLength"`
	// Header is every header the request arrived with (for gRPC, its
	// metadata).
	Header http.Header `json:"header"`
}

type callerKey struct{ source, peer, proto string }

// callerCount is one caller's requests and connections.
type callerCount struct{ requests, conns atomic.Int64 }

// connKey is a connection one caller's requests came on: the remote
// address in ConnHeader, or the app's own accepted net.Conn (see Server),
// or its http.Request.RemoteAddr when served by another server.
type connKey struct {
	caller callerKey
	conn   any
}

// maxConnKeys bounds the connections remembered between two stats reads.
// It is well below the connections a client makes before its ephemeral
// port comes back (Linux's default range has 28 232 ports, which connect
// walks in steps of two, as read in its __inet_hash_connect), so that a
// reused port is not taken for an old connection.
const maxConnKeys = 4096

// counter counts requests and connections per caller, with atomics per
// known caller and the connections seen since the last stats read, and
// keeps the first request of each.
type counter struct {
	role    string
	total   atomic.Int64
	mu      sync.RWMutex
	callers map[callerKey]*callerCount
	firsts  map[callerKey]First
	conns   sync.Map // connKey → struct{}, since the last read
	nconns  atomic.Int64
}

func newCounter(role string) *counter {
	return &counter{role: role, callers: map[callerKey]*callerCount{}, firsts: map[callerKey]First{}}
}

func (c *counter) count(r *http.Request) {
	c.total.Add(1)
	k := callerKey{source: strings.TrimSpace(r.Header.Get(SourceHeader)), peer: PeerName(r.Header.Get(PeerHeader)),
		proto: strings.TrimSpace(r.Header.Get(ProtoHeader))}
	if k.source == "" {
		k.source = Unknown
	}
	if k.proto == "" {
		k.proto = r.Proto
	}
	c.mu.RLock()
	n, ok := c.callers[k]
	c.mu.RUnlock()
	if !ok {
		c.mu.Lock()
		if n, ok = c.callers[k]; !ok {
			n = new(callerCount)
			c.callers[k] = n
			c.firsts[k] = First{Source: k.source, Peer: k.peer, Proto: k.proto, Method: r.Method, ContentLength: r.ContentLength, Header: r.Header.Clone()}
		}
		c.mu.Unlock()
	}
	n.requests.Add(1)
	if c.firstOn(connKey{k, connOf(r)}) {
		n.conns.Add(1)
	}
}

// connOf names the connection r came on: the inbound sidecar's accepted
// one (ConnHeader), or the app's own.
func connOf(r *http.Request) any {
	if v := strings.TrimSpace(r.Header.Get(ConnHeader)); v != "" {
		return v
	}
	if c, ok := r.Context().Value(netConnKey{}).(net.Conn); ok {
		return c
	}
	return r.RemoteAddr
}

// firstOn tells whether k carries its first request since the last
// stats read (or the last cut at maxConnKeys).
func (c *counter) firstOn(k connKey) bool {
	if _, seen := c.conns.Load(k); seen {
		return false
	}
	if _, seen := c.conns.LoadOrStore(k, struct{}{}); seen {
		return false
	}
	if c.nconns.Add(1) > maxConnKeys {
		c.cutConns()
		c.conns.Store(k, struct{}{})
		c.nconns.Add(1)
	}
	return true
}

// cutConns forgets the connections seen: the next request on each counts
// it again.
func (c *counter) cutConns() {
	c.conns.Clear()
	c.nconns.Store(0)
}

func (c *counter) serveStats(w http.ResponseWriter) {
	s := Stats{Role: c.role, Requests: c.total.Load()}
	c.mu.RLock()
	for k, v := range c.callers {
		s.Callers = append(s.Callers, Caller{Source: k.source, Peer: k.peer, Proto: k.proto, Requests: v.requests.Load(), Connections: v.conns.Load()})
	}
	c.mu.RUnlock()
	c.cutConns()
	sort.Slice(s.Callers, func(i, j int) bool {
		a, b := s.Callers[i], s.Callers[j]
		return a.Source < b.Source || a.Source == b.Source && (a.Peer < b.Peer || a.Peer == b.Peer && a.Proto < b.Proto)
	})
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(s)
}

// serveOwn answers the app's own paths (StatsPath, FirstPath), and
// reports whether r was one of them.
func (c *counter) serveOwn(w http.ResponseWriter, r *http.Request) bool {
	if !strings.HasPrefix(r.URL.Path, ownPrefix) {
		return false
	}
	switch r.URL.Path {
	case StatsPath:
		c.serveStats(w)
	case FirstPath:
		c.serveFirsts(w)
	default:
		return false
	}
	return true
}

// serveFirsts writes the first request of each caller, in the order of
// Stats.Callers.
func (c *counter) serveFirsts(w http.ResponseWriter) {
	c.mu.RLock()
	out := slices.Collect(maps.Values(c.firsts))
	c.mu.RUnlock()
	slices.SortFunc(out, func(a, b First) int {
		return cmp.Or(cmp.Compare(a.Source, b.Source), cmp.Compare(a.Peer, b.Peer), cmp.Compare(a.Proto, b.Proto))
	})
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// PeerName normalises what a sidecar puts in PeerHeader to a workload name:
// a DNS SAN "loadgen.meshbench.local", a subject DN "CN=loadgen,O=meshbench"
// or a bare name all give "loadgen"; empty gives Direct.
func PeerName(v string) string {
	v = strings.TrimSpace(v)
	if v == "" || v == "-" {
		return Direct
	}
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		if cn, ok := strings.CutPrefix(part, "CN="); ok {
			v = cn
			break
		}
	}
	name, _, _ := strings.Cut(v, ".")
	return name
}

// EchoOptions configures the echo backend.
type EchoOptions struct {
	// Size is the response body size in bytes. Default 0 (empty body).
	Size int
	// Delay is added before every answer. Zero by default; tests use it to
	// stand in for a regressed proxy and show that a fixture trips.
	Delay time.Duration
}

// Echo returns the backend handler: a fixed-size body for every request.
func Echo(o EchoOptions) http.Handler {
	c := newCounter("backend")
	body := make([]byte, o.Size)
	for i := range body {
		body[i] = 'a' + byte(i%26)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.serveOwn(w, r) {
			return
		}
		c.count(r)
		if o.Delay > 0 {
			time.Sleep(o.Delay)
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(body)
	})
}

// ProxyOptions configures the frontend.
type ProxyOptions struct {
	// Upstream is the URL requests are forwarded to (the backend, or the
	// frontend's own outbound sidecar in a meshed arm).
	Upstream *url.URL
	// H2C speaks cleartext HTTP/2 to the upstream, which gRPC needs;
	// HTTP/1.1 otherwise.
	H2C bool
	// MaxIdleConns is the idle keep-alive pool towards the upstream. Default 1024.
	MaxIdleConns int
	// Name is the frontend's own name, sent upstream as SourceHeader;
	// chains of several frontends name each apart. Default "frontend".
	Name string
}

// FanoutParam is the query parameter that asks the frontend to fan out:
// GET /?fanout=3 makes three calls to its upstream for one request, as a
// backend-for-frontend does for one page. The parameter is not forwarded, so
// on a longer chain only the first frontend fans out.
const FanoutParam = "fanout"

// MaxFanout bounds the fan-out one request may ask for.
const MaxFanout = 64

// Proxy returns the frontend handler: a reverse proxy to o.Upstream, or,
// for a request with ?fanout=k (k > 1), k calls to it (see fanOut).
func Proxy(o ProxyOptions) http.Handler {
	if o.Name == "" {
		o.Name = "frontend"
	}
	c := newCounter(o.Name)
	if o.MaxIdleConns == 0 {
		o.MaxIdleConns = 1024
	}
	tr := &http.Transport{
		MaxIdleConns:        o.MaxIdleConns,
		MaxIdleConnsPerHost: o.MaxIdleConns,
		IdleConnTimeout:     90 * time.Second,
	}
	if o.H2C {
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetUnencryptedHTTP2(true)
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(o.Upstream)
			q := pr.Out.URL.Query()
			if q.Has(FanoutParam) {
				q.Del(FanoutParam)
				pr.Out.URL.RawQuery = q.Encode()
			}
			pr.Out.Header.Del(PeerHeader)
			pr.Out.Header.Del(ProtoHeader)
			pr.Out.Header.Del(ConnHeader)
			pr.Out.Header.Set(SourceHeader, o.Name)
		},
		Transport: tr,
	}
	fo := &fanOut{upstream: o.Upstream, name: o.Name, client: &http.Client{Transport: tr}}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.serveOwn(w, r) {
			return
		}
		c.count(r)
		k, err := Fanout(r.URL)
		switch {
		case err != nil:
			http.Error(w, err.Error(), http.StatusBadRequest)
		case k > 1:
			fo.ServeHTTP(w, r, k)
		default:
			rp.ServeHTTP(w, r)
		}
	})
}

// Fanout reads ?fanout=k from u: 1 when absent, an error when k is not in
// [1, MaxFanout].
func Fanout(u *url.URL) (int, error) {
	v := u.Query().Get(FanoutParam)
	if v == "" {
		return 1, nil
	}
	k, err := strconv.Atoi(v)
	if err != nil || k < 1 || k > MaxFanout {
		return 0, fmt.Errorf("%s=%q: want an integer in [1, %d]", FanoutParam, v, MaxFanout)
	}
	return k, nil
}

// fanOut is the backend-for-frontend: one request in, k calls to the
// upstream, all at once, and one answer out with their bodies in order.
// The calls are parallel because a BFF's calls for one page are
// independent, and that is how they are written when latency matters: the
// user then waits for the slowest of k meshed calls, so the tail of the
// mesh's per-hop cost, not only its mean, shows in the step's latency. Any
// failed call fails the request with 502 naming it.
type fanOut struct {
	upstream *url.URL
	name     string // the frontend's own, sent as SourceHeader
	client   *http.Client
}

// ServeHTTP answers r with k parallel calls to the upstream (r's method,
// body, path and query, fanout removed) and their bodies in order; a
// failed call fails it with 502. Its k makes it no http.Handler.
func (f *fanOut) ServeHTTP(w http.ResponseWriter, r *http.Request, k int) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "read request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	u := *f.upstream
	u.Path = strings.TrimSuffix(u.Path, "/") + r.URL.Path
	q := r.URL.Query()
	q.Del(FanoutParam)
	u.RawQuery = q.Encode()
	bodies := make([][]byte, k)
	errs := make([]error, k)
	var wg sync.WaitGroup
	for i := range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bodies[i], errs[i] = f.call(r.Context(), r.Method, u.String(), body)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			http.Error(w, fmt.Sprintf("fan-out call %d of %d: %v", i+1, k, err), http.StatusBadGateway)
			return
		}
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	for _, b := range bodies {
		_, _ = w.Write(b)
	}
}

// call makes one upstream call as the frontend and returns its body.
func (f *fanOut) call(ctx context.Context, method, u string, body []byte) ([]byte, error) {
	var rd io.Reader
	if len(body) > 0 {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, fmt.Errorf("request %s %s: %w", method, u, err)
	}
	req.Header.Set(SourceHeader, f.name)
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s %s: %s", method, u, resp.Status)
	}
	return b, nil
}

// netConnKey is the context key of the net.Conn a request came on.
type netConnKey struct{}

// Server wraps h in an http.Server listening on addr that speaks HTTP/1.1
// and, when h2c is set, cleartext HTTP/2 with prior knowledge. Each
// request's context carries its connection, which the apps count their
// callers' connections by.
func Server(addr string, h http.Handler, h2c bool) *http.Server {
	s := &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: 10 * time.Second, ConnContext: WithConn}
	s.Protocols = new(http.Protocols)
	s.Protocols.SetHTTP1(true)
	if h2c {
		s.Protocols.SetUnencryptedHTTP2(true)
	}
	return s
}

// WithConn is an http.Server.ConnContext that puts the accepted connection
// in its requests' context, so that Echo, GRPCEcho and Proxy count it
// exactly (without it, by remote address).
func WithConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, netConnKey{}, c)
}
