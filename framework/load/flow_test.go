package load

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/workload"
)

// arrival is one request as the frontend saw it.
type arrival struct {
	path string
	at   time.Time
}

// bff is a real frontend (workload.Proxy) fanning out to a real backend
// (workload.Echo), with every frontend request logged per connection: a
// flow's user has one keep-alive connection, so a connection is a user.
type bff struct {
	fe, be *httptest.Server
	mu     sync.Mutex
	conns  map[string][]arrival
}

func newBFF(t *testing.T) *bff {
	t.Helper()
	b := &bff{conns: map[string][]arrival{}}
	b.be = httptest.NewServer(workload.Echo(workload.EchoOptions{Size: 16}))
	t.Cleanup(b.be.Close)
	u, err := url.Parse(b.be.URL)
	require.NoError(t, err)
	proxy := workload.Proxy(workload.ProxyOptions{Upstream: u})
	b.fe = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != workload.StatsPath {
			b.mu.Lock()
			b.conns[r.RemoteAddr] = append(b.conns[r.RemoteAddr], arrival{r.URL.Path, time.Now()})
			b.mu.Unlock()
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(b.fe.Close)
	return b
}

// requests is what an app says it served.
func (b *bff) requests(t *testing.T, srv *httptest.Server) int64 {
	t.Helper()
	resp, err := http.Get(srv.URL + workload.StatsPath)
	require.NoError(t, err)
	defer resp.Body.Close()
	var s workload.Stats
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&s))
	return s.Requests
}

// TestRunFlowAgainstBFF runs a real flow through a real fanning-out
// frontend and checks what can be checked exactly: counts per step, the
// fan-out relation, each user's order and one connection per user, and
// lower bounds from the ramp and the think time (timers never fire early;
// no assertion depends on the machine's speed).
func TestRunFlowAgainstBFF(t *testing.T) {
	b := newBFF(t)
	f := Flow{Users: 4, SpawnRate: 40, Think: 20 * time.Millisecond, Steps: []Step{
		{Name: "home", Path: "/home"},
		{Name: "cart", Path: "/cart", Fanout: 3},
	}}
	o := Options{URL: b.fe.URL + "/", Duration: 500 * time.Millisecond, Headers: map[string]string{workload.SourceHeader: "loadgen"}}
	begin := time.Now()
	sw, err := Spawn(context.Background(), func() Options { o := o; o.Flow = &f; return o }())
	require.NoError(t, err)
	ramped := time.Now()
	res, err := sw.Measure(context.Background())
	require.NoError(t, err)
	sw.Stop()

	// The ramp: user i starts i/SpawnRate after the first, so the window
	// opens no sooner than (Users-1)/SpawnRate, and the i-th connection's
	// first request comes no sooner than i/SpawnRate.
	assert.Equal(t, 75*time.Millisecond, f.Ramp())
	assert.GreaterOrEqual(t, ramped.Sub(begin), f.Ramp())
	b.mu.Lock()
	conns := b.conns
	b.mu.Unlock()
	require.Len(t, conns, f.Users, "one keep-alive connection per user")
	var firsts []time.Time
	var homes, carts int64
	for addr, as := range conns {
		firsts = append(firsts, as[0].at)
		for i, a := range as {
			// Each user runs the steps in order, from the first.
			assert.Equal(t, []string{"/home", "/cart"}[i%2], a.path, "%s request %d", addr, i)
			if i > 0 {
				// …and thinks after every step.
				assert.GreaterOrEqual(t, a.at.Sub(as[i-1].at), f.Think, "%s request %d", addr, i)
			}
			if a.path == "/home" {
				homes++
			} else {
				carts++
			}
		}
	}
	sort.Slice(firsts, func(i, j int) bool { return firsts[i].Before(firsts[j]) })
	for i, at := range firsts {
		assert.GreaterOrEqual(t, at.Sub(begin), time.Duration(i)*25*time.Millisecond, "user %d's first request", i+1)
	}

	// Fan-out: the backend served exactly 3 calls per cart and one per home.
	assert.Equal(t, homes+carts, b.requests(t, b.fe))
	assert.Equal(t, homes+3*carts, b.requests(t, b.be))

	// The window's result: every request once, per step and in total.
	require.True(t, res.Valid(), "%v", res.Invalid)
	require.Len(t, res.Steps, 2)
	assert.Equal(t, []string{"home", "cart"}, []string{res.Steps[0].Step, res.Steps[1].Step})
	assert.Equal(t, res.Steps[0].Requests+res.Steps[1].Requests, res.Requests)
	assert.Equal(t, res.Requests, res.Latency.Count)
	assert.Equal(t, map[int]int64{200: res.Requests}, res.Codes)
	for _, s := range res.Steps {
		assert.Positive(t, s.Requests, s.Step)
		assert.Equal(t, s.Requests, s.Latency.Count, s.Step)
		assert.Equal(t, map[int]int64{200: s.Requests}, s.Codes, s.Step)
		assert.InDelta(t, float64(s.Requests)/o.Duration.Seconds(), s.AchievedQPS, 1e-9, s.Step)
	}
	// The window holds only requests that started in it, fewer than the
	// whole run's, and no more than think time allows: each user starts at
	// most one request per Think.
	assert.Less(t, res.Requests, homes+carts)
	assert.LessOrEqual(t, res.Requests, int64(f.Users)*(int64(o.Duration/f.Think)+1))
	assert.Equal(t, f.Users, res.Options.Concurrency)
	assert.InDelta(t, res.Latency.Sum/float64(res.Latency.Count), res.Latency.Avg, 1e-12, "the mean Locust reads")
}

