package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/meshbench/meshbench/framework/cpuprofile"
	"github.com/meshbench/meshbench/framework/testbed"
)

// Schema names the results file format; bump it on incompatible changes.
const Schema = "meshbench.results/v2"

// Results is everything one `go test ./benchmarks -bench .` measured.
type Results struct {
	// Schema is the file's format, Schema when written.
	Schema string `json:"schema"`
	// Started and Finished are the run's wall-clock start and end.
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// Command is the test binary's command line.
	Command []string `json:"command"`
	// Settings are the harness flags in effect.
	Settings any `json:"settings"`
	// Environment is where the run measured: target, mesh, nodes, versions.
	Environment testbed.Environment `json:"environment"`
	// Records are the individual runs, raw histograms included.
	Records []Record `json:"records"`
	// Comparisons are meshed against baseline per scenario, as written by
	// the run (the reports recompute them from Records).
	Comparisons []Comparison `json:"comparisons"`
	// Proofs are the edges each arm's requests went through, per path.
	Proofs []Proof `json:"proofs,omitempty"`
	// Thresholds is the fixture file checked ("" when the gate was off),
	// ThresholdsChecked how many comparisons (scenario × metric) it
	// judged, Breaches the limits the run broke (the whole interval
	// beyond), and Undecided the comparisons whose interval held the limit,
	// one line each.
	Thresholds        string   `json:"thresholds,omitempty"`
	ThresholdsChecked int      `json:"thresholdsChecked,omitempty"`
	Breaches          []string `json:"breaches,omitempty"`
	Undecided         []string `json:"undecided,omitempty"`
	// Gate is the upgrade gate's fixture, GateDecisions its decision per
	// scenario and metric (interval, outcome, pairs needed).
	Gate          string `json:"gate,omitempty"`
	GateDecisions any    `json:"gateDecisions,omitempty"`
	// GateVerdict is the whole verdict (gate.Verdict): its outcome, the
	// level of its intervals and its sequential plan beside the decisions,
	// which `meshbench verdict` reads back.
	GateVerdict any `json:"gateVerdict,omitempty"`
	// Why is where the CPU went where the gate failed on sidecar CPU:
	// the differential top-N of the arms' CPU profiles and their files,
	// beside this one, or why no profile was taken.
	Why *cpuprofile.Report `json:"why,omitempty"`
	// Partial, when set, says why this file holds only part of the run's
	// plan and what stopped it: a signal, a full disk, the deadline, or
	// an earlier run killed before it finished (recovered from its
	// journal). Its figures are real, but its verdict covers only what
	// was measured.
	Partial string `json:"partial,omitempty"`
	// Plan says what fitting the run to its deadline (go test's -timeout
	// less a margin, or the run's budget) changed: scenarios run with shorter
	// windows than the run's duration, and scenarios skipped, one line each.
	Plan []string `json:"plan,omitempty"`
	// GatePlan is every point the upgrade gate planned to decide on, as
	// its gate labels (benchmark, axes, c, path, loop), recorded before
	// each gated benchmark's first run: `meshbench gate` exits 2 when one
	// of them has no decision in GateVerdict (a run cut short, or a -bench
	// pattern that left points out), whatever the stored verdict says.
	GatePlan []map[string]string `json:"gatePlan,omitempty"`
	// Failed, when set, says why the run itself failed apart from the
	// gate's verdict: a benchmark that stopped on a fatal error, broken
	// thresholds. Its verdict, if any, covers only what was measured, and
	// `meshbench gate` exits 2 on it.
	Failed string `json:"failed,omitempty"`
	// Invalid, when set, names the run's invalid runs (a busy machine, a
	// missed rate). They fail go test, but not the gate: an invalid round
	// gives no pair and counts against the budget, and the verdict says so.
	Invalid string `json:"invalid,omitempty"`
	// Reference is the stored run the gate compared this run against
	// (a stored reference), when it did.
	Reference *StoredReference `json:"reference,omitempty"`
}

// StoredReference names the stored run a run was gated
// against, so that its decision can be recomputed from the two files.
type StoredReference struct {
	// File is the path the run read it from; RunID the stored run's own
	// id (Results.RunID); SHA256 the hex digest of the file as read.
	File   string `json:"file"`
	RunID  string `json:"runID"`
	SHA256 string `json:"sha256"`
	// Arm is the stored arm that stood for the reference: meshed, or
	// candidate when the stored run was an upgrade gate's.
	Arm testbed.Arm `json:"arm"`
	// Overhead lists the scenarios compared as overhead ratios (each
	// run's meshed arm over its own baseline arm of the same repeat), and
	// Direct those compared as they are (a run without a baseline arm).
	Overhead []string `json:"overhead,omitempty"`
	Direct   []string `json:"direct,omitempty"`
	// Warnings are the differences that shift figures without breaking
	// the comparison (CPU model, kernel, Kubernetes …), one line each.
	Warnings []string `json:"warnings,omitempty"`
}

// RunID identifies a run: "<started>-<target>", e.g.
// "20261130T171226Z-local", which is also its results file's name.
func (r *Results) RunID() string {
	return fmt.Sprintf("%s-%s", r.Started.UTC().Format("20060102T150405Z"), r.Environment.Target)
}

// Write stores r as dir/<started>-<target>.json and returns the path.
func Write(dir string, r *Results) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create results directory: %w", err)
	}
	name := r.RunID() + ".json"
	path := filepath.Join(dir, name)
	data, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return "", fmt.Errorf("encode results: %w", err)
	}
	if err := WriteAtomic(path, data, 0o644); err != nil {
		return "", fmt.Errorf("write results: %w", err)
	}
	return path, nil
}

// Read loads a results file written by Write.
func Read(path string) (*Results, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	var r Results
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: decode results: %w", path, err)
	}
	if r.Schema != Schema {
		return nil, fmt.Errorf("%s: schema %q, want %q", path, r.Schema, Schema)
	}
	return &r, nil
}
