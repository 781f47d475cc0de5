// Package cpuprofile says where the CPU went when an upgrade gate failed
// on CPU: it merges the CPU profiles of an arm's sidecars, and compares the
// reference's with the candidate's, function by function, as shares of
// each arm's samples (a differential top-N).
package cpuprofile

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/google/pprof/profile"
)

// TopN is how many functions a differential table lists.
const TopN = 10

// Row is one function of a differential table: its share of the
// reference's and the candidate's CPU samples (0–1), and the candidate's
// minus the reference's.
type Row struct {
	// Function is the function's name, as the profile symbolises it.
	Function string `json:"function"`
	// Reference is its share of the reference's CPU, a fraction (1 is all).
	Reference float64 `json:"reference"`
	// Candidate is its share of the candidate's CPU, a fraction; for
	// DiffPerRequest, its CPU per request over the reference's CPU per
	// request, so that the column may sum past 1.
	Candidate float64 `json:"candidate"`
	// Difference is Candidate minus Reference, a fraction.
	Difference float64 `json:"difference"`
}

// Kind is what a share counts: Flat is the CPU spent in the function
// itself (the leaf of a sample's stack), Cumulative the CPU spent in it or
// in anything it called (each stack counts a function once).
type Kind int

// The kinds of share.
const (
	Flat Kind = iota
	Cumulative
)

// String is the kind's name: "flat" or "cumulative".
func (k Kind) String() string {
	if k == Cumulative {
		return "cumulative"
	}
	return "flat"
}

// Parse reads a profile as Go writes it (gzipped protobuf).
func Parse(data []byte) (*profile.Profile, error) {
	p, err := profile.Parse(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("cpuprofile: parse: %w", err)
	}
	return p, nil
}

// Merge merges the profiles of one arm's sidecars into one.
func Merge(ps []*profile.Profile) (*profile.Profile, error) {
	if len(ps) == 0 {
		return nil, fmt.Errorf("cpuprofile: merge: no profiles")
	}
	p, err := profile.Merge(ps)
	if err != nil {
		return nil, fmt.Errorf("cpuprofile: merge %d profiles: %w", len(ps), err)
	}
	return p, nil
}

// Write writes p as Go writes profiles (gzipped protobuf).
func Write(w io.Writer, p *profile.Profile) error {
	if err := p.Write(w); err != nil {
		return fmt.Errorf("cpuprofile: write: %w", err)
	}
	return nil
}

// Shares is each function's share (0–1) of p's CPU: the value of its
// "cpu" sample type (else its last one), flat or cumulative. A profile
// with no CPU has no shares.
func Shares(p *profile.Profile, k Kind) map[string]float64 {
	out, total := cpu(p, k)
	if total == 0 {
		return map[string]float64{}
	}
	for fn := range out {
		out[fn] /= total
	}
	return out
}

// cpu is each function's CPU in p, flat or cumulative, in the unit of its
// "cpu" sample type (else its last one), and p's total.
func cpu(p *profile.Profile, k Kind) (map[string]float64, float64) {
	idx := len(p.SampleType) - 1
	for i, st := range p.SampleType {
		if st.Type == "cpu" {
			idx = i
		}
	}
	out := map[string]float64{}
	var total float64
	if idx < 0 {
		return out, 0
	}
	for _, s := range p.Sample {
		v := float64(s.Value[idx])
		total += v
		for _, fn := range functions(s, k) {
			out[fn] += v
		}
	}
	return out, total
}

// functions are the names a sample counts towards: its leaf (the innermost
// line of its first location, where inlined calls are resolved), or every
// function on its stack once.
func functions(s *profile.Sample, k Kind) []string {
	var names []string
	for _, loc := range s.Location {
		for _, l := range loc.Line {
			if l.Function == nil {
				continue
			}
			if k == Flat {
				return []string{l.Function.Name}
			}
			if !slices.Contains(names, l.Function.Name) {
				names = append(names, l.Function.Name)
			}
		}
	}
	if k == Flat && len(s.Location) > 0 {
		return []string{fmt.Sprintf("0x%x", s.Location[0].Address)}
	}
	return names
}

// Diff compares the shares of the reference's and the candidate's
// profile, kind k, each of its own CPU, and returns the n functions whose
// share moved most (by absolute difference; ties by name), largest first.
func Diff(ref, cand *profile.Profile, k Kind, n int) []Row {
	return top(Shares(ref, k), Shares(cand, k), n)
}

// DiffPerRequest is Diff on CPU per request: the reference's profile
// covered refRequests requests and the candidate's candRequests, and
// every share is of the reference's CPU per request. Code both run alike
// keeps its share, the candidate's column sums to its CPU per request
// over the reference's, and the differences add up to the regression:
// the code a candidate added stands out instead of every other share
// shrinking around it.
func DiffPerRequest(ref, cand *profile.Profile, refRequests, candRequests int64, k Kind, n int) []Row {
	r, refTotal := cpu(ref, k)
	c, _ := cpu(cand, k)
	if refTotal == 0 || refRequests <= 0 || candRequests <= 0 {
		return nil
	}
	for fn := range r {
		r[fn] /= refTotal
	}
	scale := float64(refRequests) / float64(candRequests) / refTotal
	for fn := range c {
		c[fn] *= scale
	}
	return top(r, c, n)
}

// top is the n functions whose share moved most from r to c.
func top(r, c map[string]float64, n int) []Row {
	var rows []Row
	for fn := range r {
		rows = append(rows, Row{Function: fn, Reference: r[fn], Candidate: c[fn], Difference: c[fn] - r[fn]})
	}
	for fn := range c {
		if _, ok := r[fn]; !ok {
			rows = append(rows, Row{Function: fn, Candidate: c[fn], Difference: c[fn]})
		}
	}
	slices.SortFunc(rows, func(a, b Row) int {
		return cmp.Or(cmp.Compare(math.Abs(b.Difference), math.Abs(a.Difference)), cmp.Compare(a.Function, b.Function))
	})
	return rows[:min(n, len(rows))]
}
