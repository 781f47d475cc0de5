package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	fstats "fortio.org/fortio/stats"

	"github.com/meshbench/meshbench/framework/stats"
	"github.com/meshbench/meshbench/framework/validity"
	"github.com/meshbench/meshbench/framework/workload"
)

// Flow is a user flow, as Locust drives one: Users users start SpawnRate
// per second; each user loops over Steps in order on its own keep-alive
// connection, one request at a time, and waits Think after every step
// (the last one included) before the next. The ramp is the warm-up: the
// measured window (Options.Duration) opens once every user has started
// and made its first request, so no connection set-up is measured and
// Options.Warmup is not used. Each user keeps running across the window's
// edges; a request counts in the window when it starts inside it.
type Flow struct {
	// Users is the number of simulated users. Default 1.
	Users int `json:"users"`
	// SpawnRate is how many users start per second during the ramp: user
	// i starts i/SpawnRate seconds after the first. Default Users (the
	// ramp lasts under a second).
	SpawnRate float64 `json:"spawnRate"`
	// Think is each user's wait after every step, constant (Locust's
	// wait_time = constant(…)). Default 0.
	Think time.Duration `json:"think"`
	// Steps are one pass of the flow, in order. At least one.
	Steps []Step `json:"steps"`
}

// Step is one request of a flow.
type Step struct {
	// Name labels the step in results and in metric units (home-p50-ms):
	// letters, digits, '.', '_' and '-', unique within the flow.
	Name string `json:"name"`
	// Path is requested relative to the load's URL, query included, e.g.
	// "/cart?item=1". Default "/".
	Path string `json:"path,omitempty"`
	// Fanout is how many backend calls the frontend makes for this step,
	// in parallel (workload.FanoutParam). 0 or 1: it proxies once. Only a
	// path with a frontend fans out.
	Fanout int `json:"fanout,omitempty"`
}

var stepName = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// clone copies f and its steps, so that normalizing never writes to the
// caller's flow.
func (f *Flow) clone() *Flow {
	c := *f
	c.Steps = slices.Clone(f.Steps)
	return &c
}

// Normalize fills in defaults and validates f, naming what is wrong.
func (f *Flow) Normalize() error {
	if f.Users == 0 {
		f.Users = 1
	}
	if f.SpawnRate == 0 {
		f.SpawnRate = float64(f.Users)
	}
	var errs []error
	if f.Users < 0 {
		errs = append(errs, fmt.Errorf("users %d: must be >= 1", f.Users))
	}
	if !(f.SpawnRate > 0) || math.IsInf(f.SpawnRate, 0) {
		errs = append(errs, fmt.Errorf("spawn rate %v: must be > 0 users/s", f.SpawnRate))
	}
	if f.Think < 0 {
		errs = append(errs, fmt.Errorf("think %v: must be >= 0", f.Think))
	}
	if len(f.Steps) == 0 {
		errs = append(errs, errors.New("steps: at least one"))
	}
	seen := map[string]bool{}
	for i := range f.Steps {
		s := &f.Steps[i]
		if s.Path == "" {
			s.Path = "/"
		}
		switch {
		case !stepName.MatchString(s.Name):
			errs = append(errs, fmt.Errorf("step %d name %q: want letters, digits, '.', '_' or '-'", i+1, s.Name))
		case seen[s.Name]:
			errs = append(errs, fmt.Errorf("step %d name %q: used twice", i+1, s.Name))
		}
		seen[s.Name] = true
		if u, err := url.Parse(s.Path); err != nil || u.IsAbs() || s.Path[0] != '/' {
			errs = append(errs, fmt.Errorf("step %s path %q: want an absolute path such as /cart?item=1", s.Name, s.Path))
		}
		if s.Fanout < 0 || s.Fanout > workload.MaxFanout {
			errs = append(errs, fmt.Errorf("step %s fan-out %d: must be in [0, %d]", s.Name, s.Fanout, workload.MaxFanout))
		}
	}
	return errors.Join(errs...)
}

// Ramp is how long spawning every user takes.
func (f Flow) Ramp() time.Duration {
	if f.Users <= 1 || !(f.SpawnRate > 0) {
		return 0
	}
	return time.Duration(float64(f.Users-1) / f.SpawnRate * float64(time.Second))
}

