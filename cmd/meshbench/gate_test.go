package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/cpuprofile"
	"github.com/meshbench/meshbench/framework/gate"
)

// resultsWith writes a results file whose gate verdict is decided from
// the fixture fixtures/gates/local.yaml on one CPU measurement.
func resultsWith(t *testing.T, ref, cand []float64) string {
	t.Helper()
	return resultsWhy(t, ref, cand, nil)
}

// resultsWhy is resultsWith, with where the CPU went.
func resultsWhy(t *testing.T, ref, cand []float64, why *cpuprofile.Report) string {
	t.Helper()
	return resultsFile(t, ref, cand, map[string]any{"why": why})
}

// gatePoint is the default gate's maximum-rate point, the one
// resultsFile decides; openPoint its open-loop point.
var (
	gatePoint = map[string]string{"benchmark": "BenchmarkUpgradeGate", "load": "max", "c": "8", "path": "one-hop", "loop": "closed"}
	openPoint = map[string]string{"benchmark": "BenchmarkUpgradeGate", "load": "open", "c": "8", "path": "one-hop", "loop": "open"}
)

// resultsFile writes a results file whose gate verdict is decided from
// the fixture fixtures/gates/local.yaml on the maximum-rate point
// (gatePoint), with the fields of extra beside it (why, partial, failed,
// gatePlan).
func resultsFile(t *testing.T, ref, cand []float64, extra map[string]any) string {
	t.Helper()
	g, err := gate.Load("../../fixtures/gates/local.yaml")
	require.NoError(t, err)
	l := gate.Labels(gatePoint)
	var ms []gate.Measurement
	for _, m := range g.Gated(l) {
		ms = append(ms, gate.Measurement{Scenario: l, Metric: m, Reference: ref, Candidate: cand})
	}
	v, err := g.DecideSequential(ms, gate.Sequential{Max: 30, Decisions: len(ms)})
	require.NoError(t, err)
	res := map[string]any{"gate": g.File, "gateVerdict": v,
		"settings": map[string]string{"sidecar": "caddy", "candidate": "caddy+access-log", "target": "local"}}
	maps.Copy(res, extra)
	data, err := json.Marshal(res)
	require.NoError(t, err)
	p := filepath.Join(t.TempDir(), "run.json")
	require.NoError(t, os.WriteFile(p, data, 0o644))
	return p
}

// verdict exits with the stored verdict's code, 0 pass, 1 fail and 3
// inconclusive, and writes its Markdown to stdout and the summary file.
func TestVerdictExitsWithTheOutcome(t *testing.T) {
	steady := []float64{100, 101, 99, 100, 100.5, 99.5}
	for _, tc := range []struct {
		name string
		cand []float64
		code int
		word string
	}{
		{"pass", []float64{100, 101, 99, 100, 100.5, 99.5}, 0, "**PASS** (exit code 0)"},
		{"fail", []float64{150, 152, 149, 151, 150, 150}, 1, "**FAIL** (exit code 1)"},
		{"inconclusive", []float64{100, 130, 95, 125, 101, 128}, 3, "**INCONCLUSIVE** (exit code 3)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := resultsWith(t, steady, tc.cand)
			summary := filepath.Join(t.TempDir(), "summary.md")
			var out, errb bytes.Buffer
			err := run(context.Background(), []string{"verdict", "-summary", summary, path}, &out, &errb)
			assert.Equal(t, tc.code, exitCode(err, &errb))
			assert.Contains(t, out.String(), "## meshbench upgrade gate: caddy+access-log against caddy\n\n"+tc.word)
			assert.Contains(t, out.String(), "| scenario | metric | reference | candidate | candidate/reference | limit | pairs | outcome |")
			written, rerr := os.ReadFile(summary)
			require.NoError(t, rerr)
			assert.Equal(t, out.String(), string(written), "the summary file holds the same Markdown")
		})
	}
}