// TestRunFlowFailures counts a failing step's errors in that step only.
func TestRunFlowFailures(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/pay" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	res, err := RunFlow(context.Background(), Options{URL: srv.URL, Duration: 300 * time.Millisecond},
		Flow{Users: 2, SpawnRate: 100, Think: 5 * time.Millisecond, Steps: []Step{{Name: "browse"}, {Name: "pay", Path: "/pay"}}})
	require.NoError(t, err)
	browse, pay := res.Steps[0], res.Steps[1]
	assert.Zero(t, browse.Errors)
	assert.True(t, browse.Valid(), "%v", browse.Invalid)
	assert.Equal(t, pay.Requests, pay.Errors)
	assert.Equal(t, map[int]int64{503: pay.Requests}, pay.Codes)
	assert.Equal(t, pay.Errors, res.Errors)
	require.NotEmpty(t, res.Invalid)
	assert.Contains(t, res.Invalid[0].Detail, fmt.Sprintf("errors: %d of %d requests failed (codes ", pay.Errors, res.Requests))
}

func TestFlowNormalize(t *testing.T) {
	f := Flow{Steps: []Step{{Name: "home"}}}
	require.NoError(t, f.Normalize())
	assert.Equal(t, Flow{Users: 1, SpawnRate: 1, Steps: []Step{{Name: "home", Path: "/"}}}, f)

	bad := Flow{Users: -1, SpawnRate: -2, Think: -time.Second, Steps: []Step{
		{Name: "a b"}, {Name: "x", Path: "http://elsewhere/"}, {Name: "x", Fanout: 65},
	}}
	err := bad.Normalize()
	require.Error(t, err)
	for _, want := range []string{
		"users -1: must be >= 1",
		"spawn rate -2: must be > 0 users/s",
		"think -1s: must be >= 0",
		`step 1 name "a b": want letters, digits, '.', '_' or '-'`,
		`step x path "http://elsewhere/": want an absolute path such as /cart?item=1`,
		`step 3 name "x": used twice`,
		"step x fan-out 65: must be in [0, 64]",
	} {
		assert.Contains(t, err.Error(), want)
	}
	assert.EqualError(t, (&Flow{}).Normalize(), "steps: at least one")

	// The load options around a flow: its users are the concurrency, it
	// has no rate, and the caller's flow is never written to.
	mine := &Flow{Users: 3, Steps: []Step{{Name: "home"}}}
	o := Options{URL: "http://x:1/", Flow: mine}
	require.NoError(t, o.Normalize())
	assert.Equal(t, 3, o.Concurrency)
	assert.Equal(t, "", mine.Steps[0].Path, "normalized a copy")
	o = Options{URL: "http://x:1/", Flow: mine, Concurrency: 2, QPS: 10, Timeline: time.Second}
	err = o.Normalize()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "concurrency 2: a flow's concurrency is its 3 users")
	assert.Contains(t, err.Error(), "qps 10: a flow's rate is set by its users and think time; want 0")
	assert.Contains(t, err.Error(), "timeline: not recorded for a flow")
	assert.ErrorIs(t, Warm(context.Background(), Options{URL: "http://x:1/", Flow: mine}), errFlow)
}

// TestFlowShards splits a flow's users over two loadgens and merges their
// results step by step.
func TestFlowShards(t *testing.T) {
	b := newBFF(t)
	o := Options{URL: b.fe.URL + "/", Concurrency: 3, Duration: 150 * time.Millisecond,
		Flow: &Flow{Users: 3, SpawnRate: 30, Steps: []Step{{Name: "a", Path: "/a"}, {Name: "b", Path: "/b", Fanout: 2}}}}
	shards := Split(o, 2)
	require.Len(t, shards, 2)
	assert.Equal(t, []int{2, 1}, []int{shards[0].Flow.Users, shards[1].Flow.Users})
	assert.Equal(t, []float64{20, 10}, []float64{shards[0].Flow.SpawnRate, shards[1].Flow.SpawnRate})
	assert.Equal(t, 3, o.Flow.Users, "the caller's flow is kept")
	unset := Split(Options{Flow: &Flow{Users: 4}}, 2)
	assert.Equal(t, []int{2, 2}, []int{unset[0].Flow.Users, unset[1].Flow.Users}, "concurrency unset: the flow's users")

	ctx := context.Background()
	sess, err := Start(ctx, shards)
	require.NoError(t, err)
	results, err := sess.Measure(ctx)
	sess.Close()
	require.NoError(t, err)
	require.NoError(t, o.Normalize())
	m, err := Merge(o, results, []string{"one", "two"})
	require.NoError(t, err)
	require.Len(t, m.Steps, 2)
	for i, s := range m.Steps {
		assert.Equal(t, results[0].Steps[i].Requests+results[1].Steps[i].Requests, s.Requests, s.Step)
		assert.Equal(t, s.Requests, s.Latency.Count, s.Step)
	}
	assert.Equal(t, m.Steps[0].Requests+m.Steps[1].Requests, m.Requests)
	assert.True(t, slices.Equal([]string{"a", "b"}, []string{m.Steps[0].Step, m.Steps[1].Step}))
}
