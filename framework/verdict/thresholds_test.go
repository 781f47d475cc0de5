package verdict

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each bad fixture has one defect; the error must name file, line and field
// exactly, and say what to write instead.
func TestLoadRejectsBadFixtures(t *testing.T) {
	cases := []struct{ file, want string }{
		// Unknown keys: a misspelled limit would otherwise switch a gate off.
		{"unknown-limit", `testdata/bad/unknown-limit.yaml:6: limits[0].p50DeltaMS: unknown field; did you mean p50DeltaMs?`},
		{"unknown-field", `testdata/bad/unknown-field.yaml:11: limits[0].owner: unknown field; known fields are path, concurrency, p50DeltaMs, p50DeltaPct, p99DeltaPct, meshedP99Ms, meshedP99OverBaselineP50, throughputLossPct, sidecarCPUPer1kReqMs, sidecarCPUOverBaselineCPU, sidecarRSSMiB, meshCores, propagationP50Ms, propagationP99Ms, controlPlaneMcoresPerProxy, controlPlaneRSSMiBPerProxy, propagationP50MsScaled, propagationP99MsScaled, controlPlaneMcoresPerProxyScaled, controlPlaneRSSMiBPerProxyScaled, match`},
		{"unknown-top", `testdata/bad/unknown-top.yaml:2: targets: unknown field; did you mean target?`},
		{"duplicate", `testdata/bad/duplicate.yaml:11: limits[0].p50DeltaMs: repeated; it is already set on line 6`},
		{"merge-key", `testdata/bad/merge-key.yaml:12: limits[1].<<: YAML merge keys are not supported; write every field out so each rule reads on its own`},

		// Bad numbers.
		{"bad-number", `testdata/bad/bad-number.yaml:6: limits[0].p50DeltaMs: "fast" is not a number; want milliseconds ≥ 0, e.g. 2`},
		{"quoted-number", `testdata/bad/quoted-number.yaml:7: limits[0].p99DeltaPct: "400" is quoted, so YAML reads it as text; write 400 without quotes`},
		{"negative", `testdata/bad/negative.yaml:8: limits[0].throughputLossPct: -5 is negative; want a percentage ≥ 0, e.g. 85`},
		{"nan-word", `testdata/bad/nan-word.yaml:6: limits[0].p50DeltaMs: "NaN" is not a number; want milliseconds ≥ 0, e.g. 2`},
		{"nan-yaml", `testdata/bad/nan-yaml.yaml:6: limits[0].p50DeltaMs: .nan is not a finite number; want milliseconds ≥ 0, e.g. 2 (to loosen a gate, write a large number)`},
		{"inf", `testdata/bad/inf.yaml:10: limits[0].sidecarRSSMiB: .inf is not a finite number; want MiB ≥ 0, e.g. 300 (to loosen a gate, write a large number)`},
		{"overflow", `testdata/bad/overflow.yaml:9: limits[0].sidecarCPUPer1kReqMs: "1e400" is not a number; want CPU-milliseconds per 1000 requests ≥ 0, e.g. 1500`},
		{"null-limit", `testdata/bad/null-limit.yaml:10: limits[0].sidecarRSSMiB: no value; want MiB ≥ 0, e.g. 300 (leaving it empty does not switch the gate off)`},
		{"list-limit", `testdata/bad/list-limit.yaml:7: limits[0].p99DeltaPct: got a list, want a percentage ≥ 0, e.g. 600`},

		// Bad concurrency ranges and paths.
		{"range-backwards", `testdata/bad/range-backwards.yaml:5: limits[0].concurrency: "8-4" is backwards: 8 is above 4; write "4-8"`},
		{"range-zero", `testdata/bad/range-zero.yaml:5: limits[0].concurrency: "0" is not a concurrency: it starts at 1`},
		{"range-syntax", `testdata/bad/range-syntax.yaml:5: limits[0].concurrency: "1..4" is not a concurrency; want "N", "N-M", "N+" or "*", e.g. "1-4"`},
		{"bare-star", `testdata/bad/bare-star.yaml:5: invalid YAML: a bare * starts a YAML alias; quote it: "*"`},
		{"bad-path", `testdata/bad/bad-path.yaml:4: limits[0].path: got "three-hop", want one-hop, two-hop or "*"`},

		// Missing fields point at the start of the mapping that lacks them.
		{"missing-limit", `testdata/bad/missing-limit.yaml:4: limits[0].sidecarRSSMiB: missing; every rule sets all five limits (want MiB ≥ 0, e.g. 300)`},
		// A group of limits with none set: the sidecar's CPU in neither form.
		{"no-sidecar-cpu", `testdata/bad/no-sidecar-cpu.yaml:4: limits[0]: limits no sidecar CPU: set one of sidecarCPUPer1kReqMs, sidecarCPUOverBaselineCPU (left out, the sidecar CPU would not be gated)`},
		{"missing-path", `testdata/bad/missing-path.yaml:4: limits[0].path: missing; want one-hop, two-hop or "*"`},
		{"missing-target", `testdata/bad/missing-target.yaml:2: target: missing; want the target's name, e.g. local`},
		{"missing-limits", `testdata/bad/missing-limits.yaml:2: limits: missing; want a list of rules, each with path, concurrency and the five limits`},
		{"empty-target", `testdata/bad/empty-target.yaml:2: target: got "", want the target's name, e.g. local`},
		{"cpus-scalar", `testdata/bad/cpus-scalar.yaml:2: calibratedOn: got "Intel(R) Xeon(R) Processor", want the CPU models of the calibration runs, e.g. ["Intel(R) Xeon(R) Processor"]`},
		{"cpus-number", `testdata/bad/cpus-number.yaml:2: calibratedOn: got 7, want the CPU models of the calibration runs, e.g. ["Intel(R) Xeon(R) Processor"]`},
		{"limits-empty", `testdata/bad/limits-empty.yaml:3: limits: no rules; want a list of rules, each with path, concurrency and the five limits (with none, no scenario is gated)`},

		// Wrong shapes.
		{"empty", `testdata/bad/empty.yaml:1: top level: empty file; want a mapping with target and limits`},
		{"comments-only", `testdata/bad/comments-only.yaml:1: top level: empty file; want a mapping with target and limits`},
		{"top-list", `testdata/bad/top-list.yaml:2: top level: got a list, want a mapping with target and limits`},
		{"top-scalar", `testdata/bad/top-scalar.yaml:2: top level: got "local", want a mapping with target and limits`},
		{"limits-mapping", `testdata/bad/limits-mapping.yaml:4: limits: got a mapping, want a list of rules, each with path, concurrency and the five limits`},
		{"limit-scalar", `testdata/bad/limit-scalar.yaml:4: limits[0]: got "one-hop", want a mapping with path, concurrency and the five limits`},
		{"two-documents", `testdata/bad/two-documents.yaml:11: top level: a second YAML document; a fixture holds exactly one`},

		// YAML syntax. yaml.v3 reports the unclosed "[" on line 7 as line 6.
		{"syntax", `testdata/bad/syntax.yaml:6: invalid YAML: did not find expected ',' or ']'`},
		{"tab", `testdata/bad/tab.yaml:4: invalid YAML: a tab indents this line; YAML indents with spaces only`},

		// A rule below broader ones that can never apply.
		{"shadowed", `testdata/bad/shadowed.yaml:18: limits[2]: never applies: the first matching rule wins, and the rules above it (lines 4, 11) already match one-hop at concurrency 4-16; move it above them or delete it`},
	}
	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.file] = true
		t.Run(c.file, func(t *testing.T) {
			th, err := Load("testdata/bad/" + c.file + ".yaml")
			require.Error(t, err)
			assert.Nil(t, th)
			assert.Equal(t, c.want, err.Error())
			var fe *FixtureError
			require.True(t, errors.As(err, &fe), "want a *FixtureError, got %T", err)
			assert.Equal(t, "testdata/bad/"+c.file+".yaml", fe.File)
		})
	}
	// Every bad fixture in testdata is asserted on.
	entries, err := os.ReadDir("testdata/bad")
	require.NoError(t, err)
	for _, e := range entries {
		assert.True(t, covered[strings.TrimSuffix(e.Name(), ".yaml")], "testdata/bad/%s has no case", e.Name())
	}
}

