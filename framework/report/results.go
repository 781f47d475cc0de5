package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/meshbench/meshbench/framework/target"
)

// Schema names the results file format; bump it on incompatible changes.
const Schema = "meshbench.results/v2"

// Results is everything one `go test ./benchmarks -bench .` measured.
type Results struct {
	Schema   string    `json:"schema"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// Command is the test binary's command line.
	Command []string `json:"command"`
	// Settings are the harness flags in effect.
	Settings    any                `json:"settings"`
	Environment target.Environment `json:"environment"`
	// Records are the individual runs, raw histograms included.
	Records     []Record     `json:"records"`
	Comparisons []Comparison `json:"comparisons"`
	// Proofs are the edges each arm's requests went through, per path.
	Proofs []Proof `json:"proofs,omitempty"`
	// Thresholds is the fixture file checked ("" when the gate was off),
	// Breaches the limits the run broke, one line each.
	Thresholds string   `json:"thresholds,omitempty"`
	Breaches   []string `json:"breaches,omitempty"`
	// Gate is the upgrade gate's fixture, GateDecisions its decision per
	// scenario and metric (interval, outcome, pairs needed).
	Gate          string `json:"gate,omitempty"`
	GateDecisions any    `json:"gateDecisions,omitempty"`
}

// Write stores r as dir/<started>-<target>.json and returns the path.
func Write(dir string, r *Results) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create results directory: %w", err)
	}
	name := fmt.Sprintf("%s-%s.json", r.Started.UTC().Format("20060102T150405Z"), r.Environment.Target)
	path := filepath.Join(dir, name)
	data, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return "", fmt.Errorf("encode results: %w", err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
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
