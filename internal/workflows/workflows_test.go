package workflows

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// root is the module root, from this package's directory.
const root = "../.."

// workflow is what the tests read of a workflow file: its steps.
type workflow struct {
	Jobs map[string]struct {
		Steps []struct {
			Name string `yaml:"name"`
			Uses string `yaml:"uses"`
			Run  string `yaml:"run"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

// Every run: step of every workflow is one line: shell longer than a line
// lives in a script of hack/, which lint checks and these tests run.
func TestRunStepsAreOneLine(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(root, ".github/workflows/*.yml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	steps := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		var w workflow
		require.NoError(t, yaml.Unmarshal(data, &w), f)
		require.NotEmpty(t, w.Jobs, f)
		for job, j := range w.Jobs {
			for _, s := range j.Steps {
				if s.Run == "" {
					continue
				}
				steps++
				assert.NotContains(t, strings.TrimSpace(s.Run), "\n", "%s: job %s: step %q: move its shell into a script under hack/", filepath.Base(f), job, s.Name)
				assert.NotContains(t, s.Run, "${{ github.event.inputs", "%s: job %s: step %q: an input reaches a script through env, never pasted into the shell", filepath.Base(f), job, s.Name)
			}
		}
	}
	assert.Positive(t, steps)
}

// need skips the test without the programs the scripts run.
func need(t *testing.T, programs ...string) {
	t.Helper()
	for _, p := range programs {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is not on PATH: the workflows' scripts need it", p)
		}
	}
}

// meshbenchBin builds this tree's meshbench once per test binary: the
// scripts take it as $MESHBENCH instead of compiling it (go tool) each time.
var meshbenchBin string

func meshbench(t *testing.T) string {
	t.Helper()
	need(t, "go")
	if meshbenchBin == "" {
		dir, err := os.MkdirTemp("", "workflows-meshbench")
		require.NoError(t, err)
		bin := filepath.Join(dir, "meshbench")
		cmd := exec.Command("go", "build", "-o", bin, "./cmd/meshbench")
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		meshbenchBin = bin
	}
	return meshbenchBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if meshbenchBin != "" {
		os.RemoveAll(filepath.Dir(meshbenchBin))
	}
	os.Exit(code)
}

// result is one script run: its exit code, its output and what it wrote
// to the job summary and the step outputs.
type result struct {
	code            int
	out             string
	summary, output string
}

// script runs a script with bash, in dir, with env added to a clean
// environment of GitHub's files (summary, outputs, runner temp).
func script(t *testing.T, dir, path string, env []string, args ...string) result {
	t.Helper()
	need(t, "bash")
	tmp := t.TempDir()
	summary, output := filepath.Join(tmp, "summary.md"), filepath.Join(tmp, "output")
	cmd := exec.Command("bash", append([]string{path}, args...)...)
	cmd.Dir = dir
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"GITHUB_STEP_SUMMARY=" + summary, "GITHUB_OUTPUT=" + output, "RUNNER_TEMP=" + tmp,
	}, env...)
	for _, v := range []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOFLAGS", "GOPROXY", "GOTOOLCHAIN"} {
		if val, ok := os.LookupEnv(v); ok {
			cmd.Env = append(cmd.Env, v+"="+val)
		}
	}
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	r := result{out: buf.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%s: %v", path, err)
	}
	s, _ := os.ReadFile(summary)
	o, _ := os.ReadFile(output)
	r.summary, r.output = string(s), string(o)
	return r
}

// A gate log's tail as framework/suite prints it: the verdict, then the
// smallest change the run could detect.
const gateLog = `# meshbench: gate: fixtures/gates/kind.yaml, mb/nginx:2 against mb/nginx:1: inconclusive
# meshbench:   inconclusive: p99 +3.1 % (0.98-1.19), limit 15 %
# meshbench: gate: smallest change this run could detect, from the pairs' ratios, at the decisions' 98.33 %:
# meshbench:   BenchmarkUpgradeGate/c=8/load=open/path=one-hop p99: 21.4 % (limit 15 %): larger than the limit, so this gate cannot pass honestly; about 14 pairs would let it
# meshbench:   BenchmarkUpgradeGate/c=8/load=max/path=one-hop sidecarCPUPer1kReq: 4.2 % (limit 10 %)
FAIL
`

// Each exit code of meshbench gate through hack/gate-outcome.sh: the
// job's exit code, its summary line, and inconclusive as a warning with
// ON_INCONCLUSIVE=warn, with the smallest change the run could detect.
func TestGateOutcome(t *testing.T) {
	log := filepath.Join(t.TempDir(), "gate.log")
	require.NoError(t, os.WriteFile(log, []byte(gateLog), 0o644))
	for _, tc := range []struct {
		code, inconclusive string
		want               int
		summary, out       string
	}{
		{"0", "", 0, "### PASS: b against a", "gate b against a: PASS"},
		{"1", "", 1, "### FAIL: b against a: worse than the reference by more than a limit", "::error title=mesh upgrade gate::FAIL: b against a"},
		{"2", "", 2, "### NO DECISION (exit 2): b against a: see " + log, "::error title=mesh upgrade gate::no decision (exit 2)"},
		{"3", "", 3, "### INCONCLUSIVE: b against a: neither a pass nor a fail", "::error title=mesh upgrade gate::INCONCLUSIVE: b against a"},
		{"3", "fail", 3, "### INCONCLUSIVE: b against a: neither a pass nor a fail", "::error title=mesh upgrade gate::INCONCLUSIVE"},
		{"3", "warn", 0, "### INCONCLUSIVE: b against a: neither a pass nor a fail", "::warning title=mesh upgrade gate::INCONCLUSIVE: b against a: neither a pass nor a fail; this runner could not decide within its budget"},
		{"3", "maybe", 2, `### bad input: ` + "`ON_INCONCLUSIVE`=`maybe`: want fail or warn", `::error title=bad input::input ON_INCONCLUSIVE="maybe": want fail or warn`},
	} {
		t.Run(tc.code+tc.inconclusive, func(t *testing.T) {
			r := script(t, root, "hack/gate-outcome.sh", []string{"ON_INCONCLUSIVE=" + tc.inconclusive, "MAX_COUNT=6"}, tc.code, "b against a", log)
			assert.Equal(t, tc.want, r.code, r.out)
			assert.Contains(t, r.summary, tc.summary)
			assert.Contains(t, r.out, tc.out)
			if tc.code == "3" && tc.inconclusive != "maybe" {
				assert.Contains(t, r.summary, "within -max-count=6 rounds")
				assert.Contains(t, r.summary, "The smallest change this run could detect (a change below it goes unseen on this runner):\n\n"+
					"- BenchmarkUpgradeGate/c=8/load=open/path=one-hop p99: 21.4 % (limit 15 %): larger than the limit, so this gate cannot pass honestly; about 14 pairs would let it\n"+
					"- BenchmarkUpgradeGate/c=8/load=max/path=one-hop sidecarCPUPer1kReq: 4.2 % (limit 10 %)\n")
			}
		})
	}
	t.Run("no detectable change in the log", func(t *testing.T) {
		empty := filepath.Join(t.TempDir(), "gate.log")
		require.NoError(t, os.WriteFile(empty, []byte("FAIL\n"), 0o644))
		r := script(t, root, "hack/gate-outcome.sh", []string{"ON_INCONCLUSIVE=warn"}, "3", "b against a", empty)
		assert.Equal(t, 0, r.code, r.out)
		assert.Contains(t, r.summary, "The gate log has no smallest detectable change (see "+empty+" in the artifact).")
	})
}

// git runs git in dir and returns its output.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

// copyTree copies this repository's files (tracked, and new ones not
// ignored, as they are on disk) into dir.
func copyTree(t *testing.T, dir string) {
	t.Helper()
	files := git(t, root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	for _, f := range strings.Split(files, "\x00") {
		src := filepath.Join(root, f)
		st, err := os.Lstat(src)
		if f == "" || err != nil || !st.Mode().IsRegular() {
			continue // deleted in the work tree, or not a file
		}
		data, err := os.ReadFile(src)
		require.NoError(t, err)
		dst := filepath.Join(dir, f)
		require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
		require.NoError(t, os.WriteFile(dst, data, st.Mode().Perm()))
	}
}

// edit replaces old by new in dir's file, which must hold it.
func edit(t *testing.T, dir, file, old, new string) {
	t.Helper()
	p := filepath.Join(dir, file)
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Contains(t, string(data), old, file)
	require.NoError(t, os.WriteFile(p, []byte(strings.Replace(string(data), old, new, 1)), 0o644))
}

// The pins job on real commits: a repository holding this tree (the
// base), a head that moves the kind sidecar's suite and Caddy's version,
// and an older base whose meshbench has no pins command. Each base's own
// tree builds its meshbench (go run), as in the job; the head's is this
// tree's. The changed pins become the jobs' outputs; a base without
// `meshbench pins` fails the job, naming the commit.
func TestPinsOfTwoCommits(t *testing.T) {
	if testing.Short() {
		t.Skip("builds meshbench from a base commit (go run)")
	}
	need(t, "git", "bash", "go")
	bin := meshbench(t)
	repo := t.TempDir()
	copyTree(t, repo)
	git(t, repo, "init", "-q", "-b", "main")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-qm", "base")
	base := git(t, repo, "rev-parse", "HEAD")
	gomod, err := os.ReadFile(filepath.Join(repo, "go.mod"))
	require.NoError(t, err)
	caddy := regexp.MustCompile(`(?m)^\s*github\.com/caddyserver/caddy/v2 (v\S+)`).FindSubmatch(gomod)
	require.NotNil(t, caddy, "go.mod requires Caddy")
	env, err := os.ReadFile(filepath.Join(repo, "hack/offline/versions.env"))
	require.NoError(t, err)
	suite := regexp.MustCompile(`(?m)^NGINX_SUITE=(\S+)$`).FindSubmatch(env)
	require.NotNil(t, suite, "versions.env sets NGINX_SUITE")

	// An older base: its meshbench has no pins command.
	edit(t, repo, "cmd/meshbench/main.go", "\tcase \"pins\":\n\t\treturn pinsCmd(args[1:], stdout, stderr)\n", "")
	git(t, repo, "commit", "-qam", "a meshbench without pins")
	old := git(t, repo, "rev-parse", "HEAD")

	git(t, repo, "checkout", "-q", base)
	edit(t, repo, "hack/offline/versions.env", "NGINX_SUITE="+string(suite[1]), "NGINX_SUITE=meshbench-test")
	edit(t, repo, "go.mod", "github.com/caddyserver/caddy/v2 "+string(caddy[1]), "github.com/caddyserver/caddy/v2 v2.99.0")
	git(t, repo, "commit", "-qam", "head: new sidecars")

	// One runner temp for the runs, as one job has: the second base's build
	// reuses the first's packages.
	temp := "RUNNER_TEMP=" + t.TempDir()
	r := script(t, repo, "hack/ci/pins.sh", []string{"EVENT=pull_request", "BASE_SHA=" + base, "MESHBENCH=" + bin, temp})
	require.Equal(t, 0, r.code, r.out)
	ref := "caddy@" + string(caddy[1])
	assert.Equal(t, "local "+ref+" caddy@v2.99.0\nkind-sidecar nginx@"+string(suite[1])+" nginx@meshbench-test\n", r.out[strings.Index(r.out, "local "):])
	assert.Equal(t, "local=yes\nlocal-reference="+ref+"\nlocal-candidate=caddy@v2.99.0\n"+
		`kind=[{"pin":"kind-sidecar","reference":"nginx@`+string(suite[1])+`","candidate":"nginx@meshbench-test"}]`+"\n"+
		"max-count=60\ninconclusive=fail\n", r.output)
	assert.Contains(t, r.summary, "| local | "+ref+" | caddy@v2.99.0 |\n| kind-sidecar | nginx@"+string(suite[1])+" | nginx@meshbench-test |\n")
	assert.NotContains(t, git(t, repo, "worktree", "list"), "base", "the base's worktree is removed")

	r = script(t, repo, "hack/ci/pins.sh", []string{"EVENT=pull_request", "BASE_SHA=" + old, "MESHBENCH=" + bin, temp})
	assert.Equal(t, 1, r.code, "a base without meshbench pins fails the job: %s", r.out)
	assert.Contains(t, r.out, "::error title=pins::base commit "+old+": `meshbench pins` failed (meshbench: unknown command \"pins\")")
	assert.Contains(t, r.summary, "The base commit `"+old+"` has no working `meshbench pins`")
	assert.NotContains(t, r.summary, "No pin changed")
	assert.Empty(t, r.output, "no outputs: nothing is gated")

	r = script(t, repo, "hack/ci/pins.sh", []string{"EVENT=pull_request", "BASE_SHA=0123456789abcdef", "MESHBENCH=" + bin})
	assert.Equal(t, 1, r.code, r.out)
	assert.Contains(t, r.out, "base commit 0123456789abcdef is not in this clone")
}

// A workflow input that is not a valid flag value is refused before
// anything is built or run: exit 2, and an error naming the input.
func TestBadInputsAreRefusedNamingTheInput(t *testing.T) {
	need(t, "bash")
	bin := meshbench(t)
	dispatch := func(ref, cand, maxCount, inconclusive string) []string {
		return []string{"EVENT=workflow_dispatch", "MESHBENCH=" + bin, "INPUT_REFERENCE=" + ref, "INPUT_CANDIDATE=" + cand,
			"INPUT_MAX_COUNT=" + maxCount, "INPUT_INCONCLUSIVE=" + inconclusive}
	}
	kind := func(pin, ref, cand, maxCount string, more ...string) []string {
		return append([]string{"DRY_RUN=1", "MESHBENCH=" + bin, "PIN=" + pin, "REFERENCE=" + ref, "CANDIDATE=" + cand,
			"MAX_COUNT=" + maxCount, "HEAD_NGINX=meshbench/nginx:2", "BASE_NGINX=meshbench/nginx:1"}, more...)
	}
	nightly := func(bench, flags, last, failOn string, more ...string) []string {
		return append([]string{"MESHBENCH=" + bin, "BENCH=" + bench, "FLAGS=" + flags, "LAST=" + last, "FAIL_ON_CHANGE=" + failOn}, more...)
	}
	for _, tc := range []struct {
		name, script string
		env          []string
		want         string
	}{
		{"max-count not a number", "hack/ci/pins.sh", dispatch("caddy@v2.10.2", "caddy@v2.11.9", "3x", "fail"),
			`input max-count="3x": want a whole number of at least 1`},
		{"max-count zero", "hack/ci/pins.sh", dispatch("caddy@v2.10.2", "caddy@v2.11.9", "0", "fail"),
			`input max-count="0": want a whole number of at least 1`},
		{"max-count below the gate's rounds", "hack/ci/pins.sh", dispatch("caddy@v2.10.2", "caddy@v2.11.9", "2", "fail"),
			`input max-count="2": -max-count=2: must be at least -count (3), or 0`},
		{"inconclusive", "hack/ci/pins.sh", dispatch("caddy@v2.10.2", "caddy@v2.11.9", "30", "maybe"),
			`input inconclusive="maybe": want fail or warn`},
		{"reference not a version", "hack/ci/pins.sh", dispatch("caddy@latest", "caddy@v2.11.9", "30", "fail"),
			`input reference="caddy@latest": -sidecar/-candidate: sidecar "caddy@latest": version "latest" is not an exact module version`},
		{"candidate not a sidecar", "hack/ci/pins.sh", dispatch("caddy@v2.10.2", "squid", "30", "fail"),
			`input candidate="squid": -sidecar/-candidate: candidate: sidecar "squid": unknown sidecar "squid"`},
		{"candidate empty", "hack/ci/pins.sh", dispatch("caddy@v2.10.2", "", "30", "fail"),
			`input candidate="": empty`},
		{"local gate max-count", "hack/ci/local-gate.sh", []string{"MESHBENCH=" + bin, "REFERENCE=caddy", "CANDIDATE=caddy+access-log", "MAX_COUNT=-1"},
			`input max-count="-1": want a whole number of at least 1`},
		{"local gate candidate", "hack/ci/local-gate.sh", []string{"MESHBENCH=" + bin, "REFERENCE=caddy", "CANDIDATE=rev=canary", "MAX_COUNT=30"},
			`input candidate="rev=canary": -candidate=rev=canary: an Istio revision runs on a cluster only`},
		{"kind max-count below the stored repeats", "hack/ci/kind-gate.sh", kind("istio", "1.27.3", "1.28.0", "4"),
			`input max-count="4": -max-count=4: must be at least -count (6), or 0`},
		{"kind mesh release", "hack/ci/kind-gate.sh", kind("istio", "latest", "1.28.0", "12"),
			`input reference="latest": -mesh-version=latest: istio: install version "latest" is not a chart version (want e.g. 1.28.0)`},
		{"kind candidate release", "hack/ci/kind-gate.sh", kind("linkerd", "1.2.3", "main", "12"),
			`input candidate="main": -mesh-version=main: linkerd:`},
		{"kind pin", "hack/ci/kind-gate.sh", kind("nope", "1", "2", "12"),
			`input pin="nope": -mesh=nope: unknown mesh "nope"`},
		{"kind inconclusive", "hack/ci/kind-gate.sh", kind("istio", "1.27.3", "1.28.0", "12", "ON_INCONCLUSIVE=ignore"),
			`input inconclusive="ignore": want fail or warn`},
		{"kind mesh flags", "hack/ci/kind-gate.sh", kind("istio-proxyless", "1.31-dev.eed52ebb66ad", "1.31-dev.eed52ebb66ad", "12",
			"CANDIDATE_MESH_FLAGS=-protocol=grpc -mesh-charts /charts"),
			`input CANDIDATE_MESH_FLAGS="-protocol=grpc -mesh-charts /charts": "/charts" is not a flag`},
		{"kind istio-proxyless release", "hack/ci/kind-images.sh", kind("istio-proxyless", "1.30.2", "1.31-dev.eed52ebb66ad", "12"),
			`input reference="1.30.2": not an istio-proxyless version (want e.g. 1.31-dev.eed52ebb66ad)`},
		{"bench flags pasted into a shell", "hack/ci/bench.sh", []string{"FLAGS=-count=5 $(touch pwned); true"},
			`input flags="-count=5 $(touch pwned); true": "$(touch" is not a flag: write each as -name or -name=value`},
		{"bench flag value as its own word", "hack/ci/bench.sh", []string{"FLAGS=-count 5"},
			`input flags="-count 5": "5" is not a flag`},
		{"nightly last", "hack/ci/nightly-where.sh", nightly("OneHop$", "", "thirty", "10"),
			`input last="thirty": want a whole number of at least 1`},
		{"nightly fail-on-change", "hack/ci/nightly-where.sh", nightly("OneHop$", "", "30", "10%"),
			`input fail-on-change="10%": want a number, e.g. 10 or 2.5`},
		{"nightly flags", "hack/ci/nightly-where.sh", nightly("OneHop$", "-count=5 *", "30", "10"),
			`input flags="-count=5 *": "*" is not a flag`},
		{"nightly kubeconfig without a mesh", "hack/ci/nightly-where.sh", nightly("OneHop$", "", "30", "10", "KUBECONFIG_DATA=apiVersion: v1", "SECRET_NAME=MY_CLUSTER"),
			`input mesh="": a kubeconfig (MY_CLUSTER) needs a mesh: the input mesh or the variable NIGHTLY_MESH`},
		{"nightly mesh", "hack/ci/nightly-where.sh", nightly("OneHop$", "", "30", "10", "KUBECONFIG_DATA=apiVersion: v1", "MESH=consul"),
			`input mesh="consul": -mesh=consul: unknown mesh "consul"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var args []string
			if strings.HasSuffix(tc.script, "kind-gate.sh") {
				args = []string{"gate"}
			}
			r := script(t, dir, filepath.Join(absRoot(t), tc.script), tc.env, args...)
			assert.Equal(t, 2, r.code, r.out)
			assert.Contains(t, r.out, "::error title=bad input::"+tc.want)
			assert.Contains(t, r.summary, "### bad input: ")
			assert.Empty(t, r.output, "no outputs")
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			assert.Empty(t, entries, "nothing ran (no file written, nothing expanded)")
		})
	}
	assert.NoFileExists(t, filepath.Join(root, "pwned"), "the flags were not run by a shell")
}

func absRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(root)
	require.NoError(t, err)
	return dir
}

// Good inputs pass the checks: a dispatch becomes the local gate's
// outputs, and the nightly runs locally without a kubeconfig.
func TestGoodInputs(t *testing.T) {
	need(t, "bash")
	bin := meshbench(t)
	r := script(t, root, "hack/ci/pins.sh", []string{"EVENT=workflow_dispatch", "MESHBENCH=" + bin, "INPUT_REFERENCE=caddy@v2.10.2",
		"INPUT_CANDIDATE=caddy+access-log", "INPUT_MAX_COUNT=12", "INPUT_INCONCLUSIVE=warn"})
	require.Equal(t, 0, r.code, r.out)
	assert.Equal(t, "local=yes\nlocal-reference=caddy@v2.10.2\nlocal-candidate=caddy+access-log\nkind=[]\nmax-count=12\ninconclusive=warn\n", r.output)
	assert.Contains(t, r.summary, "| local | caddy@v2.10.2 | caddy+access-log |")

	r = script(t, root, "hack/ci/nightly-where.sh", []string{"MESHBENCH=" + bin, "BENCH=OneHop$|TwoHop$", "FLAGS=-count=5 -concurrency=1,8", "LAST=30", "FAIL_ON_CHANGE=2.5"})
	require.Equal(t, 0, r.code, r.out)
	assert.Equal(t, "kubeconfig=\nmesh=\nkey=local\n", r.output)

	r = script(t, root, "hack/ci/nightly-where.sh", []string{"MESHBENCH=" + bin, "BENCH=OneHop$", "LAST=30", "FAIL_ON_CHANGE=10",
		"KUBECONFIG_DATA=apiVersion: v1", "MESH=linkerd", "SECRET_NAME=NIGHTLY_KUBECONFIG"})
	require.Equal(t, 0, r.code, r.out)
	assert.Regexp(t, `^kubeconfig=/\S+/kubeconfig\nmesh=linkerd\nkey=nightly-kubeconfig-linkerd\n$`, r.output)
	kc := strings.TrimPrefix(strings.SplitN(r.output, "\n", 2)[0], "kubeconfig=")
	st, err := os.Stat(kc)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "the kubeconfig is the runner's alone")
}

// The kind job's mesh-release path, dry: the reference run is the gate's
// scenario stored with -store-reference into an absolute results
// directory, and the gate runs against a file of that directory
// (-reference). Both flag sets pass meshbench check before they are
// printed, so neither is refused (exit 2) as the old reference run was.
// The kind-sidecar path stores nothing and gates both images in one run.
func TestKindGateDryRun(t *testing.T) {
	need(t, "bash")
	bin := meshbench(t)
	results := filepath.Join(t.TempDir(), "results")
	env := []string{"DRY_RUN=1", "MESHBENCH=" + bin, "PIN=istio", "REFERENCE=1.27.3", "CANDIDATE=1.28.0", "MAX_COUNT=12",
		"HEAD_NGINX=meshbench/nginx:2", "RESULTS=" + results}
	r := script(t, root, "hack/ci/kind-gate.sh", env, "reference")
	require.Equal(t, 0, r.code, r.out)
	assert.Contains(t, r.out, "go test ./benchmarks -run \\^\\$ -bench \\^BenchmarkUpgradeGate\\$ -count=6 -timeout=60m -results="+results+"/reference -thresholds=none "+
		"-target=kind -loadgen-image=meshbench/mbloadgen:dev -gate-fraction=0.2 -warmup=3s -nginx-image=meshbench/nginx:2 -mesh=istio -mesh-install -mesh-version=1.27.3 -store-reference")

	r = script(t, root, "hack/ci/kind-gate.sh", append(env, "ON_INCONCLUSIVE=warn"), "gate")
	require.Equal(t, 0, r.code, r.out)
	assert.Contains(t, r.out, bin+" gate -results "+results+" -timeout 60m -target=kind -loadgen-image=meshbench/mbloadgen:dev -gate-fraction=0.2 -warmup=3s "+
		"-nginx-image=meshbench/nginx:2 -mesh=istio -mesh-install -mesh-version=1.28.0 -count=6 -max-count=12 -reference="+results+"/reference/\\<stored\\ run\\>.json")

	// A mesh built offline: each release's flags (kind-images.sh's) go to
	// its own run, and EXTRA_FLAGS to both.
	v := "1.31-dev.eed52ebb66ad"
	charts := t.TempDir()
	proxyless := []string{"DRY_RUN=1", "MESHBENCH=" + bin, "PIN=istio-proxyless", "REFERENCE=" + v, "CANDIDATE=" + v, "MAX_COUNT=3", "COUNT=3",
		"HEAD_NGINX=meshbench/nginx:2", "RESULTS=" + results, "REFERENCE_MESH_FLAGS=-protocol=grpc -mesh-charts=" + charts,
		"CANDIDATE_MESH_FLAGS=-protocol=grpc -mesh-charts=" + charts + "/", "EXTRA_FLAGS=-kind-cluster=mb -keep-cluster -duration=10s"}
	r = script(t, root, "hack/ci/kind-gate.sh", proxyless, "reference")
	require.Equal(t, 0, r.code, r.out)
	common := "-target=kind -loadgen-image=meshbench/mbloadgen:dev -gate-fraction=0.2 -warmup=3s -kind-cluster=mb -keep-cluster -duration=10s " +
		"-nginx-image=meshbench/nginx:2 -mesh=istio-proxyless -mesh-install -mesh-version=" + v + " -protocol=grpc -mesh-charts=" + charts
	assert.Contains(t, r.out, "-results="+results+"/reference -thresholds=none "+common+" -store-reference")
	r = script(t, root, "hack/ci/kind-gate.sh", proxyless, "gate")
	require.Equal(t, 0, r.code, r.out)
	assert.Contains(t, r.out, " gate -results "+results+" -timeout 60m "+common+"/ -count=3 -max-count=3 -reference=")

	sidecar := []string{"DRY_RUN=1", "MESHBENCH=" + bin, "PIN=kind-sidecar", "REFERENCE=nginx@bookworm", "CANDIDATE=nginx@trixie", "MAX_COUNT=12",
		"HEAD_NGINX=meshbench/nginx:2", "BASE_NGINX=meshbench/nginx:1", "RESULTS=" + results}
	r = script(t, root, "hack/ci/kind-gate.sh", sidecar, "reference")
	require.Equal(t, 0, r.code, r.out)
	assert.Contains(t, r.out, "kind-sidecar: both arms run in the gate's cluster: no reference to store")
	r = script(t, root, "hack/ci/kind-gate.sh", sidecar, "gate")
	require.Equal(t, 0, r.code, r.out)
	assert.Contains(t, r.out, bin+" gate -results "+results+" -timeout 60m -target=kind -loadgen-image=meshbench/mbloadgen:dev -gate-fraction=0.2 -warmup=3s "+
		"-mesh=sidecar -nginx-image=meshbench/nginx:1 -candidate=meshbench/nginx:2 -max-count=12")
}

// A reference run that failed only because some of its runs were invalid
// (the lines are a real kind run's, 2026-12-03) is told apart from one
// that broke: a failed step, a second failure, or a panic.
func TestOnlyInvalidRuns(t *testing.T) {
	need(t, "bash", "awk")
	invalid := "--- FAIL: BenchmarkUpgradeGate/load=open/c=8/arm=baseline-2\n" +
		"    sweep.go:416: INVALID run: missed target rate: achieved 1542.9 req/s of 1630.4 (tolerance 5%); the loadgen slowed down with the system, so latency is understated (coordinated omission)\n" +
		"PASS\n" +
		"FAIL meshbench: not a valid result: invalid runs in BenchmarkUpgradeGate/load=open/c=8 (1); their reasons are in the results file and above\n" +
		"exit status 1\nFAIL\tgithub.com/meshbench/meshbench/benchmarks\t227.163s\nFAIL\n"
	for _, tc := range []struct {
		name, log string
		only      bool
	}{
		{"invalid runs only", invalid, true},
		{"invalid runs of two arms, and their parents", "--- FAIL: BenchmarkUpgradeGate/load=open/c=8/arm=baseline\n" +
			"    sweep.go:416: INVALID run: missed target rate: achieved 1221.3 req/s of 1356.4 (tolerance 5%)\n" +
			"--- FAIL: BenchmarkUpgradeGate/load=open/c=8/arm=meshed\n" +
			"    sweep.go:416: INVALID run: missed target rate: achieved 1237.1 req/s of 1356.4 (tolerance 5%)\n" +
			"--- FAIL: BenchmarkUpgradeGate/load=open/c=8\n--- FAIL: BenchmarkUpgradeGate/load=open\n--- FAIL: BenchmarkUpgradeGate\nFAIL\n" +
			"# meshbench: path proof: one-hop baseline (6 runs, 1 of them INVALID)\n" +
			"FAIL meshbench: not a valid result: invalid runs in BenchmarkUpgradeGate/load=open/c=8 (2); their reasons are in the results file and above\n", true},
		{"a step failed", "--- FAIL: BenchmarkUpgradeGate\n    suite.go:88: install istio-proxyless: helm: timed out\n" + invalid, false},
		{"another failure", invalid + "FAIL meshbench: /x/kind.yaml:3: too high p99\n", false},
		{"a panic", "panic: runtime error\n" + invalid, false},
		{"no invalid runs", "--- FAIL: BenchmarkUpgradeGate\n    sweep.go:416: INVALID run: x\nFAIL\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "reference.log")
			require.NoError(t, os.WriteFile(log, []byte(tc.log), 0o644))
			err := exec.Command("bash", "-c", `source "$1" && only_invalid_runs "$2"`, "bash", filepath.Join(absRoot(t), "hack/ci/lib.sh"), log).Run()
			assert.Equal(t, tc.only, err == nil, "only invalid runs: %v", err)
		})
	}
}