// The shell sees the verdict's exit code through `go tool meshbench`
// (go.mod declares the command a tool); `go run` would turn every
// non-zero exit into 1, which is why the README and the workflows use
// `go tool`.
func TestGoToolExitsWithTheVerdict(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command with the go tool; run without -short")
	}
	steady := []float64{100, 101, 99, 100, 100.5, 99.5}
	for _, tc := range []struct {
		cand []float64
		code int
	}{
		{[]float64{150, 152, 149, 151, 150, 150}, 1},
		{[]float64{100, 130, 95, 125, 101, 128}, 3},
	} {
		cmd := exec.Command("go", "tool", "meshbench", "verdict", resultsWith(t, steady, tc.cand))
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "%s", out)
		assert.Equal(t, tc.code, ee.ExitCode(), "%s", out)
	}
	cmd := exec.Command("go", "tool", "meshbench", "verdict", filepath.Join(t.TempDir(), "missing.json"))
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "%s", out)
	assert.Equal(t, 2, ee.ExitCode(), "%s", out)
	goToolGateExits(t)
}

// goToolGateExits: `go tool meshbench gate` exits with the verdict of a
// whole run, and 2 for a partial one or one whose points did not all run.
// The go test it starts is a stand-in (fakeGo) that writes the results
// file a gate run would and exits as go test would.
func goToolGateExits(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cand  []float64
		extra map[string]any
		rc    int
		code  int
	}{
		{"pass", steadyPairs, map[string]any{"gatePlan": []map[string]string{gatePoint}}, 0, 0},
		{"fail", failPairs, nil, 1, 1},
		{"inconclusive", mixedPairs, nil, 1, 3},
		{"partial pass", steadyPairs, map[string]any{"partial": "the deadline"}, 1, 2},
		{"only load=max ran", steadyPairs, map[string]any{"gatePlan": []map[string]string{gatePoint, openPoint}}, 0, 2},
	} {
		fake := fakeGo(t, resultsFile(t, steadyPairs, tc.cand, tc.extra), tc.rc)
		cmd := exec.Command("go", "tool", "meshbench", "gate", "-go", fake, "-results", t.TempDir(), "-candidate", "caddy+access-log")
		cmd.Env = append(os.Environ(), "GITHUB_STEP_SUMMARY=")
		out, err := cmd.CombinedOutput()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else {
			require.NoError(t, err, "%s", out)
		}
		assert.Equal(t, tc.code, code, "gate, %s: %s", tc.name, out)
	}
}

// verdict writes where the CPU went after the verdict, as the run stored
// it: the differential table, or why no profile was taken.
func TestVerdictSaysWhereTheCPUWent(t *testing.T) {
	fail := []float64{150, 152, 149, 151, 150, 150}
	steady := []float64{100, 101, 99, 100, 100.5, 99.5}
	why := &cpuprofile.Report{Points: []cpuprofile.Point{{Scenario: "c=8", Metric: "sidecar CPU per 1k requests", Seconds: 3,
		Reference:  cpuprofile.Arm{Spec: "caddy", File: "r.reference.p.pprof", Sidecars: 2, Samples: 300},
		Candidate:  cpuprofile.Arm{Spec: "caddy+access-log", File: "r.candidate.p.pprof", Sidecars: 2, Samples: 400},
		Cumulative: []cpuprofile.Row{{Function: "caddyhttp.(*Server).logRequest", Candidate: 0.15, Difference: 0.15}}}}}
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"verdict", resultsWhy(t, steady, fail, why)}, &out, &errb)
	assert.Equal(t, 1, exitCode(err, &errb))
	var md bytes.Buffer
	require.NoError(t, why.Markdown(&md))
	assert.Contains(t, out.String(), "\n### Where the CPU went\n\nc=8 failed on sidecar CPU per 1k requests.")
	assert.True(t, bytes.HasSuffix(out.Bytes(), md.Bytes()), "the table ends the summary:\n%s", out.String())
	assert.Contains(t, out.String(), "| `caddyhttp.(*Server).logRequest` | 0.0 % | 15.0 % | +15.0 pp |\n")

	out.Reset()
	none := &cpuprofile.Report{None: "no CPU profile: nginx is not a Go program with a pprof endpoint"}
	err = run(context.Background(), []string{"verdict", resultsWhy(t, steady, fail, none)}, &out, &errb)
	assert.Equal(t, 1, exitCode(err, &errb))
	assert.True(t, bytes.HasSuffix(out.Bytes(), []byte("\n### Where the CPU went\n\nno CPU profile: nginx is not a Go program with a pprof endpoint.\n")), out.String())
}

