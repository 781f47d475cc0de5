package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/stats"
)

// PrintSummary writes the latency/throughput table the seed articles use,
// then CPU and memory per role. Every number is a median over repeats; an
// interval follows where there was more than one repeat.
func PrintSummary(w io.Writer, cs []Comparison) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "path\tc\tp50 base ms\tp50 mesh ms\tΔ p50 ms\tΔ p50 %\tp99 base ms\tp99 mesh ms\treq/s base\treq/s mesh\tthroughput loss %\terrors\t")
	for _, c := range cs {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t\n", c.Path, c.Concurrency,
			num(c.Baseline.P50, 3), num(c.Meshed.P50, 3), span(c.P50Delta, 3), span(c.P50Pct, 0),
			num(c.Baseline.P99, 3), num(c.Meshed.P99, 3),
			num(c.Baseline.QPS, 0), num(c.Meshed.QPS, 0), span(c.QPSLossPct, 0), c.Baseline.Errors+c.Meshed.Errors)
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "path\tc\tarm\tloadgen m\tapp m\tsidecar m\tmesh cores\tsidecar:app\tper pod\tsidecar CPU-ms/1k req\tapp CPU-ms/1k req\tsidecar RSS idle→load MiB\tnode CPU %\t")
	for _, c := range cs {
		for _, a := range []struct {
			name string
			s    ArmStats
		}{{"baseline", c.Baseline}, {"meshed", c.Meshed}} {
			ratio, pod := "-", "-"
			if a.name == "meshed" && c.ProxyAppRatio.N > 0 {
				ratio = fmt.Sprintf("%.2f×", c.ProxyAppRatio.Median)
			}
			if a.name == "meshed" && c.PodSidecarAppRatio.N > 0 {
				pod = fmt.Sprintf("%.2f×", c.PodSidecarAppRatio.Median)
			}
			rss := "-"
			if s, ok := a.s.RSS[measure.RoleSidecar]; ok {
				rss = fmt.Sprintf("%.0f→%.0f", a.s.IdleRSS[measure.RoleSidecar].Median, s.Median)
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", c.Path, c.Concurrency, a.name,
				role(a.s.CPU, measure.RoleLoadgen, 0), role(a.s.CPU, measure.RoleApp, 0), role(a.s.CPU, measure.RoleSidecar, 0),
				num(a.s.MeshCores, 3), ratio, pod, role(a.s.CPUPer1k, measure.RoleSidecar, 1), role(a.s.CPUPer1k, measure.RoleApp, 1), rss, num(a.s.NodeUtil, 0))
		}
	}
	_ = tw.Flush()
	for _, c := range cs {
		for _, p := range c.Problems {
			fmt.Fprintf(w, "%s: %s\n", c.Scenario(), p)
		}
		if n := c.Baseline.Invalid + c.Meshed.Invalid; n > 0 {
			fmt.Fprintf(w, "%s: %d invalid run(s) included; see the results file for reasons\n", c.Scenario(), n)
		}
	}
}

// num prints a median.
func num(s stats.Summary, prec int) string {
	if s.N == 0 {
		return "-"
	}
	return fmt.Sprintf("%.*f", prec, s.Median)
}

// span prints a median with its interval when there is one: "0.16 (0.12–0.21)".
func span(s stats.Summary, prec int) string {
	if s.N == 0 {
		return "-"
	}
	if s.N == 1 || s.Lo == s.Hi {
		return fmt.Sprintf("%.*f", prec, s.Median)
	}
	return fmt.Sprintf("%.*f (%.*f–%.*f)", prec, s.Median, prec, s.Lo, prec, s.Hi)
}

func role(m map[measure.Role]stats.Summary, r measure.Role, prec int) string {
	s, ok := m[r]
	if !ok {
		return "-"
	}
	return num(s, prec)
}