// normalizeFlow checks o.Flow (a normalized copy) against the rest of o.
func (o *Options) normalizeFlow() []error {
	f := o.Flow.clone()
	var errs []error
	if err := f.Normalize(); err != nil {
		errs = append(errs, fmt.Errorf("flow: %w", err))
	}
	o.Flow = f
	if o.Concurrency == 0 {
		o.Concurrency = f.Users
	}
	if o.Concurrency != f.Users {
		errs = append(errs, fmt.Errorf("concurrency %d: a flow's concurrency is its %d users", o.Concurrency, f.Users))
	}
	if o.QPS != 0 {
		errs = append(errs, fmt.Errorf("qps %v: a flow's rate is set by its users and think time; want 0", o.QPS))
	}
	if o.Timeline > 0 {
		errs = append(errs, errors.New("timeline: not recorded for a flow"))
	}
	return errs
}

// RunFlow runs f against o.URL (its steps' paths are relative to it): the
// ramp, then one measured window of o.Duration. The Result counts every
// request of the window, and its Steps hold each step's.
func RunFlow(ctx context.Context, o Options, f Flow) (*Result, error) {
	o.Flow = &f
	sw, err := Spawn(ctx, o)
	if err != nil {
		return nil, err
	}
	defer sw.Stop()
	return sw.Measure(ctx)
}

// Swarm is a flow's users, spawned and looping until the window closes.
type Swarm struct {
	o       Options
	urls    []string
	payload []byte
	users   []*user
	stop    chan struct{}
	halt    func()
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	window  atomic.Pointer[flowWindow]
	used    atomic.Bool
}

// flowWindow is the measured window: requests that start in [start, end).
type flowWindow struct{ start, end time.Time }

// user is one simulated user: its connection and what it measured, per
// step, which only it writes while it runs.
type user struct {
	client *http.Client
	hists  []*fstats.Histogram
	codes  []map[int]int64
}

// Spawn starts o.Flow's users at its spawn rate and returns once every
// user has started and made its first request: the ramp, thrown away. The
// users run until Measure's window closes or Stop; ctx bounds them.
func Spawn(ctx context.Context, o Options) (*Swarm, error) {
	if o.Flow == nil {
		return nil, errors.New("spawn: no flow in the load options")
	}
	if err := o.Normalize(); err != nil {
		return nil, fmt.Errorf("load options: %w", err)
	}
	urls, err := stepURLs(o)
	if err != nil {
		return nil, err
	}
	uctx, cancel := context.WithCancel(ctx)
	s := &Swarm{o: o, urls: urls, stop: make(chan struct{}), cancel: cancel}
	s.halt = sync.OnceFunc(func() { close(s.stop) })
	if o.RequestSize > 0 {
		s.payload = make([]byte, o.RequestSize)
	}
	f := o.Flow
	var ready sync.WaitGroup
	start := time.Now()
	for i := range f.Users {
		at := start.Add(time.Duration(float64(i) / f.SpawnRate * float64(time.Second)))
		if err := sleepUntil(ctx, at); err != nil {
			s.Stop()
			return nil, fmt.Errorf("flow against %s: ramp interrupted after %d of %d users: %w", o.URL, i, f.Users, err)
		}
		u := s.newUser()
		s.users = append(s.users, u)
		ready.Add(1)
		s.wg.Add(1)
		go s.loop(uctx, u, sync.OnceFunc(ready.Done))
	}
	if err := waitCtx(ctx, &ready); err != nil {
		s.Stop()
		return nil, fmt.Errorf("flow against %s: waiting for every user's first request: %w", o.URL, err)
	}
	return s, nil
}

// stepURLs resolves each step against o.URL, with its fan-out.
func stepURLs(o Options) ([]string, error) {
	base, err := url.Parse(o.URL)
	if err != nil {
		return nil, fmt.Errorf("flow url %q: %w", o.URL, err)
	}
	urls := make([]string, len(o.Flow.Steps))
	for i, st := range o.Flow.Steps {
		ref, err := url.Parse(st.Path)
		if err != nil {
			return nil, fmt.Errorf("flow step %s path %q: %w", st.Name, st.Path, err)
		}
		u := base.ResolveReference(ref)
		if st.Fanout > 1 {
			q := u.Query()
			q.Set(workload.FanoutParam, strconv.Itoa(st.Fanout))
			u.RawQuery = q.Encode()
		}
		urls[i] = u.String()
	}
	return urls, nil
}

// newUser gives a user its own keep-alive connection (a transport that
// keeps one idle connection) and empty histograms per step.
func (s *Swarm) newUser() *user {
	tr := &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}
	if s.o.Protocol == H2 {
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetUnencryptedHTTP2(true)
	}
	u := &user{client: &http.Client{Transport: tr}}
	for range s.urls {
		u.hists = append(u.hists, s.o.Resolution.NewHistogram())
		u.codes = append(u.codes, map[int]int64{})
	}
	return u
}

