package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const recorded = "../../framework/report/testdata/local.json"

func TestReportWritesEachFormatAndPrintsThePaths(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"report", "-o", dir, recorded}, &out, &errb))
	html, md := filepath.Join(dir, "local.html"), filepath.Join(dir, "local.md")
	assert.Equal(t, html+"\n"+md+"\n", out.String())
	for _, p := range []string{html, md} {
		st, err := os.Stat(p)
		require.NoError(t, err)
		assert.Positive(t, st.Size())
	}

	out.Reset()
	require.NoError(t, run(context.Background(), []string{"report", "-o", dir, "-format", "md", recorded, recorded}, &out, &errb))
	assert.Equal(t, filepath.Join(dir, "compare-local-vs-local.md")+"\n", out.String())

	out.Reset()
	require.NoError(t, run(context.Background(), []string{"report", "-o", dir, "-format", "csv,smp", recorded}, &out, &errb))
	csvPath, smpPath := filepath.Join(dir, "local.csv"), filepath.Join(dir, "local.smp.yaml")
	assert.Equal(t, csvPath+"\n"+smpPath+"\n", out.String())
	data, err := os.ReadFile(csvPath)
	require.NoError(t, err)
	assert.Equal(t, 1+16, bytes.Count(data, []byte("\n")), "a header and one row per run of the 16")
	data, err = os.ReadFile(smpPath)
	require.NoError(t, err)
	assert.Equal(t, 8, bytes.Count(data, []byte("smp_version: smps/v1\n")), "one result per scenario and arm: 4 × 2")
}

func TestReportRejectsBadArguments(t *testing.T) {
	var out, errb bytes.Buffer
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, usage},
		{[]string{"draw"}, "unknown command \"draw\"\n" + usage},
		{[]string{"report"}, "report: no results file given\n" + usage},
		{[]string{"report", "-format", "html,xlsx", recorded}, `report: -format: format "xlsx": want html, md, csv or smp, or several comma-separated`},
		{[]string{"report", "-format", "pdf", recorded}, `report: -format: format "pdf": want html, md, csv or smp, or several comma-separated`},
		{[]string{"report", "-prices", "nope.yaml", recorded}, "report: -prices: prices: open nope.yaml: no such file or directory"},
		{[]string{"report", "-o", dir, "nope.json"}, "report: nope.json: open nope.json: no such file or directory"},
	} {
		assert.EqualError(t, run(context.Background(), tc.args, &out, &errb), tc.want, "%v", tc.args)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing written on bad input")
}