// A results file without a verdict is exit code 2, naming the file and why.
func TestVerdictWithoutAVerdictIsExitTwo(t *testing.T) {
	p := filepath.Join(t.TempDir(), "run.json")
	require.NoError(t, os.WriteFile(p, []byte(`{"gate": "fixtures/gates/local.yaml", "records": []}`), 0o644))
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"verdict", p}, &out, &errb)
	assert.EqualError(t, err, "verdict: "+p+": no gate verdict: the gate fixtures/gates/local.yaml reached no verdict: the run failed before it decided, or the stored reference was not comparable; see its log")
	assert.Equal(t, 2, exitCode(err, &errb))
	var e *exitError
	assert.True(t, errors.As(err, &e))
	assert.Empty(t, out.String())
}

// gate refuses, before running anything, a call with nothing to gate.
func TestGateWithoutACandidateIsExitTwo(t *testing.T) {
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"gate", "-results", t.TempDir(), "-count", "3"}, &out, &errb)
	assert.EqualError(t, err, "gate: nothing to gate: give -candidate (e.g. -candidate caddy+access-log, -sidecar caddy@v2.10.2 -candidate caddy@v2.11.9) or -reference results/<run>.json")
	assert.Equal(t, 2, exitCode(err, &errb))
}

// gate refuses a bad -gate-mode, naming the flag, before go test builds
// or runs anything; a good one is passed through.
func TestGateRefusesABadModeFirst(t *testing.T) {
	for _, args := range [][]string{{"-gate-mode", "trio"}, {"-gate-mode=trio"}, {"--gate-mode=trio"}} {
		var out, errb bytes.Buffer
		err := run(context.Background(), append([]string{"gate", "-results", t.TempDir(), "-candidate", "caddy"}, args...), &out, &errb)
		assert.EqualError(t, err, "gate: -gate-mode=trio: want sequential, duet or open-duet", "%v", args)
		assert.Equal(t, 2, exitCode(err, &errb))
		assert.NotContains(t, errb.String(), "meshbench gate: go test", "no go test was started")
	}
	assert.NoError(t, checkPassedMode([]string{"-candidate", "caddy", "-gate-mode", "duet", "-count", "3"}))
	assert.NoError(t, checkPassedMode([]string{"-gate-mode=sequential"}))
}

func TestSplitGateArgs(t *testing.T) {
	own, pass := splitGateArgs([]string{"-results", "out", "-candidate", "caddy+access-log", "-summary=s.md", "-count", "3", "--", "-timeout", "5m"})
	assert.Equal(t, []string{"-results", "out", "-summary=s.md"}, own)
	assert.Equal(t, []string{"-candidate", "caddy+access-log", "-count", "3", "-timeout", "5m"}, pass)
}

