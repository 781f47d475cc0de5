package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const quietLocal = "../../fixtures/thresholds/calibration/20261202T025339Z-local.json.gz"

// judge re-judges a recorded run against the shipped local fixture: one
// summary line, then a line per point and limit with its slack; on a
// simulated slower machine too.
func TestJudgeARecordedRun(t *testing.T) {
	for _, slower := range []string{"1", "1.6"} {
		var out, errs bytes.Buffer
		err := run(context.Background(), []string{"judge", "-thresholds", "../../fixtures/thresholds/local.yaml", "-slower", slower, quietLocal}, &out, &errs)
		require.NoError(t, err, errs.String())
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		machine := map[string]string{"1": "as recorded", "1.6": "simulated on a machine ×1.6 slower"}[slower]
		assert.Equal(t, "# 20261202T025339Z-local.json.gz against ../../fixtures/thresholds/local.yaml, "+machine+": 150 limits checked, 0 breached, 11 undecided, 0 points uncovered", lines[0])
		assert.Len(t, lines, 2+150, "a header, then a line per limit checked")
		assert.Equal(t, []string{"BenchmarkOneHop/c=1", "sidecarCPUOverBaselineCPU", "6.73", "(6.16–6.98,", "n=3)", "9.90×", "×1.42", "pass"}, strings.Fields(lines[6]))
		assert.NotContains(t, errs.String(), "was calibrated on", "a run on the fixture's own CPU")
	}
}

// A run on a CPU the fixture was not calibrated on is judged, and judge
// says that the fixture's teeth may not carry there.
func TestJudgeSaysTheCPUDiffers(t *testing.T) {
	var out, errs bytes.Buffer
	amd := "../../fixtures/thresholds/judged/20261207T175759Z-local-amd.json.gz"
	require.NoError(t, run(context.Background(), []string{"judge", "-thresholds", "../../fixtures/thresholds/local.yaml", amd}, &out, &errs))
	assert.Contains(t, out.String(), ": 180 limits checked, 0 breached, 3 undecided, 0 points uncovered\n")
	assert.Contains(t, errs.String(), "judge: "+amd+": ../../fixtures/thresholds/local.yaml was calibrated on Intel(R) Xeon(R) Processor, not on this machine's AMD EPYC: ")
}

// The fixture of before, in ms and CPU-ms, fails the same run on a
// machine ×1.6 slower: exit 1.
func TestJudgeFailsExitsOne(t *testing.T) {
	var out, errs bytes.Buffer
	old := t.TempDir() + "/absolute.yaml"
	require.NoError(t, run(context.Background(), []string{"calibrate", "-absolute", "-o", old,
		"../../fixtures/thresholds/calibration/20261202T025339Z-local.json.gz",
		"../../fixtures/thresholds/calibration/20261202T030009Z-local.json.gz",
		"../../fixtures/thresholds/calibration/20261202T030442Z-local.json.gz"}, &out, &errs))
	data, err := os.ReadFile(old)
	require.NoError(t, err)
	assert.Contains(t, string(data), "    p50DeltaMs: 0.7\n", "the p50 delta of OneHop c=1, as before")
	out.Reset()
	err = run(context.Background(), []string{"judge", "-thresholds", old, "-slower", "1.6", quietLocal}, &out, &errs)
	assert.EqualError(t, err, "judge: 1 of 1 results files breach "+old)
	assert.Equal(t, 1, exitCode(err, &errs))
	assert.Contains(t, out.String(), ": 150 limits checked, 67 breached, 9 undecided, 0 points uncovered\n",
		"3 undecided are the latency past the rate ladder's knee, 5 the CPU read in too few ticks (cpu-coarse), 1 the user flow's tight p99 increase")
}

func TestJudgeRefusesBadInput(t *testing.T) {
	var out, errs bytes.Buffer
	for args, want := range map[string]string{
		"-slower 1 " + quietLocal:                                                  "judge: -thresholds: no fixture given\n" + usage,
		"-thresholds ../../fixtures/thresholds/local.yaml":                         "judge: no results file given\n" + usage,
		"-thresholds ../../fixtures/thresholds/local.yaml -slower 0 " + quietLocal: "judge: -slower=0: want a finite factor > 0, e.g. 1.6",
	} {
		err := run(context.Background(), append([]string{"judge"}, strings.Fields(args)...), &out, &errs)
		assert.EqualError(t, err, want, args)
		assert.Equal(t, 2, exitCode(err, &errs), args)
	}
}
