package local_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/arms"
	"github.com/meshbench/meshbench/framework/cpuprofile"
	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/testbed/local"
	"github.com/meshbench/meshbench/framework/validity"
)

// TestLocalTargetLifecycle starts both arms as real processes, runs a short
// load over each path of each arm, and checks that the requests took the
// intended route, CPU was measured for every role, and nothing survives.
func TestLocalTargetLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes and Caddy; run without -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tg, err := local.New(ctx, local.Options{Logf: t.Logf})
	require.NoError(t, err)
	pids := tg.PIDs()
	require.Len(t, pids, 7, "baseline backend+frontend, meshed backend+frontend, 3 sidecars")
	defer func() {
		require.NoError(t, tg.Close(ctx))
		for _, pid := range pids {
			assert.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "pid %d survived Close", pid)
		}
	}()
	for _, path := range []testbed.Path{testbed.OneHop, testbed.TwoHop} {
		for _, arm := range testbed.Arms {
			run, err := tg.Run(ctx, testbed.Spec{Arm: arm, Workload: testbed.Workload{Path: path}, Window: testbed.Window{Concurrency: 4, Duration: time.Second, Warmup: 200 * time.Millisecond}})
			require.NoError(t, err)
			var edges bytes.Buffer
			testbed.PrintEdges(&edges, run.Edges)
			t.Logf("%s %s: %.0f req/s, p50 %.3fms, invalid=%v warnings=%v\n%s", path, arm, run.Load.AchievedQPS,
				run.Load.Percentile(50)*1e3, run.Invalid, run.Warnings, edges.String())
			assert.Empty(t, run.Invalid)
			assert.Zero(t, run.Load.Errors)
			hops := testbed.Hops(path)
			require.Len(t, run.Edges, len(hops))
			for i, e := range run.Edges {
				// edges come frontend first, then backend: the path's order.
				assert.Equal(t, hops[i].Src, e.Src)
				assert.Equal(t, hops[i].Dst, e.Dst)
				assert.Equal(t, arm == testbed.Meshed, e.Secured, "%s → %s secured", e.Src, e.Dst)
				assert.GreaterOrEqual(t, e.Requests, run.Load.Requests)
				assert.Equal(t, "HTTP/1.1", e.Proto, "%s → %s", e.Src, e.Dst)
			}
			roles := map[measure.Role]bool{}
			for _, u := range run.Resources.Usage {
				roles[u.Role] = true
				if u.Role != measure.RoleLoadgen {
					assert.Greater(t, u.CPUSeconds, 0.0, "%s used no CPU", u.Name)
				}
			}
			assert.True(t, roles[measure.RoleLoadgen] && roles[measure.RoleApp], "roles %v", roles)
			assert.Equal(t, arm == testbed.Meshed, roles[measure.RoleSidecar], "sidecars measured only in the meshed arm")
		}
	}
}

// TestOtherSidecars runs a short meshed load over both paths with each
// proxy that is installed, and checks the mTLS path proof.
func TestOtherSidecars(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes; run without -short")
	}
	for _, sc := range []struct{ name, install string }{
		{"nginx", "apt-get install nginx-light"}, {"haproxy", "apt-get install haproxy"},
		{"envoy", "https://www.envoyproxy.io/docs/envoy/latest/start/install; Debian has no package"},
	} {
		t.Run(sc.name, func(t *testing.T) {
			if _, err := exec.LookPath(sc.name); err != nil {
				t.Skipf("%s is not on PATH (%s)", sc.name, sc.install)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			tg, err := local.New(ctx, local.Options{Sidecar: arms.Spec{Proxy: sc.name}, Logf: t.Logf})
			require.NoError(t, err)
			defer func() { require.NoError(t, tg.Close(ctx)) }()
			assert.Equal(t, "sidecar/"+sc.name, tg.Environment().Mesh.Name)
			assert.NotEqual(t, "unknown", tg.Environment().Mesh.Version)
			for _, path := range []testbed.Path{testbed.OneHop, testbed.TwoHop} {
				run, err := tg.Run(ctx, testbed.Spec{Arm: testbed.Meshed, Workload: testbed.Workload{Path: path}, Window: testbed.Window{Concurrency: 2, Duration: 500 * time.Millisecond, Warmup: 100 * time.Millisecond}})
				require.NoError(t, err)
				assert.Empty(t, run.Invalid, "%s %s", sc.name, path)
				sidecar, ok := run.Resources.Role(measure.RoleSidecar)
				assert.True(t, ok && sidecar.MilliCores > 0, "sidecar CPU measured, worker processes included")
			}
		})
	}
}

