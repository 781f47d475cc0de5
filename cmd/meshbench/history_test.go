package main

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/testbed"
)

// writeSeries writes n copies of the recorded run into dir, a day apart,
// the meshed arm's sidecar CPU of run i scaled by level(i) with 2 %
// seeded noise, and returns their paths, oldest first.
func writeSeries(t *testing.T, dir string, n int, level func(i int) float64) []string {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 0))
	var paths []string
	for i := range n {
		r, err := report.Read(recorded)
		require.NoError(t, err)
		r.Started = time.Date(2026, 12, 1+i, 2, 0, 0, 0, time.UTC)
		f := level(i) * (1 + 0.02*rng.NormFloat64())
		for _, rec := range r.Records {
			for k, u := range rec.Resources.Usage {
				if rec.Arm == testbed.Meshed && u.Role == measure.RoleSidecar {
					rec.Resources.Usage[k].MilliCores *= f
				}
			}
		}
		p, err := report.Write(dir, r)
		require.NoError(t, err)
		paths = append(paths, p)
	}
	return paths
}

func flat(int) float64 { return 1 }

func regressAt7(i int) float64 {
	if i >= 6 {
		return 1.3
	}
	return 1
}

func runHistory(t *testing.T, args ...string) (string, int, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(context.Background(), append([]string{"history"}, args...), &out, &errb)
	return out.String(), exitCode(err, &errb), err
}

func TestHistoryFailsOnARegressionPastTheLimitOnly(t *testing.T) {
	dir := t.TempDir()
	paths := writeSeries(t, dir, 12, regressAt7)

	out, code, err := runHistory(t, "-fail-on-change", "10", dir)
	assert.Equal(t, 1, code)
	assert.EqualError(t, err, "history: 4 series changed for the worse by more than 10 % (-fail-on-change)")
	assert.Contains(t, out, "## Worse by more than 10 % at the newest run\n\n")
	assert.Contains(t, out, "- group 1, BenchmarkOneHop/c=1/path=one-hop, sidecar CPU per 1k req: +")
	assert.Contains(t, out, " from run 7 ("+filepath.Base(paths[6])+") on\n")
	assert.Equal(t, 4, strings.Count(out, " from run 7 ("))

	out, code, err = runHistory(t, "-fail-on-change", "50", dir)
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "None: no series' last change point is worse by more than that.\n")

	_, code, err = runHistory(t, dir)
	require.NoError(t, err, "no limit, no failure")
	assert.Equal(t, 0, code)
}

func TestHistoryPassesAFlatSeries(t *testing.T) {
	dir := t.TempDir()
	writeSeries(t, dir, 12, flat)
	out, code, err := runHistory(t, "-fail-on-change", "0", dir)
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "## Change points\n\nNo change points.\n")
}

func TestHistoryWritesMarkdownAndHTML(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	paths := writeSeries(t, dir, 8, regressAt7)
	// What runs and reports leave beside results is passed over.
	for _, name := range []string{"run.log", "local.md", "local.html", ".git/config"} {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("not results"), 0o644))
	}
	stdout, code, err := runHistory(t, "-o", out, paths[0], dir)
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	md, err := os.ReadFile(filepath.Join(out, "history.md"))
	require.NoError(t, err)
	assert.Equal(t, stdout, string(md))
	assert.Contains(t, stdout, "8 run(s) in 1 group(s).")
	assert.Contains(t, stdout, "- skipped "+filepath.Join(dir, filepath.Base(paths[0]))+": run ")
	page, err := os.ReadFile(filepath.Join(out, "history.html"))
	require.NoError(t, err)
	assert.Equal(t, 20, strings.Count(string(page), "<svg"))
}

func TestHistoryRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	paths := writeSeries(t, dir, 2, flat)
	data, err := os.ReadFile(paths[0])
	require.NoError(t, err)
	truncated := filepath.Join(t.TempDir(), "20261201T020000Z-local.json")
	require.NoError(t, os.WriteFile(truncated, data[:len(data)/2], 0o644))
	unknown := filepath.Join(t.TempDir(), "notes.txt")
	require.NoError(t, os.WriteFile(unknown, []byte("hello"), 0o644))
	withUnknown := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(withUnknown, "notes.txt"), []byte("hello"), 0o644))
	onlyLogs := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(onlyLogs, "run.log"), []byte("log"), 0o644))
	otherSchema := filepath.Join(t.TempDir(), "other.json")
	require.NoError(t, os.WriteFile(otherSchema, []byte(`{"schema":"meshbench.results/v1"}`), 0o644))

	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "history: no results file or directory given\n" + usage},
		{[]string{"-p", "2", dir}, "history: -p 2: want a level between 0 and 1, e.g. 0.001"},
		{[]string{"-window", "1", dir}, "history: -window 1: want at least 2 runs"},
		{[]string{"-fail-on-change", "-5", dir}, "history: -fail-on-change -5: want a percentage ≥ 0"},
		{[]string{dir, "nope.json"}, "history: stat nope.json: no such file or directory"},
		{[]string{dir, unknown}, "history: " + unknown + ": not a results file (want a name ending in .json, .json.gz, .journal.jsonl)"},
		{[]string{dir, withUnknown}, "history: " + filepath.Join(withUnknown, "notes.txt") + ": not a results file (want a name ending in .json, .json.gz, .journal.jsonl)"},
		{[]string{onlyLogs}, "history: no results file in " + onlyLogs},
		{[]string{otherSchema}, "history: " + otherSchema + `: schema: "meshbench.results/v1", this meshbench reads "meshbench.results/v2"`},
	} {
		_, code, err := runHistory(t, tc.args...)
		assert.EqualError(t, err, tc.want, "%v", tc.args)
		assert.Equal(t, 2, code, "%v", tc.args)
	}

	_, code, err := runHistory(t, dir, truncated)
	assert.Equal(t, 2, code)
	require.Error(t, err)
	assert.Regexp(t, "^history: "+truncated+`: .*truncated at byte \d+ \(the file ends inside it\)$`, err.Error())
}