func TestFixtureErrorFields(t *testing.T) {
	_, err := Load("testdata/bad/unknown-limit.yaml")
	var fe *FixtureError
	require.True(t, errors.As(err, &fe))
	assert.Equal(t, FixtureError{
		File:    "testdata/bad/unknown-limit.yaml",
		Line:    6,
		Field:   "limits[0].p50DeltaMS",
		Problem: "unknown field; did you mean p50DeltaMs?",
	}, *fe)
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load("testdata/no-such-file.yaml")
	require.Error(t, err)
	assert.True(t, errors.Is(err, os.ErrNotExist))
	assert.Equal(t, "thresholds: open testdata/no-such-file.yaml: no such file or directory", err.Error())
}

func TestLoadGoodFixture(t *testing.T) {
	th, err := Load("testdata/good.yaml")
	require.NoError(t, err)
	assert.Equal(t, &Thresholds{
		File:   "testdata/good.yaml",
		Target: "local", TargetLine: 2,
		Limits: []Limit{
			{Line: 5, Path: OneHop, Concurrency: Concurrency{Min: 1, Max: 1},
				Allowed: map[Metric]float64{P50DeltaMs: 0.5, P99DeltaPct: 100, ThroughputLossPct: 50, SidecarCPUPer1kReqMs: 400, SidecarRSSMiB: 128}},
			{Line: 13, Path: AnyPath, Concurrency: Concurrency{Min: 1, Max: 16},
				Allowed: map[Metric]float64{P50DeltaMs: 2, P99DeltaPct: 600, ThroughputLossPct: 85, SidecarCPUPer1kReqMs: 1500, SidecarRSSMiB: 300}},
			{Line: 21, Path: OneHop, Concurrency: Concurrency{Min: 17},
				Allowed: map[Metric]float64{P50DeltaMs: 8, P99DeltaPct: 600, ThroughputLossPct: 85, SidecarCPUPer1kReqMs: 1500, SidecarRSSMiB: 300}},
		},
	}, th)
}

