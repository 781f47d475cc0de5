// Package history follows meshbench's results across runs: it groups the
// runs whose figures can be compared (same target, settings, scenarios'
// load, machine class, mesh and sidecar), orders each group by start time
// and finds, per scenario and metric, where the figures changed, by
// E-divisive means with Student's t-test as Apache Otava does (Fleming et
// al., arXiv 2301.03034). A gate compares two versions at once; history
// finds the slow creep no single gate fails on.
package history

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/meshbench/meshbench/framework/gate"
	"github.com/meshbench/meshbench/framework/report"
)

// Difference is one field on which a run differs from a group so that it
// cannot join it.
type Difference struct {
	// Field names it as the results file does, e.g. "environment.cores"
	// or "settings.duration".
	Field string `json:"field"`
	// Here is this group's value, There the other group's; Detail, when
	// set, says how they differ instead.
	Here   string `json:"here,omitempty"`
	There  string `json:"there,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// String returns e.g. "environment.cores: 4 here, 2 there".
func (d Difference) String() string {
	if d.Detail != "" {
		return d.Field + ": " + d.Detail
	}
	return fmt.Sprintf("%s: %s here, %s there", d.Field, orNone(d.Here), orNone(d.There))
}

// sidecarSettings are the harness settings that name the meshed arm's
// proxy, by their JSON names in Results.Settings.
type sidecarSettings struct {
	Sidecar        string `json:"sidecar"`
	Candidate      string `json:"candidate"`
	SidecarThreads int    `json:"sidecarThreads"`
	Mesh           string `json:"mesh"`
}

func sidecarOf(r *report.Results) sidecarSettings {
	var s sidecarSettings
	if data, err := json.Marshal(r.Settings); err == nil {
		_ = json.Unmarshal(data, &s) // a field of another type reads as unset
	}
	return s
}

// field is one named value of a run that a group shares.
type field struct{ name, value string }

// meshFields are the mesh and sidecar of a run: the mesh always, its
// version, threads and sidecar variant unless a version is followed.
func meshFields(r *report.Results, followVersion bool) []field {
	s, m := sidecarOf(r), r.Environment.Mesh
	fs := []field{{"environment.mesh.name", m.Name}, {"settings.mesh", s.Mesh}}
	if followVersion {
		return fs
	}
	return append(fs,
		field{"environment.mesh.version", m.Version},
		field{"environment.mesh.threads", fmt.Sprint(m.Threads)},
		field{"settings.sidecar", s.Sidecar},
		field{"settings.candidate", s.Candidate},
		field{"settings.sidecarThreads", fmt.Sprint(s.SidecarThreads)})
}

// Sidecar names the proxy a run's meshed arm ran, as the runs of a group
// that follows a version tell them apart: "sidecar/caddy v2.11.9
// (caddy+access-log)".
func Sidecar(r *report.Results) string {
	s, m := sidecarOf(r), r.Environment.Mesh
	out := strings.TrimSpace(m.Name + " " + m.Version)
	if v := strings.Join(slices.DeleteFunc([]string{s.Sidecar, s.Candidate}, func(x string) bool { return x == "" }), " → "); v != "" {
		out += " (" + v + ")"
	}
	return out
}

// differences lists every field on which run b cannot join the group of
// run a: what gate.ComparableSettings and gate.ComparableScenarios refuse
// (target, settings, cores, nodes, a scenario's load; a scenario one run
// has and the other has not is no difference here), the CPU model, and
// the mesh fields.
func differences(a, b *report.Results, followVersion bool) []Difference {
	var out []Difference
	_, err := gate.ComparableSettings(a, b)
	out = append(out, fromGate(err)...)
	for _, d := range fromGate(gate.ComparableScenarios(a.Records, b.Records)) {
		if d.Field != "scenarios" {
			out = append(out, d)
		}
	}
	pairs := [][2]field{{{"environment.cpuModel", a.Environment.CPUModel}, {"", b.Environment.CPUModel}}}
	fa, fb := meshFields(a, followVersion), meshFields(b, followVersion)
	for i := range fa {
		pairs = append(pairs, [2]field{fa[i], fb[i]})
	}
	for _, p := range pairs {
		if p[0].value != p[1].value {
			out = append(out, Difference{Field: p[0].name, Here: p[1].value, There: p[0].value})
		}
	}
	return out
}

// fromGate turns the gate's joined incomparability errors into
// differences, b's value as Here.
func fromGate(err error) []Difference {
	if err == nil {
		return nil
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	var out []Difference
	for _, e := range errs {
		var ie *gate.IncomparableError
		if errors.As(e, &ie) {
			out = append(out, Difference{Field: ie.Field, Here: ie.Candidate, There: ie.Reference, Detail: ie.Detail})
			continue
		}
		out = append(out, Difference{Field: "settings", Detail: e.Error()})
	}
	return out
}

// Group is runs whose figures can be compared, oldest first.
type Group struct {
	// ID numbers the groups from 1, in the order of their oldest runs.
	ID int `json:"id"`
	// Runs are the group's runs, oldest first.
	Runs []report.Input `json:"-"`
	// Apart is, for every group but the first, why its runs are not in
	// the nearest earlier group (the one they differ from least), and
	// Nearest that group's ID.
	Apart   []Difference `json:"apart,omitempty"`
	Nearest int          `json:"nearest,omitempty"`
	// Series are the group's figures over its runs, per scenario and
	// metric, with their change points.
	Series []Series `json:"series"`
	// Notes say what was left out of the group's series, and where the
	// sidecar changed inside a group that follows a version.
	Notes []string `json:"notes,omitempty"`
}

// group sorts ins by start time and puts each run into the first group
// whose first run it does not differ from, or into a new one.
func group(ins []report.Input, followVersion bool) []*Group {
	ins = slices.Clone(ins)
	slices.SortStableFunc(ins, func(a, b report.Input) int { return a.Results.Started.Compare(b.Results.Started) })
	var groups []*Group
	for _, in := range ins {
		var apart []Difference
		nearest := 0
		placed := false
		for _, g := range groups {
			d := differences(g.Runs[0].Results, in.Results, followVersion)
			if len(d) == 0 {
				g.Runs = append(g.Runs, in)
				placed = true
				break
			}
			if nearest == 0 || len(d) < len(apart) {
				apart, nearest = d, g.ID
			}
		}
		if !placed {
			groups = append(groups, &Group{ID: len(groups) + 1, Runs: []report.Input{in}, Apart: apart, Nearest: nearest})
		}
	}
	return groups
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
