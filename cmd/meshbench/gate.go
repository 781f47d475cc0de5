package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/meshbench/meshbench/framework/cpuprofile"
	"github.com/meshbench/meshbench/framework/gate"
	"github.com/meshbench/meshbench/framework/testbed"
)

// exitError carries a process exit code out of a command: the gate's
// verdict (0 pass, 1 fail, 3 inconclusive) or 2 for what could not be
// decided.
type exitError struct {
	code int
	err  error
}

// Error is the wrapped error's message (error).
func (e *exitError) Error() string { return e.err.Error() }

// Unwrap is the wrapped error, for errors.Is and errors.As.
func (e *exitError) Unwrap() error { return e.err }

// gateResults is what `meshbench verdict` reads of a results file.
type gateResults struct {
	Gate        string        `json:"gate"`
	GateVerdict *gate.Verdict `json:"gateVerdict"`
	// Why is where the CPU went, when the gate failed on sidecar CPU.
	Why      *cpuprofile.Report `json:"why"`
	Settings struct {
		Sidecar     string `json:"sidecar"`
		Candidate   string `json:"candidate"`
		Target      string `json:"target"`
		Mesh        string `json:"mesh"`
		MeshVersion string `json:"meshVersion"`
		NginxImage  string `json:"nginxImage"`
		// an Istio canary: the reference's revision, and the
		// candidate revision's release when it is another
		MeshRevision         string `json:"meshRevision"`
		CandidateMeshVersion string `json:"candidateMeshVersion"`
	} `json:"settings"`
	// Reference is the stored run a -reference gate compared against.
	Reference *struct {
		RunID string `json:"runID"`
	} `json:"reference"`
	// Partial, Failed and GatePlan say whether the run was whole
	// (report.Results): a verdict counts only from a run that was.
	Partial  string              `json:"partial"`
	Failed   string              `json:"failed"`
	Invalid  string              `json:"invalid"`
	GatePlan []map[string]string `json:"gatePlan"`
}

// incomplete says why the run behind r cannot carry its verdict: it
// stopped early (partial: a deadline, a signal, a full disk), failed
// apart from the gate (a fatal error, invalid runs), or left points it
// planned without a decision. It is nil for a whole run.
func (r gateResults) incomplete() error {
	var why []string
	if r.Partial != "" {
		why = append(why, "the run is partial: "+r.Partial)
	}
	if r.Failed != "" {
		why = append(why, "the run failed: "+r.Failed)
	}
	if missing := r.undecided(); len(missing) > 0 {
		why = append(why, fmt.Sprintf("%d of the %d points the gate planned have no decision: %s",
			len(missing), len(r.GatePlan), strings.Join(missing, ", ")))
	}
	if len(why) == 0 {
		return nil
	}
	return errors.New(strings.Join(why, "; "))
}

// undecided lists the planned points (GatePlan) that no decision of the
// verdict is about.
func (r gateResults) undecided() []string {
	decided := map[string]bool{}
	if r.GateVerdict != nil {
		for _, d := range r.GateVerdict.Decisions {
			decided[d.Scenario.String()] = true
		}
	}
	var out []string
	for _, p := range r.GatePlan {
		if name := gate.Labels(p).String(); !decided[name] {
			out = append(out, name)
		}
	}
	return out
}

// goTestStatus is what go test's exit status says of the gate's run:
// nil when it ran to the end (exit 0, or 1 for a verdict of fail or
// inconclusive, which go test cannot tell apart from other failures:
// Results.Failed does, or for invalid runs, which the gate leaves out and
// Results.Invalid names), an error when go test did not run, or failed
// although the verdict is a pass and the results name no invalid run.
func goTestStatus(ctx context.Context, runErr error, r gateResults) error {
	var ee *exec.ExitError
	switch {
	case runErr == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("go test was stopped (%v): %w", context.Cause(ctx), runErr)
	case !errors.As(runErr, &ee):
		return fmt.Errorf("go test did not run: %w", runErr)
	case r.GateVerdict != nil && r.GateVerdict.Outcome == gate.Pass && r.Invalid != "":
		return nil // go test failed on the invalid runs the gate left out
	case r.GateVerdict == nil || r.GateVerdict.Outcome == gate.Pass:
		return fmt.Errorf("go test failed (%w) though the stored verdict is a pass: the run itself failed; see its log", runErr)
	}
	return nil
}

// readVerdict reads the gate's verdict from a results file; an error
// names the file, and says when the run decided nothing.
func readVerdict(path string) (gateResults, error) {
	var r gateResults
	data, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	if r.GateVerdict == nil || len(r.GateVerdict.Decisions) == 0 {
		why := "the run gated nothing (no -candidate or -reference, or -gate none)"
		if r.Gate != "" {
			why = "the gate " + r.Gate + " reached no verdict: the run failed before it decided, or the stored reference was not comparable; see its log"
		}
		return r, fmt.Errorf("%s: no gate verdict: %s", path, why)
	}
	return r, nil
}

