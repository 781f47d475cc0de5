package report_test

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/meshbench/meshbench/framework/labels"
	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/testbed"
)

// The CSV of a main job, read back with encoding/csv, has one row per run
// of the results file, and every cell is the record's own value.
func TestCSVRoundTrip(t *testing.T) {
	ins := openMainJob(t)
	var b bytes.Buffer
	require.NoError(t, report.Render(&b, report.FormatCSV, ins, report.Options{}))
	rows, err := csv.NewReader(&b).ReadAll()
	require.NoError(t, err)
	res := ins[0].Results
	require.Len(t, rows, 1+len(res.Records), "a header and one row per run")
	assert.Equal(t, []string{"run_id", "target", "mesh", "mesh_version", "scenario", "benchmark",
		"label:c", "label:protocol", "label:placement", "label:threads", "label:service", "label:payload", "label:qps", "label:users",
		"concurrency", "path", "arm", "repeat", "rate_asked_rps", "throughput_rps", "requests", "errors",
		"p50_ms", "p90_ms", "p99_ms", "p999_ms", "max_ms",
		"cpu_millicores:loadgen", "cpu_ms_per_1k:loadgen", "rss_mib:loadgen", "cpu_millicores:app", "cpu_ms_per_1k:app", "rss_mib:app",
		"cpu_millicores:sidecar", "cpu_ms_per_1k:sidecar", "rss_mib:sidecar",
		"valid", "invalid", "warnings", "beyond", "cpu_valid", "cpu_invalid"}, rows[0])
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	num := func(row []string, name string) float64 {
		v, err := strconv.ParseFloat(row[col[name]], 64)
		require.NoError(t, err, "%s: %q", name, row[col[name]])
		return v
	}
	for i, rec := range res.Records {
		row, l := rows[1+i], rec.Load
		name := rec.Labels.Without(labels.Arm)
		assert.Equal(t, []string{"20261201T195250Z-local", "local", "sidecar/caddy", "v2.11.9", name.String(), rec.Benchmark},
			row[:6], "row %d", i)
		assert.Equal(t, name.Value("payload"), row[col["label:payload"]])
		assert.Equal(t, name.Value("users"), row[col["label:users"]])
		assert.Equal(t, []string{strconv.Itoa(rec.Concurrency), string(rec.Path), string(rec.Arm), strconv.Itoa(rec.Repeat)},
			row[col["concurrency"]:col["rate_asked_rps"]], "row %d", i)
		if l.TargetQPS > 0 {
			assert.Equal(t, l.TargetQPS, num(row, "rate_asked_rps"))
		} else {
			assert.Empty(t, row[col["rate_asked_rps"]], "closed loop asks no rate")
		}
		assert.Equal(t, l.AchievedQPS, num(row, "throughput_rps"))
		assert.Equal(t, float64(l.Requests), num(row, "requests"))
		assert.Equal(t, float64(l.Errors), num(row, "errors"))
		for q, c := range map[float64]string{50: "p50_ms", 90: "p90_ms", 99: "p99_ms", 99.9: "p999_ms"} {
			assert.Equal(t, l.Percentile(q)*1e3, num(row, c), "%s %s", name, c)
		}
		for _, role := range rec.Resources.ByRole() {
			assert.Equal(t, role.MilliCores, num(row, "cpu_millicores:"+string(role.Role)))
			assert.Equal(t, rec.CPUPer1k(role.MilliCores), num(row, "cpu_ms_per_1k:"+string(role.Role)))
			assert.Equal(t, float64(role.MaxLoadRSS)/(1<<20), num(row, "rss_mib:"+string(role.Role)))
		}
		assert.Equal(t, strconv.FormatBool(rec.Valid()), row[col["valid"]])
		assert.Equal(t, rec.Invalid.String(), row[col["invalid"]])
		assert.Equal(t, rec.Beyond, row[col["beyond"]])
		// the main job of 2026-12-01 read CPU in ticks: a process that
		// counted fewer than testbed.MinTicks marks its run (cpu-coarse)
		assert.Equal(t, []string{strconv.FormatBool(rec.CPUValid()), rec.CPUInvalid.String()}, row[col["cpu_valid"]:], "row %d", i)
	}
}

// smpKeys are the fields of SMP's PerformanceTestResult, as its proto
// names them, and the one extension key.
var smpKeys = []string{"smp_version", "id", "labels", "start_time", "end_time", "latencies_ms", "actual_QPS",
	"details_uri", "testId", "meshConfigId", "envId", "meshbench_extension"}