func TestCaddyPin(t *testing.T) {
	for _, tc := range []struct {
		name, gomod, want, err string
	}{
		{"block", "module m\n\nrequire (\n\tgithub.com/caddyserver/caddy/v2 v2.11.9 // indirect\n\tgolang.org/x/mod v0.1.0\n)\n", "v2.11.9", ""},
		{"line", "module m\nrequire github.com/caddyserver/caddy/v2 v2.10.2\n", "v2.10.2", ""},
		{"missing", "module m\nrequire golang.org/x/mod v0.1.0\n", "", "no require of github.com/caddyserver/caddy/v2: the local sidecar is not pinned here"},
		{"replaced", "module m\nrequire github.com/caddyserver/caddy/v2 v2.10.2\nreplace (\n\tgithub.com/caddyserver/caddy/v2 => ../caddy\n)\n", "",
			"line 4: github.com/caddyserver/caddy/v2 is replaced, so its version does not say what is built; gate with -sidecar and -candidate by hand"},
		{"twice", "module m\nrequire github.com/caddyserver/caddy/v2 v2.10.2\nrequire github.com/caddyserver/caddy/v2 v2.11.9\n", "",
			"github.com/caddyserver/caddy/v2 is required 2 times (v2.10.2, v2.11.9)"},
		{"not a version", "module m\nrequire github.com/caddyserver/caddy/v2 latest\n", "", `line 2: github.com/caddyserver/caddy/v2 "latest" is not a version`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := caddyPin([]byte(tc.gomod))
			if tc.err != "" {
				assert.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// pin reads this module's own go.mod: the Caddy the local target builds.
func TestPinOfThisModule(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"pin", "../../go.mod"}, &out, &out))
	assert.Regexp(t, `^caddy@v2\.\d+\.\d+\n$`, out.String())
}

// fakeGo writes a go command that stands for `go test` of a gate run
// (meshbench gate -go): it copies results (a results file) into the
// directory after -results and exits with rc. It returns its path. (A
// stand-in put first on PATH would not do: go tool puts GOROOT/bin first
// on the PATH of the command it runs.)
func fakeGo(t *testing.T, results string, rc int) string {
	t.Helper()
	dir := t.TempDir()
	script := fmt.Sprintf("#!/bin/sh\nwhile [ $# -gt 0 ]; do [ \"$1\" = -results ] && dir=$2; shift; done\ncp %q \"$dir/run.json\"\nexit %d\n", results, rc)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go"), []byte(script), 0o755))
	return filepath.Join(dir, "go")
}

var (
	steadyPairs = []float64{100, 101, 99, 100, 100.5, 99.5}
	failPairs   = []float64{150, 152, 149, 151, 150, 150}
	mixedPairs  = []float64{100, 130, 95, 125, 101, 128}
)

// A verdict counts only from a whole run: one that stopped early (partial),
// failed apart from the gate, left a planned point undecided, or whose go
// test failed under a pass exits 2, never 0, whatever it stored.
func TestGateExitsTwoUnlessTheRunIsWhole(t *testing.T) {
	both := []map[string]string{gatePoint, openPoint}
	for _, tc := range []struct {
		name  string
		cand  []float64
		extra map[string]any
		rc    int
		code  int
		err   string
	}{
		{"whole pass", steadyPairs, map[string]any{"gatePlan": both[:1]}, 0, 0, ""},
		{"whole fail", failPairs, map[string]any{"gatePlan": both[:1]}, 1, 1, "gate fail: "},
		{"whole inconclusive", mixedPairs, nil, 1, 3, "gate inconclusive: "},
		{"partial", steadyPairs, map[string]any{"partial": "interrupted (interrupt)"}, 1, 2,
			"gate: no verdict from an incomplete run (its stored verdict, PASS, does not count): %s: the run is partial: interrupted (interrupt); " +
				"go test failed (exit status 1) though the stored verdict is a pass: the run itself failed; see its log"},
		{"failed", failPairs, map[string]any{"failed": "a benchmark stopped on a fatal error (its FAIL line is in the log)"}, 1, 2,
			"gate: no verdict from an incomplete run (its stored verdict, FAIL, does not count): %s: the run failed: a benchmark stopped on a fatal error (its FAIL line is in the log)"},
		{"only load=max ran", steadyPairs, map[string]any{"gatePlan": both}, 0, 2,
			"gate: no verdict from an incomplete run (its stored verdict, PASS, does not count): %s: 1 of the 2 points the gate planned have no decision: benchmark=BenchmarkUpgradeGate/c=8/load=open/loop=open/path=one-hop"},
		{"invalid runs left out of a pass", steadyPairs, map[string]any{"invalid": "not a valid result: invalid runs in c=8 (1)"}, 1, 0, ""},
		{"go test failed under a pass", steadyPairs, nil, 1, 2,
			"gate: no verdict from an incomplete run (its stored verdict, PASS, does not count): %s: go test failed (exit status 1) though the stored verdict is a pass: the run itself failed; see its log"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			goCmd := fakeGo(t, resultsFile(t, steadyPairs, tc.cand, tc.extra), tc.rc)
			var out, errb bytes.Buffer
			err := run(context.Background(), []string{"gate", "-go", goCmd, "-results", dir, "-summary", filepath.Join(dir, "s.md"), "-candidate", "caddy+access-log"}, &out, &errb)
			assert.Equal(t, tc.code, exitCode(err, &errb), "%s", errb.String())
			switch {
			case tc.err == "":
				assert.NoError(t, err)
			case strings.Contains(tc.err, "%s"):
				assert.EqualError(t, err, fmt.Sprintf(tc.err, filepath.Join(dir, "run.json")))
			default:
				assert.EqualError(t, err, tc.err+filepath.Join(dir, "run.json"))
			}
			assert.Contains(t, out.String(), "## meshbench upgrade gate: caddy+access-log against caddy", "the verdict is shown, counted or not")
		})
	}
}

