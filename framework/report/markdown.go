package report

import (
	"cmp"
	"fmt"
	"io"
	"strings"

	"github.com/meshbench/meshbench/framework/testbed"
)

// Markdown writes the report as GitHub-flavoured Markdown, for
// $GITHUB_STEP_SUMMARY and pull-request comments: the tables of the HTML
// report without its charts.
func Markdown(w io.Writer, ins []Input, o Options) error {
	if len(ins) == 0 {
		return fmt.Errorf("markdown report: no results")
	}
	p := newPage(ins, o)
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n%s.\n\n", p.Title, p.Subtitle)
	h := "##"
	if p.Multi {
		b.WriteString("## Side by side\n\n")
		b.WriteString("Medians over repeats, intervals in parentheses; ≈ marks a figure whose interval overlaps the reference's (the first column): within noise.\n\n")
		mdSide(&b, p)
		b.WriteString("### What differs between the runs\n\n")
		if len(p.Differs) == 0 {
			b.WriteString("Nothing in the environment or the settings.\n\n")
		} else {
			row(&b, append([]string{""}, p.Headers...)...)
			for _, d := range p.Differs {
				row(&b, append([]string{d.Name}, d.Values...)...)
			}
			b.WriteString("\n")
		}
		h = "###"
	}
	for _, r := range p.Runs {
		if p.Multi {
			fmt.Fprintf(&b, "## %s\n\n`%s`\n\n", r.Label, r.File)
		}
		mdRun(&b, h, r, p)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mdSide(b *strings.Builder, p page) {
	row(b, append([]string{"scenario", "figure"}, p.Headers...)...)
	for _, r := range p.Side {
		cs := []string{r.Scenario, r.Metric}
		for _, c := range r.Cells {
			t := c.Text
			if c.Noise {
				t += " ≈"
			}
			cs = append(cs, t)
		}
		row(b, cs...)
	}
	b.WriteString("\n")
	for _, r := range p.Runs {
		if r.CPULegend() != "" {
			fmt.Fprintf(b, "%s a run's CPU figures include runs whose CPU figures are not valid: its own CPU table says how many, and why.\n\n", CPUMark)
			break
		}
	}
}

func mdRun(b *strings.Builder, h string, r run, p page) {
	word, lines := r.Verdict()
	fmt.Fprintf(b, "%s Verdict: %s\n\n", h, word)
	for _, l := range lines {
		fmt.Fprintf(b, "- %s\n", l)
	}
	b.WriteString("\n")
	fmt.Fprintf(b, "%s Latency and throughput\n\nMedians over repeats, intervals in parentheses; deltas and loss are paired repeat by repeat, ≈ where the interval holds 0 (within noise).\n\n", h)
	mdLatency(b, r.Comparisons)
	fmt.Fprintf(b, "%s CPU and memory\n\nCPU in millicores over the measured window; mesh cores are sidecars, node proxies, waypoints and control plane; sidecar:app per pod divides each sidecar by the app beside it.\n\n", h)
	mdResources(b, r)
	mdProcesses(b, r)
	if len(r.Costs) > 0 {
		fmt.Fprintf(b, "%s Cost of the mesh\n\n```\n%s\n```\n\n", h, strings.Join(p.Formula, "\n"))
		mdCost(b, r.Costs, p.Prices.Currency)
	}
	fmt.Fprintf(b, "%s Path proof\n\n", h)
	mdProofs(b, r.Proofs)
	fmt.Fprintf(b, "%s Invalid runs and warnings\n\n", h)
	if len(r.Problems) == 0 {
		b.WriteString("None.\n\n")
	} else {
		row(b, "run", "kind", "reason")
		for _, pr := range r.Problems {
			kind := pr.Kind()
			if pr.Invalid {
				kind = "**INVALID**"
			}
			row(b, pr.Run, kind, pr.Reason)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(b, "%s Environment\n\n", h)
	row(b, "", "")
	for _, e := range envRows(r.Results) {
		row(b, e[0], e[1])
	}
	b.WriteString("\n")
}

func mdLatency(b *strings.Builder, cs []Comparison) {
	row(b, "scenario", "path", "p50 base ms", "p50 mesh ms", "Δ p50 ms", "Δ p50 %", "p99 base ms", "p99 mesh ms", "Δ p99 %",
		"p99.9 base ms", "p99.9 mesh ms", "Δ p99.9 ms", "mean base ms", "mean mesh ms", "req/s base", "req/s mesh", "throughput loss %", "errors")
	for _, c := range cs {
		row(b, c.Scenario(), string(c.Path), num(c.Baseline.P50, 3), num(c.Meshed.P50, 3), delta(c.P50Delta, 3), delta(c.P50Pct, 0),
			num(c.Baseline.P99, 3), num(c.Meshed.P99, 3), delta(c.P99Pct, 0), num(c.Baseline.P999, 3), num(c.Meshed.P999, 3), delta(c.P999Delta, 3),
			mean(c.Baseline), mean(c.Meshed), num(c.Baseline.QPS, 0), num(c.Meshed.QPS, 0), delta(c.QPSLossPct, 1), fmt.Sprint(c.Baseline.Errors+c.Meshed.Errors))
	}
	b.WriteString("\n")
}

func mdResources(b *strings.Builder, r run) {
	roles, rows := r.resourceRows()
	head := []string{"scenario", "arm"}
	for _, role := range roles {
		head = append(head, string(role)+" m")
	}
	head = append(head, "mesh cores", "mesh cores per 1k req/s", "mesh RSS MiB", "sidecar:app pooled", "sidecar:app per pod", "busiest node CPU %")
	row(b, head...)
	for _, x := range rows {
		cs := []string{x.Scenario, x.Arm}
		for _, role := range roles {
			cs = append(cs, x.CPU[role])
		}
		row(b, append(cs, x.MeshCores, x.MeshPer1k, x.MeshRSS, x.Ratio, x.PodRatio, x.Node)...)
	}
	b.WriteString("\n")
	head = []string{"scenario", "arm"}
	for _, role := range roles {
		head = append(head, string(role)+" CPU-ms/1k req", string(role)+" RSS idle → load MiB")
	}
	row(b, head...)
	for _, x := range rows {
		cs := []string{x.Scenario, x.Arm}
		for _, role := range roles {
			cs = append(cs, x.Per1k[role], x.RSS[role])
		}
		row(b, cs...)
	}
	b.WriteString("\n")
	if l := r.CPULegend(); l != "" {
		fmt.Fprintf(b, "%s\n\n", l)
	}
}

// mdProcesses writes every process or container and every node, folded.
func mdProcesses(b *strings.Builder, r run) {
	procs, nodes := r.processRows()
	b.WriteString("<details><summary>Every process or container, and every node</summary>\n\n")
	row(b, "scenario", "arm", "process or container", "role", "pod", "CPU m", "busiest thread m", "RSS under load MiB")
	for _, p := range procs {
		row(b, p.Scenario, p.Arm, p.Name, p.Role, dash(p.Pod), span(p.CPU, 0), span(p.Thread, 0), span(p.RSS, 1))
	}
	b.WriteString("\n")
	row(b, "scenario", "arm", "node", "cores", "CPU %")
	for _, n := range nodes {
		row(b, n.Scenario, n.Arm, n.Node, fmt.Sprint(n.Cores), span(n.Util, 0))
	}
	b.WriteString("\n</details>\n\n")
}

func mdCost(b *strings.Builder, ks []Cost, cur string) {
	row(b, "scenario", "mesh cores", "achieved req/s", "mesh cores per 1k req/s", "mesh GiB", "vCPU-h per 1M req", "cost per 1M req", "monthly at average rate", "monthly at peak rate")
	for _, k := range ks {
		m := ""
		if k.CPUInvalid {
			m = CPUMark
		}
		row(b, k.Scenario, fmt.Sprintf("%.3f", k.MeshCores)+m, fmt.Sprintf("%.0f", k.RPS), marked(span(k.MeshCoresPer1kRPS, 3), m), fmt.Sprintf("%.3f", k.MeshGiB),
			marked(span(k.VCPUHoursPer1M, 4), m), money(k.Per1M.Median, cur)+m, money(k.MonthlyAverage, cur)+m, money(k.MonthlyPeak, cur)+m)
	}
	b.WriteString("\n")
}

func mdProofs(b *strings.Builder, ps []Proof) {
	for _, p := range ps {
		note := ""
		if p.Invalid > 0 {
			note = fmt.Sprintf(", **%d INVALID**", p.Invalid)
		}
		fmt.Fprintf(b, "%s (%d runs%s):\n\n", p.Title(), p.Runs, note)
		cols := []string{"SRC", "DST", "SECURED", "VERIFIED PEER", "REQUESTS"}
		if p.Connections() {
			cols = append(cols, "CONNECTIONS")
		}
		row(b, cols...)
		for _, e := range p.Edges {
			cells := []string{e.Src, e.Dst, secured(e), dash(e.Peer), fmt.Sprint(e.Requests)}
			if p.Connections() {
				cells = append(cells, e.ConnectionsPerRequest())
			}
			row(b, cells...)
		}
		b.WriteString("\n")
	}
}

func secured(e testbed.Edge) string {
	if e.Secured {
		return "yes (" + cmp.Or(e.Mechanism, "mTLS") + ")"
	}
	return "no"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// row writes one Markdown table row, and the separator after the first.
func row(b *strings.Builder, cells ...string) {
	first := b.Len() == 0 || strings.HasSuffix(b.String(), "\n\n") || strings.HasSuffix(b.String(), ":\n\n")
	for i, c := range cells {
		cells[i] = strings.ReplaceAll(strings.ReplaceAll(c, "|", `\|`), "\n", " ")
	}
	fmt.Fprintf(b, "| %s |\n", strings.Join(cells, " | "))
	if first {
		fmt.Fprintf(b, "|%s\n", strings.Repeat(" --- |", len(cells)))
	}
}
