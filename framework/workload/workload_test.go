package workload

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPeerName(t *testing.T) {
	for in, want := range map[string]string{
		"":                            Direct,
		"-":                           Direct,
		"loadgen.meshbench.local":     "loadgen",
		"CN=frontend,O=meshbench":     "frontend",
		"O=meshbench, CN=backend":     "backend",
		"backend":                     "backend",
		" CN=loadgen.meshbench.local": "loadgen",
	} {
		assert.Equal(t, want, PeerName(in), "%q", in)
	}
}

func stats(t *testing.T, url string) Stats {
	t.Helper()
	resp, err := http.Get(url + StatsPath)
	require.NoError(t, err)
	defer resp.Body.Close()
	var s Stats
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&s))
	return s
}

// TestProxyToEcho chains a frontend to a backend on real listeners and
// checks the body size and who each app says called it.
func TestProxyToEcho(t *testing.T) {
	be := httptest.NewServer(Echo(EchoOptions{Size: 100}))
	defer be.Close()
	u, _ := url.Parse(be.URL)
	fe := httptest.NewServer(Proxy(ProxyOptions{Upstream: u}))
	defer fe.Close()

	for range 3 {
		req, _ := http.NewRequest(http.MethodGet, fe.URL+"/", nil)
		req.Header.Set(SourceHeader, "loadgen")
		req.Header.Set(PeerHeader, "CN=loadgen,O=meshbench") // as an inbound sidecar would
		req.Header.Set(ProtoHeader, "HTTP/2.0")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Len(t, body, 100)
	}
	resp, err := http.Get(be.URL + "/")
	require.NoError(t, err)
	resp.Body.Close()

	assert.Equal(t, Stats{Role: "frontend", Requests: 3, Callers: []Caller{{Source: "loadgen", Peer: "loadgen", Proto: "HTTP/2.0", Requests: 3}}}, stats(t, fe.URL))
	// The frontend names itself and strips the sidecar's headers: the
	// backend saw frontend, direct (no sidecar here) over its own HTTP/1.1
	// hop, plus one anonymous direct call.
	assert.Equal(t, Stats{Role: "backend", Requests: 4, Callers: []Caller{
		{Source: "frontend", Peer: Direct, Proto: "HTTP/1.1", Requests: 3},
		{Source: Unknown, Peer: Direct, Proto: "HTTP/1.1", Requests: 1},
	}}, stats(t, be.URL))
}

// TestProxyFanout asks the frontend for 3 backend calls per request and
// checks the exact counts, the concatenated body, and that the parameter
// is not forwarded.
func TestProxyFanout(t *testing.T) {
	var queries []string
	var mu sync.Mutex
	echo := Echo(EchoOptions{Size: 10})
	be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != StatsPath {
			mu.Lock()
			queries = append(queries, r.URL.RawQuery)
			mu.Unlock()
		}
		echo.ServeHTTP(w, r)
	}))
	defer be.Close()
	u, _ := url.Parse(be.URL)
	fe := httptest.NewServer(Proxy(ProxyOptions{Upstream: u}))
	defer fe.Close()

	get := func(path string) (int, int) {
		req, _ := http.NewRequest(http.MethodGet, fe.URL+path, nil)
		req.Header.Set(SourceHeader, "loadgen")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, len(body)
	}
	for range 2 {
		code, n := get("/cart?fanout=3&item=7")
		assert.Equal(t, http.StatusOK, code)
		assert.Equal(t, 30, n, "three bodies, in order")
	}
	code, n := get("/?fanout=1")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, 10, n, "fan-out 1 is the plain reverse proxy")
	code, _ = get("/?fanout=0")
	assert.Equal(t, http.StatusBadRequest, code)
	code, _ = get("/?fanout=65")
	assert.Equal(t, http.StatusBadRequest, code)

	assert.Equal(t, Stats{Role: "frontend", Requests: 5, Callers: []Caller{{Source: "loadgen", Peer: Direct, Proto: "HTTP/1.1", Requests: 5}}}, stats(t, fe.URL))
	assert.Equal(t, Stats{Role: "backend", Requests: 2*3 + 1, Callers: []Caller{{Source: "frontend", Peer: Direct, Proto: "HTTP/1.1", Requests: 7}}}, stats(t, be.URL))
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"item=7", "item=7", "item=7", "item=7", "item=7", "item=7", ""}, queries, "fanout is never forwarded")
}

func TestFanoutParam(t *testing.T) {
	for in, want := range map[string]int{"/": 1, "/?fanout=1": 1, "/?fanout=64": 64, "/x?a=b&fanout=3": 3} {
		u, _ := url.Parse(in)
		k, err := Fanout(u)
		require.NoError(t, err, in)
		assert.Equal(t, want, k, in)
	}
	u, _ := url.Parse("/?fanout=x")
	_, err := Fanout(u)
	assert.EqualError(t, err, `fanout="x": want an integer in [1, 64]`)
}

// TestFirstRequestOfEachCaller: the backend keeps the first request of
// each caller as it arrived, method, body length and headers, and not the
// later ones; its own paths are not requests.
func TestFirstRequestOfEachCaller(t *testing.T) {
	be := httptest.NewServer(Echo(EchoOptions{Size: 1}))
	defer be.Close()
	send := func(method, src, tenant, body string) {
		req, err := http.NewRequest(method, be.URL+"/", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set(SourceHeader, src)
		req.Header.Set("X-Tenant", tenant)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	send(http.MethodPost, "loadgen", "a", "0123456789")
	send(http.MethodGet, "loadgen", "b", "")
	send(http.MethodGet, "probe", "c", "")
	resp, err := http.Get(be.URL + FirstPath)
	require.NoError(t, err)
	defer resp.Body.Close()
	var firsts []First
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&firsts))
	require.Len(t, firsts, 2)
	assert.Equal(t, First{Source: "loadgen", Peer: Direct, Proto: "HTTP/1.1", Method: http.MethodPost, ContentLength: 10}, withoutHeader(firsts[0]))
	assert.Equal(t, "a", firsts[0].Header.Get("X-Tenant"), "the first request's, not the second's")
	assert.Equal(t, First{Source: "probe", Peer: Direct, Proto: "HTTP/1.1", Method: http.MethodGet}, withoutHeader(firsts[1]))
	assert.Equal(t, "c", firsts[1].Header.Get("X-Tenant"))
	assert.EqualValues(t, 3, stats(t, be.URL).Requests, "its own paths are not counted")
}

func withoutHeader(f First) First {
	f.Header = nil
	return f
}
