// Package workload holds the applications that meshbench measures a mesh
// around: an echo backend that answers with a fixed-size body (over HTTP, or
// as fortio's gRPC ping service), and a frontend that reverse-proxies to it
// (HTTP/1.1, or h2c, which carries gRPC with its trailers). Both count who called them, as told by the
// peer-identity header that an inbound sidecar sets after verifying the
// caller's mTLS certificate, so a run can prove which path its requests took.
package workload

import (
	"encoding/json"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sort"
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

// Unknown is the source name of requests that did not say who they are.
const Unknown = "unknown"

// StatsPath serves a Stats document; it is not counted as a request.
const StatsPath = "/meshbench/stats"

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
	Proto    string `json:"proto,omitempty"`
	Requests int64  `json:"requests"`
}

type callerKey struct{ source, peer, proto string }

// counter counts requests per caller with one atomic per known caller.
type counter struct {
	role    string
	total   atomic.Int64
	mu      sync.RWMutex
	callers map[callerKey]*atomic.Int64
}

func newCounter(role string) *counter {
	return &counter{role: role, callers: map[callerKey]*atomic.Int64{}}
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
			n = new(atomic.Int64)
			c.callers[k] = n
		}
		c.mu.Unlock()
	}
	n.Add(1)
}

func (c *counter) serveStats(w http.ResponseWriter) {
	s := Stats{Role: c.role, Requests: c.total.Load()}
	c.mu.RLock()
	for k, v := range c.callers {
		s.Callers = append(s.Callers, Caller{Source: k.source, Peer: k.peer, Proto: k.proto, Requests: v.Load()})
	}
	c.mu.RUnlock()
	sort.Slice(s.Callers, func(i, j int) bool {
		a, b := s.Callers[i], s.Callers[j]
		return a.Source < b.Source || a.Source == b.Source && (a.Peer < b.Peer || a.Peer == b.Peer && a.Proto < b.Proto)
	})
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(s)
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
		if r.URL.Path == StatsPath {
			c.serveStats(w)
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

// Proxy returns the frontend handler: a reverse proxy to o.Upstream.
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
			pr.Out.Header.Del(PeerHeader)
			pr.Out.Header.Del(ProtoHeader)
			pr.Out.Header.Set(SourceHeader, o.Name)
		},
		Transport: tr,
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == StatsPath {
			c.serveStats(w)
			return
		}
		c.count(r)
		rp.ServeHTTP(w, r)
	})
}

// Server wraps h in an http.Server listening on addr that speaks HTTP/1.1
// and, when h2c is set, cleartext HTTP/2 with prior knowledge.
func Server(addr string, h http.Handler, h2c bool) *http.Server {
	s := &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	s.Protocols = new(http.Protocols)
	s.Protocols.SetHTTP1(true)
	if h2c {
		s.Protocols.SetUnencryptedHTTP2(true)
	}
	return s
}
