package history

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/meshbench/meshbench/framework/report"
)

// Method is the one-line account of how change points are found.
const Method = "E-divisive means with Student's t-test, as Apache Otava (formerly Hunter) finds change points (Fleming et al., arXiv 2301.03034)"

// Markdown writes the history: the change points, then each group with
// what it holds, why it is apart, its runs and its series.
func (h *History) Markdown(w io.Writer) error {
	b := &strings.Builder{}
	fmt.Fprintf(b, "# meshbench history\n\n%d run(s) in %d group(s). %s: p ≤ %g, window %d runs", h.Runs(), len(h.Groups), Method, h.Options.PValue, h.Options.Window)
	if h.FollowVersion {
		b.WriteString("; each group follows its mesh across sidecar versions")
	}
	b.WriteString(".\n\n")
	h.changeTable(b)
	for _, s := range h.Skipped {
		fmt.Fprintf(b, "- skipped %s\n", s)
	}
	for _, g := range h.Groups {
		g.markdown(b)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// changeTable is every change point of every group.
func (h *History) changeTable(b *strings.Builder) {
	b.WriteString("## Change points\n\n")
	n := 0
	for _, g := range h.Groups {
		for _, s := range g.Series {
			for _, c := range s.Changes {
				if n == 0 {
					b.WriteString("| group | scenario | metric | first run after | before → after | change | 95 % interval | p-value |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n")
				}
				n++
				fmt.Fprintf(b, "| %d | %s | %s (%s) | run %d: %s (%s) | %s → %s | %s | %s | %.2g |\n",
					g.ID, s.Scenario, s.Metric.Label(), s.Metric.Unit(), c.Run+1, filepath.Base(c.File), stamp(c.Started),
					num(c.MeanBefore), num(c.MeanAfter), changeWords(c), interval(c), c.PValue)
			}
		}
	}
	if n == 0 {
		b.WriteString("No change points.\n")
	}
	b.WriteString("\n")
}

func changeWords(c Change) string {
	s := fmt.Sprintf("%+.1f %%", c.Percent)
	if c.Worse {
		return "**" + s + " worse**"
	}
	return s + " better"
}

func interval(c Change) string {
	if c.Interval == nil {
		return "—" // a side with one run, or a value ≤ 0
	}
	return fmt.Sprintf("%+.1f %% … %+.1f %%", (c.Interval.Lo-1)*100, (c.Interval.Hi-1)*100)
}

func (g *Group) markdown(b *strings.Builder) {
	first := g.Runs[0].Results
	fmt.Fprintf(b, "## Group %d: %d run(s), %s\n\n", g.ID, len(g.Runs), first.Environment.Target)
	for _, line := range g.Holds() {
		fmt.Fprintf(b, "- %s\n", line)
	}
	if len(g.Apart) > 0 {
		var ds []string
		for _, d := range g.Apart {
			ds = append(ds, d.String())
		}
		fmt.Fprintf(b, "- **apart from group %d**: %s\n", g.Nearest, strings.Join(ds, "; "))
	}
	b.WriteString("\n| run | started (UTC) | file | sidecar |\n| --- | --- | --- | --- |\n")
	for i, in := range g.Runs {
		fmt.Fprintf(b, "| %d | %s | %s | %s |\n", i+1, stamp(in.Results.Started), filepath.Base(in.File), Sidecar(in.Results))
	}
	b.WriteString("\n")
	for _, n := range g.Notes {
		fmt.Fprintf(b, "- %s\n", n)
	}
	if len(g.Series) == 0 {
		b.WriteString("No series: no scenario has a figure.\n\n")
		return
	}
	b.WriteString("\n| scenario | metric | runs | oldest | newest | change points |\n| --- | --- | --- | --- | --- | --- |\n")
	for _, s := range g.Series {
		var at []string
		for _, c := range s.Changes {
			at = append(at, fmt.Sprintf("run %d (%+.1f %%)", c.Run+1, c.Percent))
		}
		fmt.Fprintf(b, "| %s | %s (%s) | %d | %s | %s | %s |\n", s.Scenario, s.Metric.Label(), s.Metric.Unit(), len(s.Points),
			num(s.Points[0].Value), num(s.Points[len(s.Points)-1].Value), orNone(strings.Join(at, ", ")))
	}
	b.WriteString("\n")
}

// Holds says what the group's runs share: target, machine, mesh and
// settings, one line each.
func (g *Group) Holds() []string {
	r := g.Runs[0].Results
	e := r.Environment
	mesh := "mesh " + Sidecar(r)
	if len(g.Runs) > 1 && Sidecar(g.Runs[len(g.Runs)-1].Results) != Sidecar(r) {
		mesh = "mesh " + e.Mesh.Name + ", followed across sidecars from " + Sidecar(r)
	}
	return []string{
		fmt.Sprintf("target %s: %d core(s), %s, %d node(s)", e.Target, e.Cores, orNone(e.CPUModel), e.Nodes),
		mesh,
		"settings: " + settingsLine(r),
		fmt.Sprintf("%d scenario(s): %s", len(g.scenarios()), orNone(strings.Join(g.scenarios(), ", "))),
	}
}

// settingsLine lists the settings a group's runs share.
func settingsLine(r *report.Results) string {
	var m map[string]any
	if data, err := json.Marshal(r.Settings); err == nil {
		_ = json.Unmarshal(data, &m) // settings that are not an object show as none
	}
	var parts []string
	for _, k := range []string{"concurrency", "duration", "warmup", "qps", "protocol", "responseSize", "requestSize", "placement", "loadgens"} {
		v, ok := m[k]
		if !ok {
			continue
		}
		if f, isNum := v.(float64); isNum && (k == "duration" || k == "warmup") {
			v = time.Duration(f)
		}
		parts = append(parts, fmt.Sprintf("%s %v", k, v))
	}
	return orNone(strings.Join(parts, ", "))
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04") }

// num prints a figure with four significant digits.
func num(v float64) string { return fmt.Sprintf("%.4g", v) }
