package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/meshbench/meshbench/framework/labels"
	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/metric"
)

// CSVColumns are the fixed columns of the CSV export, in order. Between
// "benchmark" and "concurrency" come one "label:KEY" column per label key
// of any record (benchmark and arm aside); after "max_ms", per role of any
// record, "cpu_millicores:ROLE", "cpu_ms_per_1k:ROLE" and "rss_mib:ROLE".
var CSVColumns = []string{
	"run_id", "target", "mesh", "mesh_version", "scenario", "benchmark",
	"concurrency", "path", "arm", "repeat", "rate_asked_rps", "throughput_rps", "requests", "errors",
	"p50_ms", "p90_ms", "p99_ms", "p999_ms", "max_ms",
	"valid", "invalid", "warnings", "beyond", "cpu_valid", "cpu_invalid",
}

// CSV writes one row per run (record) of every input: where it sits in the
// sweep, what it achieved, its latencies in ms (as the comparisons read
// them), its CPU and memory per role, and whether it is valid. Numbers are
// printed in full ('g', shortest exact form), so a spreadsheet or a script
// reads back the values the results file holds. A closed-loop run has no
// asked rate: its rate_asked_rps is empty. cpu_valid is false, and
// cpu_invalid says why, for a run whose CPU figures alone are not valid
// (testbed.Run.CPUInvalid): its cpu_ columns are diluted by idle time.
func CSV(w io.Writer, ins []Input) error {
	if len(ins) == 0 {
		return fmt.Errorf("csv export: no results")
	}
	keys, roles := csvLabelKeys(ins), csvRoles(ins)
	head := slices.Clone(CSVColumns[:6])
	for _, k := range keys {
		head = append(head, "label:"+k)
	}
	head = append(head, CSVColumns[6:19]...)
	for _, r := range roles {
		head = append(head, "cpu_millicores:"+string(r), "cpu_ms_per_1k:"+string(r), "rss_mib:"+string(r))
	}
	head = append(head, CSVColumns[19:]...)
	cw := csv.NewWriter(w)
	if err := cw.Write(head); err != nil {
		return fmt.Errorf("csv export: %w", err)
	}
	for _, in := range ins {
		for _, rec := range in.Results.Records {
			if err := cw.Write(csvRow(in.Results, rec, keys, roles)); err != nil {
				return fmt.Errorf("csv export: %s: %w", in.File, err)
			}
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("csv export: %w", err)
	}
	return nil
}

// csvRow is one record's row, in the order of CSV's header.
func csvRow(res *Results, rec Record, keys []string, roles []measure.Role) []string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	l := rec.Load
	key := rec.key()
	row := []string{res.RunID(), res.Environment.Target, res.Environment.Mesh.Name, res.Environment.Mesh.Version, key.String(), rec.Benchmark}
	for _, k := range keys {
		row = append(row, key.Value(k))
	}
	asked := ""
	if l.TargetQPS > 0 {
		asked = f(l.TargetQPS)
	}
	row = append(row, strconv.Itoa(rec.Concurrency), string(rec.Path), string(rec.Arm), strconv.Itoa(rec.Repeat),
		asked, f(l.AchievedQPS), strconv.FormatInt(l.Requests, 10), strconv.FormatInt(l.Errors, 10),
		f(l.Percentile(50)*1e3), f(l.Percentile(90)*1e3), f(l.Percentile(99)*1e3), f(l.Percentile(99.9)*1e3), f(l.Max()*1e3))
	byRole := map[measure.Role]measure.RoleTotal{}
	for _, t := range rec.Resources.ByRole() {
		byRole[t.Role] = t
	}
	for _, r := range roles {
		t, ok := byRole[r]
		if !ok {
			row = append(row, "", "", "")
			continue
		}
		row = append(row, f(t.MilliCores), f(rec.CPUPer1k(t.MilliCores)), f(metric.MiB(t.MaxLoadRSS)))
	}
	return append(row, strconv.FormatBool(rec.Valid()), rec.Invalid.String(), rec.Warnings.String(), rec.Beyond,
		strconv.FormatBool(rec.CPUValid()), rec.CPUInvalid.String())
}

// csvLabelKeys are the label keys of every record but benchmark and arm,
// in order of first appearance.
func csvLabelKeys(ins []Input) []string {
	var keys []string
	for _, in := range ins {
		for _, rec := range in.Results.Records {
			for _, l := range rec.key() {
				if l.Key != labels.Benchmark && l.Key != labels.Arm && !slices.Contains(keys, l.Key) {
					keys = append(keys, l.Key)
				}
			}
		}
	}
	return keys
}

// csvRoles are the roles any record measured, in the report's order.
func csvRoles(ins []Input) []measure.Role {
	var out []measure.Role
	for _, in := range ins {
		for _, rec := range in.Results.Records {
			for _, t := range rec.Resources.ByRole() {
				if !slices.Contains(out, t.Role) {
					out = append(out, t.Role)
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b measure.Role) int { return strings.Compare(roleRank(a), roleRank(b)) })
	return out
}
