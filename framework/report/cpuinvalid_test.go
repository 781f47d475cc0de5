package report_test

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/validity"
	"github.com/meshbench/meshbench/framework/verdict"
)

const dilutedDetail = "CPU diluted: the kubelet's counters span 20s on node n1 (45% under load), under the 90% needed: per-role CPU is diluted by idle time"

// TestCPUInvalidStored: a results file stores a run's CPU reasons as
// cpuInvalid, apart from its invalid reasons and warnings, and reads them
// back; a cpu-diluted warning of an older file makes its CPU not valid
// just the same.
func TestCPUInvalidStored(t *testing.T) {
	dir := t.TempDir()
	run := &testbed.Run{Arm: testbed.Meshed, Path: testbed.OneHop, Load: &load.Result{Requests: 1}}
	run.CPUInvalid.Add(validity.CPUDiluted, "%s", dilutedDetail)
	data, back := writeOne(t, dir, run)
	assert.Contains(t, data, `
   "cpuInvalid": [
    {
     "kind": "cpu-diluted",
     "detail": "`+dilutedDetail+`"
    }
   ]`)
	assert.NotContains(t, data, `"warnings"`)
	assert.NotContains(t, data, `"invalid"`)
	assert.Equal(t, run.CPUInvalid, back.CPUInvalid)
	assert.True(t, back.Valid(), "the run stands")
	assert.False(t, back.CPUValid(), "its CPU does not")
	assert.Equal(t, 1, report.Compare([]report.Record{back})[0].Meshed.CPUInvalid)

	_, plain := writeOne(t, t.TempDir(), &testbed.Run{Arm: testbed.Meshed, Path: testbed.OneHop, Load: &load.Result{Requests: 1}})
	assert.True(t, plain.CPUValid())
	assert.Nil(t, plain.CPUInvalid)

	old := readOldRecord(t, dir, `"load":{"requests":1},"warnings":[{"kind":"cpu-diluted","detail":"node n1: the kubelet's counters span 20s, of which 45% were under load"}]`)
	assert.False(t, old.CPUValid())
	assert.True(t, old.Valid())
	assert.Empty(t, old.CPUInvalid)
}

// TestCPUInvalidMarkedInMarkdown: in the recorded run, the second repeat
// of the meshed arm at one-hop c=4 had its CPU counters diluted. The
// Markdown report then differs from the unmarked one in exactly four
// lines: that arm's two rows of the CPU tables, with every CPU figure
// marked † (memory is not), the legend under them, and the run's row in
// the table of problems.
func TestCPUInvalidMarkedInMarkdown(t *testing.T) {
	var plain, got bytes.Buffer
	require.NoError(t, report.Markdown(&plain, openRecorded(t), report.Options{}))
	ins := openRecorded(t)
	rec := ins[0].Results.Records[7]
	require.Equal(t, "BenchmarkOneHop/c=4/arm=meshed", rec.Name())
	rec.CPUInvalid.Add(validity.CPUDiluted, "%s", dilutedDetail)
	require.NoError(t, report.Markdown(&got, ins, report.Options{}))

	before := map[string]bool{}
	for _, l := range strings.Split(plain.String(), "\n") {
		before[l] = true
	}
	var changed []string
	for _, l := range strings.Split(got.String(), "\n") {
		if !before[l] {
			changed = append(changed, l)
		}
	}
	require.Len(t, changed, 4, strings.Join(changed, "\n"))
	// The resources table: every CPU figure; the mesh's memory is not one.
	assert.Equal(t, markedRow(t, plain.String(), "| scenario | arm | loadgen m |", func(h string) bool {
		return strings.HasSuffix(h, " m") || strings.HasPrefix(h, "mesh cores") || strings.HasPrefix(h, "sidecar:app") || h == "busiest node CPU %"
	}), changed[0])
	// CPU per 1k requests is marked, memory idle → load is not.
	assert.Equal(t, markedRow(t, plain.String(), "| scenario | arm | loadgen CPU-ms/1k req |", func(h string) bool {
		return strings.HasSuffix(h, "CPU-ms/1k req")
	}), changed[1])
	assert.Equal(t, "† the CPU figures of 1 of the 16 runs summarised are not valid (their cpuInvalid reasons in the results: counters under load for less than 90 % of their span are diluted by idle time); "+
		"a marked figure includes them, and no threshold or gate decision rests on them", changed[2])
	assert.Equal(t, "| BenchmarkOneHop/c=4/arm=meshed repeat 2 | CPU not valid | "+dilutedDetail+" |", changed[3])
}