// The SMP export of a main job, read back as YAML (strictly, into the
// exported types, and as plain maps for the field names), holds one
// PerformanceTestResult per scenario and arm, each with the comparison's
// figures, and keeps p99.9, the intervals and the repeats in its extension.
func TestSMPRoundTrip(t *testing.T) {
	ins := openMainJob(t)
	var b bytes.Buffer
	require.NoError(t, report.Render(&b, report.FormatSMP, ins, report.Options{}))
	var got []report.SMPResult
	var raw []map[string]any
	dec, rawDec := yaml.NewDecoder(bytes.NewReader(b.Bytes())), yaml.NewDecoder(bytes.NewReader(b.Bytes()))
	dec.KnownFields(true)
	for {
		var r report.SMPResult
		var m map[string]any
		err := dec.Decode(&r)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		require.NoError(t, rawDec.Decode(&m))
		got, raw = append(got, r), append(raw, m)
	}
	res := ins[0].Results
	var want []string
	byName := map[string]report.Comparison{}
	for _, c := range report.Compare(res.Records) {
		for _, arm := range []testbed.Arm{testbed.Baseline, testbed.Meshed} {
			if arm == testbed.Baseline && c.Baseline.Repeats == 0 || arm == testbed.Meshed && c.Meshed.Repeats == 0 {
				continue
			}
			name := c.Labels.With(labels.Arm, string(arm)).String()
			want, byName[name] = append(want, name), c
		}
	}
	var names []string
	for i, r := range got {
		names = append(names, r.TestID)
		var keys []string
		for k := range raw[i] {
			keys = append(keys, k)
		}
		assert.ElementsMatch(t, smpKeys, keys, r.TestID)
		assert.Len(t, raw[i]["latencies_ms"], 6, "min, average, p50, p90, p99, max")
		assertSMPResult(t, res, byName[r.TestID], r)
	}
	assert.Equal(t, want, names, "one result per scenario and arm, in sweep order")
	assert.Len(t, got, 2*25+1, "25 scenarios with both arms and the fault scenario's meshed arm")
}

// assertSMPResult checks one SMP result against the comparison and the
// records it summarises.
func assertSMPResult(t *testing.T, res *report.Results, c report.Comparison, r report.SMPResult) {
	t.Helper()
	x := r.Meshbench
	st := c.Meshed
	if x.Arm == testbed.Baseline {
		st = c.Baseline
	}
	assert.Equal(t, "smps/v1", r.SMPVersion)
	assert.Equal(t, "20261201T195250Z-local/"+r.TestID, r.ID)
	assert.Equal(t, "sidecar/caddy v2.11.9", r.MeshConfigID)
	assert.Equal(t, string(x.Arm), r.Labels["arm"])
	assert.Equal(t, c.Labels.Value("c"), r.Labels["c"])
	assert.Equal(t, report.SMPLatency{Min: st.Merged.Min * 1e3, Average: st.Merged.Avg * 1e3, P50: st.P50.Median, P90: st.P90.Median,
		P99: st.P99.Median, Max: st.Merged.Max * 1e3}, r.LatenciesMs, r.TestID)
	assert.Equal(t, st.QPS.Median, r.ActualQPS)
	assert.Equal(t, c.Scenario(), x.Scenario)
	assert.Equal(t, st.Repeats, x.Repeats)
	assert.Equal(t, st.P999.Median, x.P999Ms)
	assert.Equal(t, report.SMPInterval{Median: st.P99.Median, Lo: st.P99.Lo, Hi: st.P99.Hi, N: st.P99.N}, x.Intervals["p99_ms"], r.TestID)
	assert.Equal(t, report.SMPInterval{Median: st.P999.Median, Lo: st.P999.Lo, Hi: st.P999.Hi, N: st.P999.N}, x.Intervals["p999_ms"], r.TestID)
	if x.Arm == testbed.Meshed && len(c.Problems) == 0 {
		s := c.QPSLossPct
		assert.Equal(t, report.SMPInterval{Median: s.Median, Lo: s.Lo, Hi: s.Hi, N: s.N}, x.Intervals["throughput_loss_pct"], r.TestID)
	}
	assert.Equal(t, st.CPUPer1k["sidecar"].Median, x.CPUMsPer1k["sidecar"])
	require.Len(t, x.PerRepeat, st.Repeats, r.TestID)
	var start, end time.Time
	for _, rec := range res.Records {
		if rec.Arm != x.Arm || rec.Labels.Without(labels.Arm).String() != c.Scenario() {
			continue
		}
		l := rec.Load
		rep := x.PerRepeat[rec.Repeat]
		assert.Equal(t, report.SMPRepeat{Repeat: rec.Repeat, P50Ms: l.Percentile(50) * 1e3, P99Ms: l.Percentile(99) * 1e3,
			P999Ms: l.Percentile(99.9) * 1e3, QPS: l.AchievedQPS, Valid: rec.Valid(), CPUInvalid: rec.CPUInvalid.Strings()}, rep, fmt.Sprintf("%s repeat %d", r.TestID, rec.Repeat))
		if start.IsZero() || l.Start.Before(start) {
			start = l.Start
		}
		if e := l.Start.Add(l.Elapsed); e.After(end) {
			end = e
		}
	}
	assert.True(t, start.Equal(r.StartTime), "%s: start %v, want %v", r.TestID, r.StartTime, start)
	assert.True(t, end.Equal(r.EndTime), "%s: end %v, want %v", r.TestID, r.EndTime, end)
}