// TestLocalProtocols runs h2 and gRPC end to end over both paths of both
// arms: the loadgen's calls come back 200 (gRPC OK), and the path proof is
// secured on every hop in the meshed arm and plain in the baseline, so the
// source travelled as an HTTP/2 header (gRPC metadata) through the
// sidecars and the h2c frontend.
func TestLocalProtocols(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes and Caddy; run without -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tg, err := local.New(ctx, local.Options{Protocol: load.GRPC, Logf: t.Logf})
	require.NoError(t, err)
	defer func() { require.NoError(t, tg.Close(ctx)) }()
	for _, proto := range []load.Protocol{load.H2, load.GRPC} {
		for _, path := range []testbed.Path{testbed.OneHop, testbed.TwoHop} {
			for _, arm := range testbed.Arms {
				w := testbed.Workload{Path: path, Protocol: proto, ResponseSize: 512}
				run, err := tg.Run(ctx, testbed.Spec{Arm: arm, Workload: w, Window: testbed.Window{Concurrency: 2, Duration: 500 * time.Millisecond, Warmup: 100 * time.Millisecond}})
				require.NoError(t, err)
				var edges bytes.Buffer
				testbed.PrintEdges(&edges, run.Edges)
				t.Logf("%s %s %s: %.0f req/s, codes %s, invalid=%v\n%s", proto, path, arm, run.Load.AchievedQPS,
					load.FormatCodes(run.Load.Codes), run.Invalid, edges.String())
				assert.Empty(t, run.Invalid)
				assert.Equal(t, map[int]int64{200: run.Load.Requests}, run.Load.Codes)
				hops := testbed.Hops(path)
				require.Len(t, run.Edges, len(hops))
				for i, e := range run.Edges {
					assert.Equal(t, hops[i].Src, e.Src)
					assert.Equal(t, hops[i].Dst, e.Dst)
					assert.Equal(t, arm == testbed.Meshed, e.Secured, "%s %s: %s → %s secured", proto, arm, e.Src, e.Dst)
					assert.GreaterOrEqual(t, e.Requests, run.Load.Requests)
					assert.Equal(t, "HTTP/2.0", e.Proto, "%s %s: %s → %s: HTTP/2 on every hop", proto, arm, e.Src, e.Dst)
				}
			}
		}
	}
	// Out of the mesh, gRPC enters the frontend's sidecar in h2c, plain,
	// and goes on over mTLS.
	w := testbed.Workload{Path: testbed.TwoHop, Protocol: load.GRPC, Placement: testbed.OutOfMesh}
	run, err := tg.Run(ctx, testbed.Spec{Arm: testbed.Meshed, Workload: w, Window: testbed.Window{Concurrency: 2, Duration: 300 * time.Millisecond, Warmup: 100 * time.Millisecond}})
	require.NoError(t, err)
	assert.Empty(t, run.Invalid)
	require.Len(t, run.Edges, 2)
	assert.Equal(t, []bool{false, true}, []bool{run.Edges[0].Secured, run.Edges[1].Secured})
	assert.Equal(t, []string{"HTTP/2.0", "HTTP/2.0"}, []string{run.Edges[0].Proto, run.Edges[1].Proto})
}

// TestAccessLogVariant: a candidate caddy+access-log writes one JSON line
// to its access log for every request each of its sidecars serves (the
// loadgen's outbound, the backend's inbound), and the reference none.
func TestAccessLogVariant(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes; run without -short")
	}
	ctx := context.Background()
	tg, err := local.New(ctx, local.Options{Candidate: &arms.Spec{Proxy: "caddy", Variants: []arms.Variant{arms.AccessLog}}, Logf: t.Logf})
	require.NoError(t, err)
	defer func() { require.NoError(t, tg.Close(ctx)) }()
	assert.Contains(t, tg.Environment().Mesh.Config["arm.candidate"], "an access log line per request")
	logs := func(arm testbed.Arm) map[string][][]byte {
		files, err := filepath.Glob(filepath.Join(tg.Dir(), string(arm)+"-*-access.log"))
		require.NoError(t, err)
		out := map[string][][]byte{}
		for _, f := range files {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			out[strings.Split(filepath.Base(f), "-")[1]] = bytes.Split(bytes.TrimSpace(data), []byte("\n"))
		}
		return out
	}
	assert.Empty(t, logs(testbed.Reference))
	before := logs(testbed.Candidate) // the set-up's path probes
	require.Len(t, before, 3, "the loadgen's, the backend's and the frontend's sidecars")
	o := testbed.Window{Concurrency: 2, Duration: 300 * time.Millisecond, Warmup: -1}
	run, err := tg.Run(ctx, testbed.Spec{Arm: testbed.Candidate, Workload: testbed.Workload{Path: testbed.OneHop}, Window: o})
	require.NoError(t, err)
	require.Empty(t, run.Invalid)
	after := logs(testbed.Candidate)
	// The window's requests, and one per connection before it; none
	// through the frontend on one hop.
	want := map[string]int{"loadgen": int(run.Load.Requests) + o.Concurrency, "backend": int(run.Load.Requests) + o.Concurrency, "frontend": 0}
	for name, n := range want {
		assert.Equal(t, n, len(after[name])-len(before[name]), name)
	}
	var entry struct {
		Logger, Msg string
		Status      int
	}
	require.NoError(t, json.Unmarshal(after["backend"][len(after["backend"])-1], &entry))
	assert.Equal(t, "http.log.access handled request 200", fmt.Sprint(entry.Logger, " ", entry.Msg, " ", entry.Status))
}