// verdictCmd is `meshbench verdict RESULTS.json`: the Markdown of the
// verdict a run stored, and its exit code.
func verdictCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("meshbench verdict", flag.ContinueOnError)
	fs.SetOutput(stderr)
	summary := fs.String("summary", "", "also write the Markdown to this file (appended to; default: $GITHUB_STEP_SUMMARY when set)")
	if err := fs.Parse(args); err != nil {
		return &exitError{gate.ExitError, err}
	}
	if fs.NArg() != 1 {
		return &exitError{gate.ExitError, errors.New("verdict: want one results file\n" + usage)}
	}
	return writeVerdict(fs.Arg(0), *summary, stdout, nil)
}

// writeVerdict prints a results file's verdict as Markdown to stdout and
// to summary (or $GITHUB_STEP_SUMMARY), and returns its exit code: the
// verdict's, or ExitError when the run was not whole (gateResults.
// incomplete) or run says it failed.
func writeVerdict(path, summary string, stdout io.Writer, run func(gateResults) error) error {
	r, err := readVerdict(path)
	if err != nil {
		return &exitError{gate.ExitError, fmt.Errorf("verdict: %w", err)}
	}
	if err := printVerdict(r, summary, stdout); err != nil {
		return err
	}
	inc := r.incomplete()
	if run != nil {
		if err := run(r); err != nil && inc != nil {
			inc = fmt.Errorf("%w; %w", inc, err)
		} else if err != nil {
			inc = err
		}
	}
	if inc != nil {
		return &exitError{gate.ExitError, fmt.Errorf("gate: no verdict from an incomplete run (its stored verdict, %s, does not count): %s: %w",
			strings.ToUpper(r.GateVerdict.Outcome.String()), path, inc)}
	}
	if code := r.GateVerdict.ExitCode(); code != 0 {
		return &exitError{code, fmt.Errorf("gate %s: %s", r.GateVerdict.Outcome, path)}
	}
	return nil
}

// title names what the gate compared: the candidate and the reference
// (-candidate: the local sidecars, on a cluster the sidecar images or the
// Istio revisions with their releases), or this run's mesh release and
// the stored run (-reference).
func (r gateResults) title() string {
	s := r.Settings
	if r.Reference != nil {
		this := strings.TrimSpace(s.Mesh + " " + s.MeshVersion)
		return fmt.Sprintf("%s against the stored run %s", cmpOr(this, "this run"), r.Reference.RunID)
	}
	if strings.HasPrefix(s.Candidate, "rev=") {
		ref := "the default injector"
		if s.MeshRevision != "" {
			ref = "rev=" + s.MeshRevision
		}
		ref = strings.TrimSpace(ref + " " + s.MeshVersion)
		cand := strings.TrimSpace(s.Candidate + " " + cmpOr(s.CandidateMeshVersion, s.MeshVersion))
		return fmt.Sprintf("%s %s against %s", s.Mesh, cand, ref)
	}
	ref := s.Sidecar
	if s.Target != "local" && s.NginxImage != "" {
		ref = s.NginxImage
	}
	return fmt.Sprintf("%s against %s", s.Candidate, ref)
}

