package report

import (
	"fmt"
	"maps"
	"slices"

	"github.com/meshbench/meshbench/framework/metric"
	"github.com/meshbench/meshbench/framework/stats"
)

// recordScenario is the Comparison.Scenario of the comparison a record
// belongs to; keep the two in step.
func recordScenario(r Record) string { return fmt.Sprintf("%s/c=%d", r.Benchmark, r.Concurrency) }

// procRow is one process or container of one arm of one scenario, its
// figures summarised over repeats.
type procRow struct {
	Scenario, Arm, Name, Role, Pod string
	CPU, RSS, Thread               stats.Summary // millicores, MiB under load, busiest thread millicores
}

// nodeRow is one node's CPU utilisation in one arm of one scenario.
type nodeRow struct {
	Scenario, Arm, Node string
	Util                stats.Summary // percent
	Cores               int
}

// processRows lists every process or container measured, per scenario and
// arm, in the records' order.
func (r run) processRows() ([]procRow, []nodeRow) {
	type key struct{ scenario, arm, name string }
	var order []key
	rows := map[key]*procRow{}
	cpu, rss, thread := map[key][]float64{}, map[key][]float64{}, map[key][]float64{}
	var norder []key
	util, cores := map[key][]float64{}, map[key]int{}
	for _, rec := range r.Results.Records {
		sc, arm := recordScenario(rec), string(rec.Arm)
		for _, u := range rec.Resources.Usage {
			k := key{sc, arm, u.Name}
			if rows[k] == nil {
				rows[k] = &procRow{Scenario: sc, Arm: arm, Name: u.Name, Role: string(u.Role), Pod: u.Pod}
				order = append(order, k)
			}
			cpu[k] = append(cpu[k], u.MilliCores)
			rss[k] = append(rss[k], metric.MiB(u.LoadRSS))
			thread[k] = append(thread[k], u.MaxThreadMilliCores)
		}
		for _, n := range slices.Sorted(maps.Keys(rec.Resources.NodeUtilisation)) {
			k := key{sc, arm, n}
			if _, ok := util[k]; !ok {
				norder = append(norder, k)
			}
			util[k] = append(util[k], rec.Resources.NodeUtilisation[n])
			cores[k] = rec.Resources.Cores[n]
		}
	}
	procs := make([]procRow, 0, len(order))
	for _, k := range order {
		p := rows[k]
		p.CPU, p.RSS, p.Thread = stats.Summarize(cpu[k]), stats.Summarize(rss[k]), stats.Summarize(thread[k])
		procs = append(procs, *p)
	}
	nodes := make([]nodeRow, 0, len(norder))
	for _, k := range norder {
		nodes = append(nodes, nodeRow{Scenario: k.scenario, Arm: k.arm, Node: k.name, Util: stats.Summarize(util[k]), Cores: cores[k]})
	}
	return procs, nodes
}

// mean is the arm's mean latency in ms over every repeat's requests, from
// the merged histogram: the figure Locust users read.
func mean(a ArmStats) string {
	if a.Merged == nil || a.Merged.Count == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f", a.Merged.Avg*1e3)
}
