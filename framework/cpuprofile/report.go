package cpuprofile

import (
	"fmt"
	"io"
	"strings"
)

// Report is why a gate failed on CPU, as the results file keeps it: the
// profiles of every point where it did, or why none was taken.
type Report struct {
	// Points are the points profiled, in the order they ran.
	Points []Point `json:"points,omitempty"`
	// None says why no profile was taken where the gate failed on CPU,
	// e.g. "no CPU profile: nginx is not a Go program with a pprof
	// endpoint"; empty when profiles were taken.
	None string `json:"none,omitempty"`
}

// Point is the differential profile of one gated point.
type Point struct {
	// Scenario is the gate's scenario (its labels), and Metric the gated
	// metric that failed there.
	Scenario string `json:"scenario"`
	Metric   string `json:"metric"`
	// Seconds is how long each sidecar was profiled: the measured window
	// of one extra round, run after the point was decided and not scored.
	Seconds float64 `json:"seconds"`
	// Reference and Candidate are the arms' merged profiles.
	Reference Arm `json:"reference"`
	Candidate Arm `json:"candidate"`
	// Flat and Cumulative are the top TopN functions by the change of
	// their share of the reference's sidecar CPU per request
	// (DiffPerRequest).
	Flat       []Row `json:"flat"`
	Cumulative []Row `json:"cumulative"`
}

// Arm is one arm's profile: its sidecars' profiles merged.
type Arm struct {
	// Spec is the arm's sidecar as the flag wrote it, e.g. "caddy+access-log".
	Spec string `json:"spec"`
	// File is the merged profile's file name, in the results directory.
	File string `json:"file"`
	// Sidecars is how many profiles were merged; Samples their CPU
	// samples; Requests what the arm served in the profiled window.
	Sidecars int   `json:"sidecars"`
	Samples  int64 `json:"samples"`
	Requests int64 `json:"requests"`
}

// Markdown writes r for the gate's summary: per point, the two profiles
// and the flat and cumulative differential tables; or why there is none.
// It writes nothing for an empty report.
func (r *Report) Markdown(w io.Writer) error {
	if r == nil || (len(r.Points) == 0 && r.None == "") {
		return nil
	}
	var b strings.Builder
	b.WriteString("\n### Where the CPU went\n\n")
	if r.None != "" {
		fmt.Fprintf(&b, "%s.\n", r.None)
	}
	for _, p := range r.Points {
		fmt.Fprintf(&b, "%s\n\n", p.Sentence("`"))
		table(&b, "function (self)", p.Flat)
		table(&b, "function (with what it calls)", p.Cumulative)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Sentence says what was profiled at p, and where its files are, each
// file name between quote marks.
func (p Point) Sentence(quote string) string {
	return fmt.Sprintf("%s failed on %s. One extra round there, after the decision and not scored, profiled each arm's sidecars over its %.0f s window: "+
		"reference %s, %d sidecars, %d samples, %d requests (%s%s%s); candidate %s, %d sidecars, %d samples, %d requests (%s%s%s). "+
		"Shares are of the reference's sidecar CPU per request: code both run alike keeps its share, "+
		"and the candidate's shares sum to its CPU per request over the reference's. Differences are in percentage points.",
		p.Scenario, p.Metric, p.Seconds, p.Reference.Spec, p.Reference.Sidecars, p.Reference.Samples, p.Reference.Requests, quote, p.Reference.File, quote,
		p.Candidate.Spec, p.Candidate.Sidecars, p.Candidate.Samples, p.Candidate.Requests, quote, p.Candidate.File, quote)
}

func table(b *strings.Builder, head string, rows []Row) {
	fmt.Fprintf(b, "| %s | reference | candidate | difference |\n| --- | ---: | ---: | ---: |\n", head)
	for _, r := range rows {
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", r.Function, Pct(r.Reference), Pct(r.Candidate), PP(r.Difference))
	}
	b.WriteString("\n")
}

// Pct writes a share as a percentage, "12.3 %".
func Pct(share float64) string { return fmt.Sprintf("%.1f %%", share*100) }

// PP writes a difference of shares in percentage points, signed: "+3.1 pp".
func PP(d float64) string { return fmt.Sprintf("%+.1f pp", d*100) }