// The shipped fixture loads and covers both paths at every concurrency of
// the default sweep and beyond.
// TestShippedFixtures loads every fixture in fixtures/thresholds: each is
// named for its target and covers both paths at every concurrency.
func TestShippedFixtures(t *testing.T) {
	files, err := filepath.Glob("../../fixtures/thresholds/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		th, err := Load(f)
		require.NoError(t, err)
		assert.Equal(t, strings.TrimSuffix(filepath.Base(f), ".yaml"), th.Target, f)
		for _, p := range []Path{OneHop, TwoHop} {
			for _, c := range []int{1, 2, 3, 4, 5, 8, 16, 32, 64, 1000} {
				_, ok := th.Match(p, c)
				assert.True(t, ok, "%s: no rule for %s at c=%d", f, p, c)
			}
		}
	}
}

func TestParseConcurrency(t *testing.T) {
	good := map[string]Concurrency{
		"1":     {Min: 1, Max: 1},
		"32":    {Min: 32, Max: 32},
		"1-4":   {Min: 1, Max: 4},
		"4-4":   {Min: 4, Max: 4},
		"5+":    {Min: 5},
		"*":     {Min: 1},
		"16-64": {Min: 16, Max: 64},
	}
	for s, want := range good {
		got, err := parseConcurrency(s)
		require.NoError(t, err, s)
		assert.Equal(t, want, got, s)
	}
	for _, s := range []string{"", "0", "0-4", "4-0", "-4", "4-", "+", "1+4", "1-4+", " 4", "4 ", "x", "0x10", "1_000", "1.5", "99999999999999999999"} {
		_, err := parseConcurrency(s)
		assert.Error(t, err, "%q", s)
	}
}

func TestConcurrencyContainsAndString(t *testing.T) {
	r := Concurrency{Min: 2, Max: 8}
	assert.False(t, r.Contains(1))
	assert.True(t, r.Contains(2))
	assert.True(t, r.Contains(8))
	assert.False(t, r.Contains(9))
	assert.True(t, Concurrency{Min: 5}.Contains(1<<30))
	assert.Equal(t, "2-8", r.String())
	assert.Equal(t, "5+", Concurrency{Min: 5}.String())
	assert.Equal(t, "4", Concurrency{Min: 4, Max: 4}.String())
}