// printVerdict writes r's verdict and where the CPU went as Markdown to
// stdout and to summary (or $GITHUB_STEP_SUMMARY).
func printVerdict(r gateResults, summary string, stdout io.Writer) error {
	title := r.title()
	outs := []io.Writer{stdout}
	if summary = cmpOr(summary, os.Getenv("GITHUB_STEP_SUMMARY")); summary != "" {
		f, err := os.OpenFile(summary, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return &exitError{gate.ExitError, fmt.Errorf("verdict: -summary: %w", err)}
		}
		defer f.Close()
		outs = append(outs, f)
	}
	if err := r.GateVerdict.Markdown(io.MultiWriter(outs...), title); err != nil {
		return &exitError{gate.ExitError, fmt.Errorf("verdict: writing the summary: %w", err)}
	}
	if err := r.Why.Markdown(io.MultiWriter(outs...)); err != nil {
		return &exitError{gate.ExitError, fmt.Errorf("verdict: writing where the CPU went: %w", err)}
	}
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// gateFlags are `meshbench gate`'s own flags; every other argument goes
// to the benchmark.
var gateFlags = []string{"results", "summary", "timeout", "bench", "go"}

// gateCmd is `meshbench gate [flags] [benchmark flags]`: it runs the
// upgrade gate (go test ./benchmarks -bench BenchmarkUpgradeGate) from the
// module root, then reads the verdict from the results file the run wrote
// and exits with it: 0 pass, 1 fail, 3 inconclusive, 2 when the run
// decided nothing (bad flags or fixture, a stored reference that is not
// comparable, a run that failed). A verdict counts only from a whole run:
// go test's status (goTestStatus), the results' partial and failed marks
// and the points the gate planned (gateResults.incomplete) all say so,
// else the exit code is 2, never 0.
func gateCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	own, pass := splitGateArgs(args)
	fs := flag.NewFlagSet("meshbench gate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	results := fs.String("results", "", "results directory (default <module>/results)")
	summary := fs.String("summary", "", "also write the verdict's Markdown to this file (appended to; default: $GITHUB_STEP_SUMMARY when set)")
	timeout := fs.Duration("timeout", time.Hour, "go test's -timeout for the gate run")
	bench := fs.String("bench", "^BenchmarkUpgradeGate$", "the gated benchmarks (go test -bench)")
	goCmd := fs.String("go", "go", "the go command that runs the gate's go test (a name on PATH or a path), e.g. go1.26.8")
	if err := fs.Parse(own); err != nil {
		return &exitError{gate.ExitError, err}
	}
	if fs.NArg() > 0 {
		return &exitError{gate.ExitError, fmt.Errorf("gate: unexpected argument %q: benchmark flags start with -\n%s", fs.Arg(0), usage)}
	}
	if !slices.ContainsFunc(pass, func(a string) bool { return flagName(a) == "candidate" || flagName(a) == "reference" }) {
		return &exitError{gate.ExitError, errors.New("gate: nothing to gate: give -candidate (e.g. -candidate caddy+access-log, -sidecar caddy@v2.10.2 -candidate caddy@v2.11.9) or -reference results/<run>.json")}
	}
	if err := checkPassedMode(pass); err != nil {
		return &exitError{gate.ExitError, err}
	}
	root, err := moduleRoot()
	if err != nil {
		return &exitError{gate.ExitError, fmt.Errorf("gate: %w", err)}
	}
	dir := cmpOr(*results, filepath.Join(root, "results"))
	if dir, err = filepath.Abs(dir); err != nil {
		return &exitError{gate.ExitError, fmt.Errorf("gate: -results: %w", err)}
	}
	before, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	goArgs := append([]string{"test", "./benchmarks", "-run", "^$", "-bench", *bench, "-timeout", timeout.String(), "-results", dir}, pass...)
	if !slices.ContainsFunc(pass, func(a string) bool { return flagName(a) == "thresholds" }) {
		goArgs = append(goArgs, "-thresholds", "none") // the gate alone decides
	}
	fmt.Fprintf(stderr, "meshbench gate: %s %s\n", *goCmd, strings.Join(goArgs, " "))
	cmd := exec.CommandContext(ctx, *goCmd, goArgs...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = root, stdout, stderr
	runErr := cmd.Run()
	path, err := newResults(dir, before)
	if err != nil {
		return &exitError{gate.ExitError, fmt.Errorf("gate: the run wrote no results (%v): %w", runErr, err)}
	}
	return writeVerdict(path, *summary, stdout, func(r gateResults) error { return goTestStatus(ctx, runErr, r) })
}

// splitGateArgs separates gateCmd's own flags (gateFlags, as -name value
// or -name=value) from the benchmark's; a "--" ends its own.
func splitGateArgs(args []string) (own, pass []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return own, append(pass, args[i+1:]...)
		}
		if !slices.Contains(gateFlags, flagName(a)) {
			pass = append(pass, a)
			continue
		}
		own = append(own, a)
		if !strings.Contains(a, "=") && i+1 < len(args) {
			i++
			own = append(own, args[i])
		}
	}
	return own, pass
}

// flagName is the name of a flag argument ("-candidate=x" → "candidate"),
// "" for an argument that is not a flag.
func flagName(a string) string {
	if !strings.HasPrefix(a, "-") {
		return ""
	}
	name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
	return name
}

// checkPassedMode refuses a -gate-mode other than testbed.Modes
// before go test builds anything (the benchmarks' own flag refuses it
// too, but only once they are built).
func checkPassedMode(pass []string) error {
	for i, a := range pass {
		if flagName(a) != "gate-mode" {
			continue
		}
		_, v, ok := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !ok && i+1 < len(pass) {
			v = pass[i+1]
		}
		if !slices.Contains(testbed.Modes, testbed.Mode(v)) {
			return fmt.Errorf("gate: -gate-mode=%s: want %s", v, testbed.ModeList())
		}
	}
	return nil
}

// newResults is the results file in dir that was not in before, the
// newest if several.
func newResults(dir string, before []string) (string, error) {
	after, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return "", err
	}
	var newest string
	var at time.Time
	for _, p := range after {
		if slices.Contains(before, p) {
			continue
		}
		if fi, err := os.Stat(p); err == nil && fi.ModTime().After(at) {
			newest, at = p, fi.ModTime()
		}
	}
	if newest == "" {
		return "", fmt.Errorf("no new results file in %s", dir)
	}
	return newest, nil
}

// moduleRoot is the directory of the go.mod above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod above %s: run meshbench gate inside the meshbench module", dir)
		}
	}
}