// loop is one user: the steps in order, think time after each, until the
// window closes or ctx ends. ready is called after its first request.
func (s *Swarm) loop(ctx context.Context, u *user, ready func()) {
	defer s.wg.Done()
	defer ready()
	defer u.client.CloseIdleConnections()
	think := time.NewTimer(0)
	defer think.Stop()
	for {
		for i := range s.urls {
			select {
			case <-s.stop:
				return
			case <-ctx.Done():
				return
			default:
			}
			s.step(ctx, u, i)
			ready()
			if s.o.Flow.Think <= 0 {
				continue
			}
			think.Reset(s.o.Flow.Think)
			select {
			case <-think.C:
			case <-s.stop:
				return
			case <-ctx.Done():
				return
			}
		}
	}
}

// step makes step i's request and records it when it started in the
// window.
func (s *Swarm) step(ctx context.Context, u *user, i int) {
	t0 := time.Now()
	code := s.fetch(ctx, u.client, s.urls[i])
	lat := time.Since(t0)
	w := s.window.Load()
	if w == nil || t0.Before(w.start) || !t0.Before(w.end) {
		return
	}
	u.hists[i].Record(lat.Seconds())
	u.codes[i][code]++
}

// fetch sends one request and reads the body to its end, so the
// connection is kept; it returns the status, or -1 for a socket error or
// timeout (as fortio counts them).
func (s *Swarm) fetch(ctx context.Context, c *http.Client, u string) int {
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	method, body := http.MethodGet, io.Reader(nil)
	if s.payload != nil {
		method, body = http.MethodPost, bytes.NewReader(s.payload)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return -1
	}
	for k, v := range s.o.Headers {
		req.Header.Set(k, v)
	}
	if s.payload != nil {
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	resp, err := c.Do(req)
	if err != nil {
		return -1
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return -1
	}
	return resp.StatusCode
}

// Measure opens the window for o.Duration, then closes it: every user
// finishes the request it is making and stops. It returns the window's
// Result, with one Result per step in Steps. A swarm is measured once.
func (s *Swarm) Measure(ctx context.Context) (*Result, error) {
	if s.used.Swap(true) {
		return nil, errors.New("flow: a swarm is measured once; spawn another")
	}
	start := time.Now()
	s.window.Store(&flowWindow{start: start, end: start.Add(s.o.Duration)})
	err := sleepUntil(ctx, start.Add(s.o.Duration))
	s.halt()
	s.wg.Wait()
	if err != nil {
		return nil, fmt.Errorf("flow against %s interrupted: %w", s.o.URL, err)
	}
	return s.result(start)
}

// result merges the users' histograms, losslessly, per step and for the
// whole window.
func (s *Swarm) result(start time.Time) (*Result, error) {
	o, d := s.o, s.o.Duration
	codes := map[int]int64{}
	var all []*fstats.HistogramData
	steps := make([]*Result, len(s.urls))
	for i, st := range o.Flow.Steps {
		sc := map[int]int64{}
		hs := make([]*fstats.HistogramData, len(s.users))
		for j, u := range s.users {
			hs[j] = u.hists[i].Export()
			for c, n := range u.codes[i] {
				sc[c] += n
				codes[c] += n
			}
		}
		h, err := stats.Merge(o.Resolution, hs...)
		if err != nil {
			return nil, fmt.Errorf("flow step %s: merge the users' histograms: %w", st.Name, err)
		}
		so := o
		so.URL, so.Flow, so.Labels = s.urls[i], nil, st.Name
		steps[i] = NewResult(so, start, d, float64(h.Count)/d.Seconds(), sc, h)
		steps[i].Step = st.Name
		all = append(all, h)
	}
	h, err := stats.Merge(o.Resolution, all...)
	if err != nil {
		return nil, fmt.Errorf("flow: merge the steps' histograms: %w", err)
	}
	res := NewResult(o, start, d, float64(h.Count)/d.Seconds(), codes, h)
	res.Steps = steps
	res.Invalid = append(res.Invalid, judgeSteps(res)...)
	return res, nil
}

// judgeSteps lists the steps of a flow's result that no request of the
// window reached: the flow was not measured as a whole.
func judgeSteps(r *Result) validity.Reasons {
	var why validity.Reasons
	for _, s := range r.Steps {
		if s.Requests == 0 {
			why.Add(validity.NoRequests, "step %s: no request started in the window; lengthen the window or shorten the think time", s.Step)
		}
	}
	return why
}

// Stop ends every user at once, cancelling requests in flight, and waits
// for them. It may be called more than once.
func (s *Swarm) Stop() {
	s.halt()
	s.cancel()
	s.wg.Wait()
}

// sleepUntil waits until t or until ctx ends.
func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waitCtx waits for wg or until ctx ends.
func waitCtx(ctx context.Context, wg *sync.WaitGroup) error {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
