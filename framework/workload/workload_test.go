package workload

import (
	"encoding/json"
	"fmt"
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

	for i := range 3 {
		req, _ := http.NewRequest(http.MethodGet, fe.URL+"/", nil)
		req.Header.Set(SourceHeader, "loadgen")
		req.Header.Set(PeerHeader, "CN=loadgen,O=meshbench") // as an inbound sidecar would
		req.Header.Set(ProtoHeader, "HTTP/2.0")
		req.Header.Set(ConnHeader, fmt.Sprintf("127.0.0.1:%d", 40000+i))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Len(t, body, 100)
	}
	resp, err := http.Get(be.URL + "/")
	require.NoError(t, err)
	resp.Body.Close()

	// The frontend's sidecar named three connections; the frontend's one
	// kept-alive connection to the backend carried the three requests.
	assert.Equal(t, Stats{Role: "frontend", Requests: 3, Callers: []Caller{{Source: "loadgen", Peer: "loadgen", Proto: "HTTP/2.0", Requests: 3, Connections: 3}}}, stats(t, fe.URL))
	// The frontend names itself and strips the sidecar's headers: the
	// backend saw frontend, direct (no sidecar here) over its own HTTP/1.1
	// hop, plus one anonymous direct call.
	assert.Equal(t, Stats{Role: "backend", Requests: 4, Callers: []Caller{
		{Source: "frontend", Peer: Direct, Proto: "HTTP/1.1", Requests: 3, Connections: 1},
		{Source: Unknown, Peer: Direct, Proto: "HTTP/1.1", Requests: 1, Connections: 1},
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

	assert.Equal(t, Stats{Role: "frontend", Requests: 5, Callers: []Caller{{Source: "loadgen", Peer: Direct, Proto: "HTTP/1.1", Requests: 5, Connections: 1}}}, stats(t, fe.URL))
	// The first fan-out dials up to three connections at once, which the
	// rest reuse; how many of the dials a call waited for is the race's.
	bs := stats(t, be.URL)
	require.Len(t, bs.Callers, 1)
	assert.True(t, bs.Callers[0].Connections >= 1 && bs.Callers[0].Connections <= 3, "backend connections %d, want 1 to 3", bs.Callers[0].Connections)
	bs.Callers[0].Connections = 0
	assert.Equal(t, Stats{Role: "backend", Requests: 2*3 + 1, Callers: []Caller{{Source: "frontend", Peer: Direct, Proto: "HTTP/1.1", Requests: 7}}}, bs)
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

// TestConnectionsCounted counts the connections that carried each caller's
// requests: the app's own accepted ones, or the inbound sidecar's as
// ConnHeader names them, and a connection used again after a stats read is
// counted again.
func TestConnectionsCounted(t *testing.T) {
	be := httptest.NewUnstartedServer(Echo(EchoOptions{}))
	be.Config.ConnContext = WithConn
	be.Start()
	defer be.Close()
	kept := &http.Client{Transport: &http.Transport{}}
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	get := func(c *http.Client, source, conn string) {
		req, err := http.NewRequest(http.MethodGet, be.URL+"/", nil)
		require.NoError(t, err)
		req.Header.Set(SourceHeader, source)
		if conn != "" {
			req.Header.Set(ConnHeader, conn)
		}
		resp, err := c.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	for range 3 {
		get(kept, "kept", "")
		get(fresh, "fresh", "")
	}
	for _, port := range []string{"5000", "5001", "5000", "5001"} {
		get(kept, "sidecar", "10.0.0.1:"+port) // one kept connection to the app, two to its sidecar
	}
	want := Stats{Role: "backend", Requests: 10, Callers: []Caller{
		{Source: "fresh", Peer: Direct, Proto: "HTTP/1.1", Requests: 3, Connections: 3},
		{Source: "kept", Peer: Direct, Proto: "HTTP/1.1", Requests: 3, Connections: 1},
		{Source: "sidecar", Peer: Direct, Proto: "HTTP/1.1", Requests: 4, Connections: 2},
	}}
	assert.Equal(t, want, stats(t, be.URL))
	get(kept, "kept", "")
	get(kept, "kept", "")
	want.Requests, want.Callers[1].Requests, want.Callers[1].Connections = 12, 5, 2
	assert.Equal(t, want, stats(t, be.URL), "the kept connection, used after a read, is counted again, once")
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