// make test runs TestGoToolExitsWithTheVerdict: its package is among the
// ones test-measure runs, and neither half of make test passes -short,
// which would skip it.
func TestMakeTestRunsTheGoToolTest(t *testing.T) {
	data, err := os.ReadFile("../../Makefile")
	require.NoError(t, err)
	mk := string(data)
	measuring, _, ok := strings.Cut(mk[strings.Index(mk, "\nMEASURING ?="):], "\n\n")
	require.True(t, ok, "the MEASURING list")
	assert.Contains(t, measuring, "./cmd/meshbench")
	for _, target := range []string{"\ntest-unit:", "\ntest-measure:"} {
		i := strings.Index(mk, target)
		require.GreaterOrEqual(t, i, 0, target)
		recipe, _, _ := strings.Cut(mk[i:], "\n\n")
		assert.NotContains(t, recipe, "-short", "%s would skip the go tool test", target)
	}
	assert.Contains(t, mk, "\ntest: test-unit test-measure\n")
}

// The summary's title names what was compared, read from the results
// file: the sidecars of a local -candidate gate, the sidecar images of a
// kind one, and for -reference this run's mesh release and the stored
// run (from the 1.30 → 1.31 proxyless gate of 2026-12-03, whose summary
// said "against caddy").
func TestGateTitle(t *testing.T) {
	for _, tc := range []struct{ json, want string }{
		{`{"settings": {"sidecar": "caddy", "candidate": "caddy+access-log", "target": "local"}}`, "caddy+access-log against caddy"},
		{`{"settings": {"sidecar": "caddy", "candidate": "mb/nginx:2", "target": "kind", "mesh": "sidecar", "nginxImage": "mb/nginx:1"}}`, "mb/nginx:2 against mb/nginx:1"},
		{`{"settings": {"sidecar": "caddy", "target": "kind", "mesh": "istio-proxyless", "meshVersion": "1.31-dev.eed52ebb66ad"},
		  "reference": {"file": "/tmp/r/reference/20261203T182654Z-kind.json", "runID": "20261203T182654Z-kind"}}`,
			"istio-proxyless 1.31-dev.eed52ebb66ad against the stored run 20261203T182654Z-kind"},
		// the Istio canary of 2026-12-06, whose summary said "rev=mb131 against nginx:1.27"
		{`{"settings": {"sidecar": "caddy", "candidate": "rev=mb131", "target": "kind", "mesh": "istio-proxyless", "nginxImage": "nginx:1.27",
		  "meshRevision": "mb130", "meshVersion": "1.30-dev.9739e10eb9d7", "candidateMeshVersion": "1.31-dev.eed52ebb66ad"}}`,
			"istio-proxyless rev=mb131 1.31-dev.eed52ebb66ad against rev=mb130 1.30-dev.9739e10eb9d7"},
		{`{"settings": {"candidate": "rev=mb131c", "target": "kind", "mesh": "istio-proxyless", "nginxImage": "nginx:1.27", "meshRevision": "mb131"}}`,
			"istio-proxyless rev=mb131c against rev=mb131"},
		{`{"settings": {"candidate": "rev=canary", "target": "remote", "mesh": "istio", "nginxImage": "nginx:1.27"}}`,
			"istio rev=canary against the default injector"},
	} {
		var r gateResults
		require.NoError(t, json.Unmarshal([]byte(tc.json), &r))
		assert.Equal(t, tc.want, r.title())
	}
}