// A rule that only partly overlaps the rules above it still applies
// somewhere, so it is accepted.
func TestParseAcceptsPartlyOverlappingRules(t *testing.T) {
	const doc = `target: local
limits:
  - {path: one-hop, concurrency: "1-8", p50DeltaMs: 1, p99DeltaPct: 1, throughputLossPct: 1, sidecarCPUPer1kReqMs: 1, sidecarRSSMiB: 1}
  - {path: "*", concurrency: "4-16", p50DeltaMs: 2, p99DeltaPct: 2, throughputLossPct: 2, sidecarCPUPer1kReqMs: 2, sidecarRSSMiB: 2}
  - {path: one-hop, concurrency: "9+", p50DeltaMs: 3, p99DeltaPct: 3, throughputLossPct: 3, sidecarCPUPer1kReqMs: 3, sidecarRSSMiB: 3}
`
	th, err := Parse("inline.yaml", []byte(doc))
	require.NoError(t, err)
	require.Len(t, th.Limits, 3)

	// A fourth rule for two-hop 1-16 is covered on 4-16 but not on 1-3.
	th, err = Parse("inline.yaml", []byte(doc+
		`  - {path: two-hop, concurrency: "1-16", p50DeltaMs: 4, p99DeltaPct: 4, throughputLossPct: 4, sidecarCPUPer1kReqMs: 4, sidecarRSSMiB: 4}
`))
	require.NoError(t, err)
	require.Len(t, th.Limits, 4)

	// But a "*" rule for 1+ is now fully covered: one-hop by rules 1 and 3,
	// two-hop by rules 2 and 4.
	_, err = Parse("inline.yaml", []byte(doc+
		`  - {path: two-hop, concurrency: "1-16", p50DeltaMs: 4, p99DeltaPct: 4, throughputLossPct: 4, sidecarCPUPer1kReqMs: 4, sidecarRSSMiB: 4}
  - {path: two-hop, concurrency: "17+", p50DeltaMs: 5, p99DeltaPct: 5, throughputLossPct: 5, sidecarCPUPer1kReqMs: 5, sidecarRSSMiB: 5}
  - {path: "*", concurrency: "*", p50DeltaMs: 6, p99DeltaPct: 6, throughputLossPct: 6, sidecarCPUPer1kReqMs: 6, sidecarRSSMiB: 6}
`))
	assert.EqualError(t, err, `inline.yaml:8: limits[5]: never applies: the first matching rule wins, and the rules above it (lines 3, 4, 5, 6, 7) already match every path at concurrency 1+; move it above them or delete it`)
}

// Aliases to whole values are plain YAML and resolve like the value itself.
func TestParseResolvesAliases(t *testing.T) {
	const doc = `target: local
limits:
  - path: one-hop
    concurrency: &low "1-4"
    p50DeltaMs: &tight 1.5
    p99DeltaPct: 400
    throughputLossPct: 75
    sidecarCPUPer1kReqMs: 500
    sidecarRSSMiB: 256
  - path: two-hop
    concurrency: *low
    p50DeltaMs: *tight
    p99DeltaPct: 400
    throughputLossPct: 75
    sidecarCPUPer1kReqMs: 500
    sidecarRSSMiB: 256
`
	th, err := Parse("alias.yaml", []byte(doc))
	require.NoError(t, err)
	require.Len(t, th.Limits, 2)
	assert.Equal(t, Concurrency{Min: 1, Max: 4}, th.Limits[1].Concurrency)
	assert.Equal(t, 1.5, th.Limits[1].Allowed[P50DeltaMs])
	assert.Equal(t, 10, th.Limits[1].Line)
}

