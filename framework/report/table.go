package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/meshbench/meshbench/framework/labels"
	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/stats"
	"github.com/meshbench/meshbench/framework/testbed"
)

// PrintSummary writes the latency/throughput table the seed articles use,
// then CPU and memory per role. Every number is a median over repeats; an
// interval follows where there was more than one repeat. A CPU figure
// that includes runs whose CPU is not valid is marked (CPUMark), with a
// legend under the table.
func PrintSummary(w io.Writer, cs []Comparison) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tpath\tp50 base ms\tp50 mesh ms\tΔ p50 ms\tΔ p50 %\tp99 base ms\tp99 mesh ms\treq/s base\treq/s mesh\tthroughput loss %\terrors\t")
	for _, c := range cs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t\n", c.Scenario(), c.Path,
			num(c.Baseline.P50, 3), num(c.Meshed.P50, 3), span(c.P50Delta, 3), span(c.P50Pct, 0),
			num(c.Baseline.P99, 3), num(c.Meshed.P99, 3),
			num(c.Baseline.QPS, 0), num(c.Meshed.QPS, 0), span(c.QPSLossPct, 0), c.Baseline.Errors+c.Meshed.Errors)
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tarm\tloadgen m\tapp m\tsidecar m\tmesh cores\tsidecar:app\tper pod\tsidecar CPU-ms/1k req\tapp CPU-ms/1k req\tsidecar RSS idle→load MiB\tnode CPU %\t")
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
			m := cpuMark(a.s)
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", c.Scenario(), a.name,
				marked(role(a.s.CPU, measure.RoleLoadgen, 0), m), marked(role(a.s.CPU, measure.RoleApp, 0), m), marked(role(a.s.CPU, measure.RoleSidecar, 0), m),
				marked(num(a.s.MeshCores, 3), m), marked(ratio, m), marked(pod, m), marked(role(a.s.CPUPer1k, measure.RoleSidecar, 1), m),
				marked(role(a.s.CPUPer1k, measure.RoleApp, 1), m), rss, marked(num(a.s.NodeUtil, 0), m))
		}
	}
	_ = tw.Flush()
	if l := CPULegend(cs); l != "" {
		fmt.Fprintln(w, l)
	}
	printSteps(w, cs)
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

// ExtraHop is the cost of one more meshed hop at one point of a sweep:
// two-hop minus one-hop, from two comparisons whose labels differ only in
// the benchmark and the path.
type ExtraHop struct {
	// Key is the labels the two share, e.g. "c=8".
	Key string
	// OneHop and TwoHop are the comparisons subtracted.
	OneHop, TwoHop  Comparison
	P50DeltaMs      float64 // two-hop's Δ p50 minus one-hop's, ms
	P99DeltaMs      float64 // the same for p99
	SidecarCPUPer1k float64 // two-hop's sidecar CPU-ms per 1k requests minus one-hop's
}

// ExtraHops pairs every two-hop comparison with its one-hop twin. The
// figures are differences of medians over repeats: the paths were not
// measured as pairs, so no interval is claimed for them.
func ExtraHops(cs []Comparison) []ExtraHop {
	key := func(c Comparison) string {
		return c.Labels.Without(labels.Benchmark, labels.Path).String()
	}
	one := map[string]Comparison{}
	for _, c := range cs {
		if c.Path == testbed.OneHop && len(c.Problems) == 0 {
			one[key(c)] = c
		}
	}
	var out []ExtraHop
	for _, c := range cs {
		o, ok := one[key(c)]
		if c.Path != testbed.TwoHop || !ok || len(c.Problems) > 0 {
			continue
		}
		e := ExtraHop{Key: key(c), OneHop: o, TwoHop: c,
			P50DeltaMs: c.P50Delta.Median - o.P50Delta.Median, P99DeltaMs: c.P99Delta.Median - o.P99Delta.Median}
		e.SidecarCPUPer1k = c.Meshed.CPUPer1k[measure.RoleSidecar].Median - o.Meshed.CPUPer1k[measure.RoleSidecar].Median
		out = append(out, e)
	}
	return out
}

// PrintExtraHops writes the cost of one more meshed hop, when both paths
// were measured at the same points.
func PrintExtraHops(w io.Writer, prefix string, es []ExtraHop) {
	if len(es) == 0 {
		return
	}
	fmt.Fprintf(w, "%scost of one more meshed hop (two-hop minus one-hop; differences of medians)\n", prefix)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "at\tΔ p50 one-hop ms\tΔ p50 two-hop ms\textra hop Δ p50 ms\textra hop Δ p99 ms\textra hop sidecar CPU-ms/1k req\t")
	for _, e := range es {
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.3f\t%.3f\t%.1f\t\n", e.Key, e.OneHop.P50Delta.Median, e.TwoHop.P50Delta.Median, e.P50DeltaMs, e.P99DeltaMs, e.SidecarCPUPer1k)
	}
	_ = tw.Flush()
}