// markedRow is the row of BenchmarkOneHop/c=4's meshed arm in the table
// of md whose header starts with head, with † after each figure (not "-")
// of a column whose header cpu says is a CPU figure.
func markedRow(t *testing.T, md, head string, cpu func(header string) bool) string {
	t.Helper()
	i := strings.Index(md, head)
	require.GreaterOrEqual(t, i, 0, head)
	split := func(l string) []string {
		return strings.Split(strings.TrimSuffix(strings.TrimPrefix(l, "| "), " |"), " | ")
	}
	lines := strings.Split(md[i:], "\n")
	header := split(lines[0])
	for _, l := range lines {
		if !strings.HasPrefix(l, "| BenchmarkOneHop/c=4 | meshed |") {
			continue
		}
		cs := split(l)
		require.Len(t, cs, len(header))
		marks := 0
		for j, h := range header {
			if cpu(h) && cs[j] != "-" {
				cs[j] += "†"
				marks++
			}
		}
		require.GreaterOrEqual(t, marks, 2, "the CPU figures of the row are there to mark")
		return "| " + strings.Join(cs, " | ") + " |"
	}
	require.Fail(t, "no row", head)
	return ""
}

// TestCPUInvalidExported: the CSV and SMP exports say which runs' CPU
// figures are not valid, and why: the CSV in the run's row, the SMP
// export in the repeat's entry and as a count for its arm.
func TestCPUInvalidExported(t *testing.T) {
	ins := openRecorded(t)
	rec := &ins[0].Results.Records[7]
	require.Equal(t, "BenchmarkOneHop/c=4/arm=meshed", rec.Name())
	rec.CPUInvalid.Add(validity.CPUDiluted, "%s", dilutedDetail)

	var b bytes.Buffer
	require.NoError(t, report.CSV(&b, ins))
	rows, err := csv.NewReader(&b).ReadAll()
	require.NoError(t, err)
	head := rows[0]
	require.Equal(t, []string{"cpu_valid", "cpu_invalid"}, head[len(head)-2:])
	for i, row := range rows[1:] {
		want := []string{"true", ""}
		if i == 7 {
			want = []string{"false", dilutedDetail}
		}
		assert.Equal(t, want, row[len(row)-2:], "row %d", i)
	}

	var marked []report.SMPExtension
	for _, r := range report.SMPResults(ins[0].Results) {
		if r.Meshbench.CPUInvalid > 0 {
			marked = append(marked, r.Meshbench)
		}
	}
	require.Len(t, marked, 1)
	x := marked[0]
	assert.Equal(t, testbed.Meshed, x.Arm)
	assert.Equal(t, 4, x.Concurrency)
	assert.Equal(t, testbed.OneHop, x.Path)
	assert.Equal(t, 1, x.CPUInvalid)
	for _, r := range x.PerRepeat {
		if r.Repeat == rec.Repeat {
			assert.Equal(t, []string{dilutedDetail}, r.CPUInvalid)
		} else {
			assert.Empty(t, r.CPUInvalid, "repeat %d", r.Repeat)
		}
	}
}

// A local results file written before the local target named its CPU
// clock read ticks: read back, a run whose app or sidecar counted fewer
// than testbed.MinTicks is marked (cpu-coarse) and its CPU limits are
// not judged; a file that names its clock is left as its run marked it.
func TestOldLocalResultsMarkCoarseTicks(t *testing.T) {
	ins, err := report.Open(mainJob, recorded)
	require.NoError(t, err)
	coarse := func(in report.Input) (names []string) {
		for _, rec := range in.Results.Records {
			if len(rec.CPUInvalid.Of(validity.CPUCoarse)) > 0 {
				names = append(names, rec.Name())
			}
		}
		return names
	}
	old := coarse(ins[0])
	assert.Len(t, old, 10, "as jq counts them: records with a usage under 10 ticks")
	assert.Contains(t, old, "BenchmarkServiceTime/service=50ms/c=8/arm=baseline")
	var st report.Comparison
	for _, c := range report.Compare(ins[0].Results.Records) {
		if c.Benchmark == "BenchmarkServiceTime" {
			st = c
		}
	}
	assert.Equal(t, []validity.Kind{validity.CPUCoarse}, st.Baseline.CPUInvalidKinds)
	assert.Contains(t, st.Observation().Unjudged[verdict.SidecarCPUOverBaselineCPU], "CPU read in 10 ms ticks, a process counting fewer than 10")
	assert.Empty(t, coarse(ins[1]), "testdata/local.json names its clock")
}