// A threshold rule that can match nothing is refused before measuring,
// naming file:line:field: a benchmark the package does not have, checked
// as soon as the benchmarks are known, and an axis value the benchmark
// it names does not sweep, checked against that benchmark's planned
// points.
func TestCheckValuesRefusesARuleThatMatchesNothing(t *testing.T) {
	const limits = `p50DeltaMs: 1, p99DeltaPct: 1, throughputLossPct: 1, sidecarCPUPer1kReqMs: 1, sidecarRSSMiB: 1}`
	th, err := Parse("th.yaml", []byte("target: local\nlimits:\n"+
		"  - {match: {benchmark: BenchmarkOneHopp}, path: one-hop, concurrency: \"1\", "+limits+"\n"+
		"  - {match: {benchmark: BenchmarkPayload, payload: 4KB}, path: one-hop, concurrency: \"1\", "+limits+"\n"+
		"  - {path: \"*\", concurrency: \"*\", "+limits+"\n"))
	require.NoError(t, err)
	domains := map[string][]string{"benchmark": {"BenchmarkOneHop", "BenchmarkPayload"}}
	assert.EqualError(t, th.CheckValues("", nil, domains),
		"th.yaml:3: limits[0].match.benchmark: \"BenchmarkOneHopp\" matches no value of benchmark, so the rule gates nothing; did you mean BenchmarkOneHop?")

	points := []map[string]string{{"benchmark": "BenchmarkPayload", "payload": "1KiB", "c": "1"}, {"benchmark": "BenchmarkPayload", "payload": "16KiB", "c": "1"}}
	err = th.CheckValues("BenchmarkPayload", points, domains)
	assert.EqualError(t, err, "th.yaml:3: limits[0].match.benchmark: \"BenchmarkOneHopp\" matches no value of benchmark, so the rule gates nothing; did you mean BenchmarkOneHop?\n"+
		"th.yaml:4: limits[1].match.payload: \"4KB\" matches no value of payload, so the rule gates nothing; payload takes 1KiB, 16KiB")

	// Another benchmark's points say nothing of BenchmarkPayload's axes.
	err = th.CheckValues("BenchmarkOneHop", []map[string]string{{"benchmark": "BenchmarkOneHop", "payload": "0B"}}, domains)
	assert.EqualError(t, err, "th.yaml:3: limits[0].match.benchmark: \"BenchmarkOneHopp\" matches no value of benchmark, so the rule gates nothing; did you mean BenchmarkOneHop?")
}

// Every shipped threshold fixture names only benchmarks that
// benchmarks/ has, so CheckFixtures accepts them.
func TestShippedThresholdsNameRealBenchmarks(t *testing.T) {
	files, err := filepath.Glob("../../benchmarks/*_test.go")
	require.NoError(t, err)
	var names []string
	re := regexp.MustCompile(`(?m)^func (Benchmark\w+)\(b \*testing\.B\)`)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range re.FindAllStringSubmatch(string(data), -1) {
			names = append(names, m[1])
		}
	}
	require.Contains(t, names, "BenchmarkOneHop")
	fixtures, err := filepath.Glob("../../fixtures/thresholds/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, fixtures)
	for _, f := range fixtures {
		th, err := Load(f)
		require.NoError(t, err)
		assert.NoError(t, th.CheckValues("", nil, map[string][]string{"benchmark": names}), f)
	}
}

// A fixture names the CPUs it was calibrated on; a run on another says
// that the limits' teeth may not carry there, and what to do about it. A
// fixture that names none, or a run on one of its CPUs, says nothing.
func TestOtherCPU(t *testing.T) {
	th, err := Load("../../fixtures/thresholds/local.yaml")
	require.NoError(t, err)
	assert.Equal(t, []string{"Intel(R) Xeon(R) Processor"}, th.CalibratedOn)
	assert.Empty(t, th.OtherCPU("Intel(R) Xeon(R) Processor"))
	assert.Equal(t, "../../fixtures/thresholds/local.yaml was calibrated on Intel(R) Xeon(R) Processor, not on this machine's AMD EPYC: "+
		"quiet runs here should pass its limits, but a doubled cost may stay within them at some points (docs/thresholds.md); "+
		"for limits with teeth here, calibrate on this machine (meshbench calibrate)", th.OtherCPU("AMD EPYC"))
	assert.Contains(t, th.OtherCPU(""), "not on this machine's unknown CPU")
	good, err := Load("testdata/good.yaml")
	require.NoError(t, err)
	assert.Empty(t, good.OtherCPU("AMD EPYC"), "a fixture that names no CPU")
}