// TestBusyMachineInvalidatesRun: busy loops outside the run, over a tenth
// of the machine, make the run invalid (busy-machine), naming how much.
func TestBusyMachineInvalidatesRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes; run without -short")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tg, err := local.New(ctx, local.Options{Logf: t.Logf})
	require.NoError(t, err)
	defer func() { require.NoError(t, tg.Close(context.Background())) }()
	hogs := int(math.Ceil(0.3 * float64(runtime.NumCPU())))
	for range hogs {
		hog := exec.CommandContext(ctx, "sh", "-c", "while :; do :; done")
		require.NoError(t, hog.Start())
		defer func() { cancel(); _ = hog.Wait() }()
	}
	o := testbed.Window{Concurrency: 1, QPS: 100, Duration: 1200 * time.Millisecond, Warmup: -1}
	run, err := tg.Run(ctx, testbed.Spec{Arm: testbed.Baseline, Workload: testbed.Workload{Path: testbed.OneHop}, Window: o})
	require.NoError(t, err)
	assert.Regexp(t, `^busy machine: processes outside the run used \d+m of \d+ cores during the window \(the run's own \d+m\), over 10 % of the machine`,
		run.Invalid.Of(validity.BusyMachine).String(), "%d busy loops", hogs)
}

// TestCPUProfileOfCaddySidecars: in an upgrade gate a run that asks for
// CPU profiles gets one per sidecar on the path, taken over the window
// through Caddy's admin socket, in which Caddy's HTTP server handles the
// requests; a run that does not ask gets none. The differential table of
// the two arms' merged profiles points at the candidate's access log.
func TestCPUProfileOfCaddySidecars(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes; run without -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tg, err := local.New(ctx, local.Options{Candidate: &arms.Spec{Proxy: "caddy", Variants: []arms.Variant{arms.AccessLog}}, Logf: t.Logf})
	require.NoError(t, err)
	defer func() { require.NoError(t, tg.Close(ctx)) }()
	require.NoError(t, tg.CanProfile())
	o := testbed.Window{Concurrency: 4, Duration: 2 * time.Second, Warmup: 200 * time.Millisecond}
	plain, err := tg.Run(ctx, testbed.Spec{Arm: testbed.Candidate, Workload: testbed.Workload{Path: testbed.OneHop}, Window: o})
	require.NoError(t, err)
	assert.Empty(t, plain.CPUProfiles)
	merged := map[testbed.Arm]*profile.Profile{}
	requests := map[testbed.Arm]int64{}
	for _, arm := range []testbed.Arm{testbed.Reference, testbed.Candidate} {
		run, err := tg.Run(ctx, testbed.Spec{Arm: arm, Workload: testbed.Workload{Path: testbed.OneHop}, Window: o, CPUProfile: true})
		require.NoError(t, err)
		assert.Zero(t, run.Load.Errors)
		requests[arm] = run.Load.Requests
		var names []string
		var ps []*profile.Profile
		for _, p := range run.CPUProfiles {
			names = append(names, p.Process)
			prof, err := cpuprofile.Parse(p.Data)
			require.NoError(t, err, p.Process)
			assert.InDelta(t, 2*time.Second, time.Duration(prof.DurationNanos), float64(300*time.Millisecond), p.Process)
			ps = append(ps, prof)
		}
		assert.ElementsMatch(t, []string{string(arm) + "/loadgen-sidecar", string(arm) + "/backend-sidecar"}, names)
		merged[arm], err = cpuprofile.Merge(ps)
		require.NoError(t, err)
		const server = "github.com/caddyserver/caddy/v2/modules/caddyhttp.(*Server).ServeHTTP"
		assert.Greater(t, cpuprofile.Shares(merged[arm], cpuprofile.Cumulative)[server], 0.1, "%s: Caddy's HTTP server handles the requests", arm)
	}
	ref, cand := merged[testbed.Reference], merged[testbed.Candidate]
	rows := cpuprofile.DiffPerRequest(ref, cand, requests[testbed.Reference], requests[testbed.Candidate], cpuprofile.Cumulative, cpuprofile.TopN)
	var md bytes.Buffer
	require.NoError(t, (&cpuprofile.Report{Points: []cpuprofile.Point{{Scenario: "one-hop c=4", Metric: "(not gated)", Seconds: 2,
		Reference:  cpuprofile.Arm{Spec: "caddy", Requests: requests[testbed.Reference]},
		Candidate:  cpuprofile.Arm{Spec: "caddy+access-log", Requests: requests[testbed.Candidate]},
		Flat:       cpuprofile.DiffPerRequest(ref, cand, requests[testbed.Reference], requests[testbed.Candidate], cpuprofile.Flat, cpuprofile.TopN),
		Cumulative: rows}}}).Markdown(&md))
	t.Log(md.String())
	// The access log is what the candidate runs and the reference does
	// not. Its rank among the top rows moves with a 2 s profile's few
	// hundred samples (the proxy code above it grows with it), so the test
	// reads its row from the whole diff: absent from the reference, a few
	// percent of the reference's CPU per request in the candidate.
	all := cpuprofile.DiffPerRequest(ref, cand, requests[testbed.Reference], requests[testbed.Candidate], cpuprofile.Cumulative, math.MaxInt)
	i := slices.IndexFunc(all, func(r cpuprofile.Row) bool { return strings.HasSuffix(r.Function, "caddyhttp.(*Server).logRequest") })
	require.GreaterOrEqual(t, i, 0, "Caddy's access logging ran in the candidate's sidecars")
	assert.Less(t, all[i].Reference, 0.005, "and not in the reference's")
	assert.Greater(t, all[i].Candidate, 0.03, "a share of CPU per request a table can show")
	assert.InDelta(t, all[i].Candidate-all[i].Reference, all[i].Difference, 1e-9)
}

// TestFreshRunStartsTheArmAfresh: a run with Spec.Fresh (-gate-fresh)
// starts the arm's sidecars and app again before its window, so each
// window measures new processes; the other arm's stay, the window is
// valid with its path proof, and no restart is counted.
func TestFreshRunStartsTheArmAfresh(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes; run without -short")
	}
	ctx := context.Background()
	tg, err := local.New(ctx, local.Options{Candidate: &arms.Spec{Proxy: "caddy"}, Logf: t.Logf})
	require.NoError(t, err)
	defer func() { require.NoError(t, tg.Close(ctx)) }()
	pids := func(run *testbed.Run) map[string]int {
		out := map[string]int{}
		for _, u := range run.Resources.Usage {
			if u.Role != measure.RoleLoadgen {
				out[u.Name] = u.PID
			}
		}
		return out
	}
	o := testbed.Window{Concurrency: 2, Duration: 300 * time.Millisecond, Warmup: 50 * time.Millisecond}
	window := func(arm testbed.Arm, fresh bool) map[string]int {
		run, err := tg.Run(ctx, testbed.Spec{Arm: arm, Workload: testbed.Workload{Path: testbed.OneHop}, Window: o, Fresh: fresh})
		require.NoError(t, err)
		assert.Empty(t, run.Invalid)
		require.Len(t, run.Edges, 1)
		assert.True(t, run.Edges[0].Secured)
		assert.GreaterOrEqual(t, run.Edges[0].Requests, run.Load.Requests)
		return pids(run)
	}
	ref, cand := window(testbed.Reference, false), window(testbed.Candidate, true)
	require.Len(t, cand, 3, "the loadgen's and the backend's sidecars, the backend")
	for range 2 {
		again := window(testbed.Candidate, true)
		for name, pid := range cand {
			assert.NotEqual(t, pid, again[name], "%s started afresh", name)
		}
		cand = again
		assert.Equal(t, ref, window(testbed.Reference, false), "the reference's processes stay")
	}
	assert.Empty(t, tg.Restarts(), "a fresh start is not a restart")
}
