package gate

import (
	"errors"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/verdict"
)

// repoFile is a path relative to the module root.
func repoFile(t *testing.T, rel string) string {
	_, here, _, ok := runtime.Caller(0)
	require.True(t, ok)
	return filepath.Join(filepath.Dir(here), "..", "..", rel)
}

const goodFixture = `# a comment first
target: local
rules:
  - metric: sidecarCPUPer1kReq
    match: {path: one-hop, c: 8}
    maxIncreasePct: 5
  - metric: sidecarCPUPer1kReq
    match: {}
    maxIncreasePct: 10
  - metric: p99
    match:
      loop: open
      c: "[1-9]*"
    maxIncreasePct: 15.5
  - metric: throughput
    match: {loop: closed}
    maxDecreasePct: 5
`

func TestParse(t *testing.T) {
	g, err := Parse("gates.yaml", []byte(goodFixture))
	require.NoError(t, err)
	assert.Equal(t, &Gate{File: "gates.yaml", Target: "local", Rules: []Rule{
		{File: "gates.yaml", Line: 4, Metric: SidecarCPUPer1kReq, Match: map[string]string{"path": "one-hop", "c": "8"}, Worse: HigherIsWorse, LimitPct: 5},
		{File: "gates.yaml", Line: 7, Metric: SidecarCPUPer1kReq, Match: map[string]string{}, Worse: HigherIsWorse, LimitPct: 10},
		{File: "gates.yaml", Line: 10, Metric: P99, Match: map[string]string{"loop": "open", "c": "[1-9]*"}, Worse: HigherIsWorse, LimitPct: 15.5},
		{File: "gates.yaml", Line: 15, Metric: Throughput, Match: map[string]string{"loop": "closed"}, Worse: LowerIsWorse, LimitPct: 5},
	}}, g)
	assert.InDelta(t, 1.05, g.Rules[0].Limit(), 1e-15)
	assert.InDelta(t, 1.155, g.Rules[2].Limit(), 1e-15)
	assert.InDelta(t, 0.95, g.Rules[3].Limit(), 1e-15)
}

func TestRuleMatchesLabelsAndGlobs(t *testing.T) {
	g, err := Parse("gates.yaml", []byte(goodFixture))
	require.NoError(t, err)
	for _, tc := range []struct {
		labels Labels
		metric Metric
		line   int // 0: not gated
	}{
		{Labels{"path": "one-hop", "c": "8", "loop": "closed"}, SidecarCPUPer1kReq, 4},
		{Labels{"path": "two-hop", "c": "8", "loop": "closed"}, SidecarCPUPer1kReq, 7},
		{Labels{"path": "one-hop", "c": "16"}, SidecarCPUPer1kReq, 7},
		{Labels{}, SidecarCPUPer1kReq, 7},
		{Labels{"loop": "open", "c": "32"}, P99, 10},
		{Labels{"loop": "open", "c": "0"}, P99, 0},    // glob [1-9]* needs a leading 1-9
		{Labels{"loop": "open"}, P99, 0},              // a label the rule names must be present
		{Labels{"loop": "closed", "c": "32"}, P99, 0}, // value differs
		{Labels{"loop": "closed", "c": "1"}, Throughput, 15},
		{Labels{"loop": "open", "c": "1"}, Throughput, 0},
		{Labels{"loop": "closed", "c": "1"}, SidecarRSS, 0}, // no rule for the metric
	} {
		r, ok := g.Rule(tc.labels, tc.metric)
		assert.Equal(t, tc.line != 0, ok, "%s %s", tc.labels, tc.metric)
		assert.Equal(t, tc.line, r.Line, "%s %s", tc.labels, tc.metric)
	}
	assert.Equal(t, []Metric{P99, SidecarCPUPer1kReq}, g.Gated(Labels{"loop": "open", "c": "8", "path": "one-hop"}))
}

func TestShippedFixturesParse(t *testing.T) {
	scenarios := []Labels{
		{"path": "one-hop", "c": "8", "loop": "closed"},
		{"path": "one-hop", "c": "8", "loop": "open"},
		{"path": "two-hop", "c": "32", "loop": "closed"},
	}
	// Locally the arms run at once (duet), and the sidecar's CPU per
	// request is gated as it is; on kind they run one after another, and
	// at a fixed rate it is gated in units of the same window's workload
	// CPU.
	for target, open := range map[string]Metric{"local": SidecarCPUPer1kReq, "kind": SidecarCPUOverWorkloadCPU} {
		g, err := Load(repoFile(t, "fixtures/gates/"+target+".yaml"))
		require.NoError(t, err, target)
		require.NoError(t, g.CheckTarget(target))
		require.NoError(t, g.Check(scenarios), target)
		assert.ElementsMatch(t, []Metric{SidecarCPUPer1kReq, SidecarRSS, Throughput}, g.Gated(scenarios[0]), target)
		assert.ElementsMatch(t, []Metric{P99, open, SidecarRSS}, g.Gated(scenarios[1]), target)
	}
}

func TestCheckTargetRefusesAnotherTargetsFixture(t *testing.T) {
	g, err := Load(repoFile(t, "fixtures/gates/kind.yaml"))
	require.NoError(t, err)
	err = g.CheckTarget("local")
	var fe *verdict.FixtureError
	require.True(t, errors.As(err, &fe))
	assert.Equal(t, "target", fe.Field)
	assert.True(t, strings.HasSuffix(err.Error(),
		"fixtures/gates/kind.yaml:1: target: the fixture is for target kind, but this run is on local; use a gate fixture written for local (fixtures/gates/local.yaml)"), err.Error())
}

func TestParseErrorsNameFileLineAndField(t *testing.T) {
	rule := "  - metric: sidecarCPUPer1kReq\n    match: {}\n    maxIncreasePct: 10\n"
	head := "target: local\nrules:\n"
	for _, tc := range []struct{ name, data, want string }{
		{"empty", "", "g.yaml:1: top level: empty file; want a mapping with target and rules"},
		{"comments only", "# nothing\n", "g.yaml:1: top level: empty file; want a mapping with target and rules"},
		{"top list", "- a\n", "g.yaml:1: top level: got a list, want a mapping with target and rules"},
		{"two documents", head + rule + "---\ntarget: kind\n", "g.yaml:6: top level: a second YAML document; a fixture holds exactly one"},
		{"syntax", "target: local\nrules: [\n", "g.yaml:2: invalid YAML: did not find expected node content"},
		{"tab", head + "\t- metric: p99\n", "g.yaml:3: invalid YAML: a tab indents this line; YAML indents with spaces only"},
		{"bare star", head + "  - metric: p99\n    match: {c: *}\n    maxIncreasePct: 10\n", `g.yaml:4: invalid YAML: a bare * starts a YAML alias; quote it: "*"`},
		{"unknown top", "target: local\ntargets: kind\nrules:\n" + rule, "g.yaml:2: targets: unknown field; did you mean target?"},
		{"missing target", "rules:\n" + rule, "g.yaml:1: target: missing; want the target's name, e.g. local"},
		{"missing rules", "target: local\n", "g.yaml:1: rules: missing; want a list of rules, each with metric, match and maxIncreasePct or maxDecreasePct"},
		{"empty target", "target: \"\"\nrules:\n" + rule, `g.yaml:1: target: got "", want the target's name, e.g. local`},
		{"no rules", "target: local\nrules: []\n", "g.yaml:2: rules: no rules; want at least one (with none, nothing is gated)"},
		{"rules mapping", "target: local\nrules: {a: 1}\n", "g.yaml:2: rules: got a mapping, want a list of rules, each with metric, match and maxIncreasePct or maxDecreasePct"},
		{"rule scalar", head + "  - p99\n", `g.yaml:3: rules[0]: got "p99", want a mapping with metric, match and maxIncreasePct or maxDecreasePct`},
		{"unknown rule key", head + rule + "    maxIncrease: 5\n", "g.yaml:6: rules[0].maxIncrease: unknown field; known fields are metric, match, maxIncreasePct, maxDecreasePct, runSDPct"},
		{"typo rule key", head + "  - metric: p99\n    mtach: {}\n    maxIncreasePct: 10\n", "g.yaml:4: rules[0].mtach: unknown field; known fields are metric, match, maxIncreasePct, maxDecreasePct, runSDPct"},
		{"repeated key", head + rule + "    maxIncreasePct: 5\n", "g.yaml:6: rules[0].maxIncreasePct: repeated; it is already set on line 5"},
		{"missing metric", head + "  - match: {}\n    maxIncreasePct: 10\n", "g.yaml:3: rules[0].metric: missing; want the gated metric, e.g. sidecarCPUPer1kReq"},
		{"missing match", head + "  - metric: p99\n    maxIncreasePct: 10\n", `g.yaml:3: rules[0].match: missing; want the labels of the scenarios it gates, e.g. {path: one-hop, c: "8"}, or {} for every scenario`},
		{"missing limit", head + "  - metric: p99\n    match: {}\n", "g.yaml:3: rules[0].maxIncreasePct: missing; want the largest increase of candidate against reference, in percent, > 0, e.g. maxIncreasePct: 10"},
		{"missing decrease", head + "  - metric: throughput\n    match: {}\n", "g.yaml:3: rules[0].maxDecreasePct: missing; want the largest decrease of candidate against reference, in percent, > 0 and < 100, e.g. maxDecreasePct: 10"},
		{"unknown metric", head + "  - metric: p98\n    match: {}\n    maxIncreasePct: 10\n", "g.yaml:3: rules[0].metric: unknown metric \"p98\"; did you mean p90?"},
		{"unknown metric far", head + "  - metric: latency\n    match: {}\n    maxIncreasePct: 10\n", "g.yaml:3: rules[0].metric: unknown metric \"latency\"; known metrics are controlPlaneCPUPerProxy, controlPlaneCPUPerProxyScaled, controlPlaneRSSPerProxy, controlPlaneRSSPerProxyScaled, p50, p90, p99, p999, propagationP50, propagationP50Scaled, propagationP99, propagationP99Scaled, sidecarCPUOverWorkloadCPU, sidecarCPUPer1kReq, sidecarRSS, throughput, workloadCPUPer1kReq"},
		{"wrong direction up", head + "  - metric: throughput\n    match: {}\n    maxIncreasePct: 5\n", "g.yaml:5: rules[0].maxIncreasePct: throughput is worse when lower, so a gate limits its decrease; write maxDecreasePct"},
		{"wrong direction down", head + "  - metric: p99\n    match: {}\n    maxDecreasePct: 5\n", "g.yaml:5: rules[0].maxDecreasePct: p99 is worse when higher, so a gate limits its increase; write maxIncreasePct"},
		{"bad number", head + "  - metric: p99\n    match: {}\n    maxIncreasePct: ten\n", `g.yaml:5: rules[0].maxIncreasePct: "ten" is not a number; want the largest increase of candidate against reference, in percent, > 0`},
		{"quoted number", head + "  - metric: p99\n    match: {}\n    maxIncreasePct: \"10\"\n", `g.yaml:5: rules[0].maxIncreasePct: "10" is text to YAML; write the number alone, without quotes or %`},
		{"percent sign", head + "  - metric: p99\n    match: {}\n    maxIncreasePct: 10%\n", `g.yaml:5: rules[0].maxIncreasePct: "10%" is text to YAML; write the number alone, without quotes or %`},
		{"null limit", head + "  - metric: p99\n    match: {}\n    maxIncreasePct:\n", "g.yaml:5: rules[0].maxIncreasePct: no value; want the largest increase of candidate against reference, in percent, > 0 (leaving it empty does not switch the gate off)"},
		{"negative", head + "  - metric: p99\n    match: {}\n    maxIncreasePct: -10\n", "g.yaml:5: rules[0].maxIncreasePct: -10 is negative; want the largest increase of candidate against reference, in percent, > 0"},
		{"zero", head + "  - metric: p99\n    match: {}\n    maxIncreasePct: 0\n", "g.yaml:5: rules[0].maxIncreasePct: 0 allows no change at all: no interval can lie inside it, so the gate could never pass; want the largest increase of candidate against reference, in percent, > 0"},
		{"zero decrease", head + "  - metric: throughput\n    match: {}\n    maxDecreasePct: 0.0\n", "g.yaml:5: rules[0].maxDecreasePct: 0.0 allows no change at all: no interval can lie inside it, so the gate could never pass; want the largest decrease of candidate against reference, in percent, > 0 and < 100"},
		{"infinite", head + "  - metric: p99\n    match: {}\n    maxIncreasePct: .inf\n", "g.yaml:5: rules[0].maxIncreasePct: .inf is not a finite number; want the largest increase of candidate against reference, in percent, > 0"},
		{"decrease 100", head + "  - metric: throughput\n    match: {}\n    maxDecreasePct: 100\n", "g.yaml:5: rules[0].maxDecreasePct: 100 allows the metric to fall to nothing; want the largest decrease of candidate against reference, in percent, > 0 and < 100"},
		{"runSD text", head + rule + "    runSDPct: \"0.7\"\n", "g.yaml:6: rules[0].runSDPct: got \"0.7\", want the run-level SD of ln(candidate/reference) in percent, ≥ 0 and below the rule's limit 10, as `meshbench offsets` prints it"},
		{"runSD negative", head + rule + "    runSDPct: -1\n", "g.yaml:6: rules[0].runSDPct: -1: want the run-level SD of ln(candidate/reference) in percent, ≥ 0 and below the rule's limit 10, as `meshbench offsets` prints it"},
		{"runSD at the limit", head + rule + "    runSDPct: 10\n", "g.yaml:6: rules[0].runSDPct: 10: want the run-level SD of ln(candidate/reference) in percent, ≥ 0 and below the rule's limit 10, as `meshbench offsets` prints it"},
		{"limit list", head + "  - metric: p99\n    match: {}\n    maxIncreasePct: [10]\n", "g.yaml:5: rules[0].maxIncreasePct: got a list, want the largest increase of candidate against reference, in percent, > 0"},
		{"match list", head + "  - metric: p99\n    match: [path]\n    maxIncreasePct: 10\n", `g.yaml:4: rules[0].match: got a list, want a mapping of label to value, e.g. {path: one-hop, c: "8"}, or {} for every scenario`},
		{"match null value", head + "  - metric: p99\n    match: {path: }\n    maxIncreasePct: 10\n", `g.yaml:4: rules[0].match.path: got no value, want a value or a glob such as "*" (a bare * is a YAML alias: quote it)`},
		{"match nested", head + "  - metric: p99\n    match: {path: {a: b}}\n    maxIncreasePct: 10\n", `g.yaml:4: rules[0].match.path: got a mapping, want a value or a glob such as "*" (a bare * is a YAML alias: quote it)`},
		{"match bad glob", head + "  - metric: p99\n    match: {c: \"[1-\"}\n    maxIncreasePct: 10\n", `g.yaml:4: rules[0].match.c: "[1-" is not a valid glob: syntax error in pattern`},
		{"match bad label", head + "  - metric: p99\n    match: {\"a b\": x}\n    maxIncreasePct: 10\n", `g.yaml:4: rules[0].match: label "a b" is not a label name such as path or c`},
		{"match repeated", head + "  - metric: p99\n    match:\n      c: 1\n      c: 2\n    maxIncreasePct: 10\n", "g.yaml:6: rules[0].match.c: repeated; it is already set on line 5"},
		{"merge key", head + "  - metric: p99\n    <<: {match: {}}\n    maxIncreasePct: 10\n", "g.yaml:4: rules[0].<<: YAML merge keys are not supported; write every field out so each rule reads on its own"},
		{"shadowed by match-all", head + rule + "  - metric: sidecarCPUPer1kReq\n    match: {c: \"8\"}\n    maxIncreasePct: 5\n", "g.yaml:6: rules[1]: never applies: the rule on line 3 already gates sidecarCPUPer1kReq on every scenario this one matches, and the first matching rule wins; move this one above it or delete it"},
		{"duplicate match", head + "  - metric: p99\n    match: {c: \"8\"}\n    maxIncreasePct: 10\n  - metric: p99\n    match: {c: 8}\n    maxIncreasePct: 5\n", "g.yaml:6: rules[1]: never applies: the rule on line 3 already gates p99 on every scenario this one matches, and the first matching rule wins; move this one above it or delete it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("g.yaml", []byte(tc.data))
			require.Error(t, err)
			var fe *verdict.FixtureError
			assert.True(t, errors.As(err, &fe), "a FixtureError")
			assert.Equal(t, tc.want, err.Error())
		})
	}
}

func TestParseAllowsTheSameMatchForAnotherMetric(t *testing.T) {
	_, err := Parse("g.yaml", []byte("target: local\nrules:\n  - metric: p99\n    match: {}\n    maxIncreasePct: 10\n  - metric: p50\n    match: {}\n    maxIncreasePct: 10\n"))
	assert.NoError(t, err)
}

func TestCheckAgainstTheScenarios(t *testing.T) {
	scenarios := []Labels{
		{"path": "one-hop", "c": "1", "loop": "closed"},
		{"path": "one-hop", "c": "8", "loop": "closed"},
		{"path": "two-hop", "c": "8", "loop": "open"},
	}
	g, err := Parse("g.yaml", []byte(`target: local
rules:
  - metric: p99
    match: {lop: open}
    maxIncreasePct: 15
  - metric: throughput
    match: {path: three-hop}
    maxDecreasePct: 5
  - metric: sidecarRSS
    match: {c: "*"}
    maxIncreasePct: 10
  - metric: sidecarRSS
    match: {path: one-hop}
    maxIncreasePct: 5
  - metric: sidecarCPUPer1kReq
    match: {c: "8"}
    maxIncreasePct: 10
`))
	require.NoError(t, err)
	err = g.Check(scenarios)
	require.Error(t, err)
	assert.Equal(t, `g.yaml:3: rules[0].match.lop: no scenario has the label lop; did you mean loop?
g.yaml:6: rules[1].match: matches none of the 3 scenarios; their labels are c=1,8 loop=closed,open path=one-hop,two-hop
g.yaml:12: rules[3]: never applies: the rules above it already gate sidecarRSS on all 2 scenarios it matches, and the first matching rule wins; move it above them or delete it`, err.Error())

	assert.NoError(t, g.Check([]Labels{{"lop": "open", "path": "three-hop", "c": "8"}, {"path": "one-hop"}}),
		"rule 3 gates one-hop without c")
	assert.EqualError(t, g.Check(nil), "g.yaml: no scenarios to gate")
}

// A rule value that matches no value its label takes is refused before
// anything is measured, naming the file, line and field: loop takes
// closed or open whatever the run measures, so a rule for open loop is
// valid on a run with only closed-loop points, and loop: opn is not; an
// axis value is checked against the values the planned points give it.
func TestCheckValuesRefusesAValueNoPointTakes(t *testing.T) {
	g, err := Parse("g.yaml", []byte("target: local\nrules:\n  - metric: p99\n    match: {loop: opn}\n    maxIncreasePct: 15\n"+
		"  - metric: throughput\n    match: {load: open}\n    maxDecreasePct: 5\n  - metric: sidecarRSS\n    match: {loop: open}\n    maxIncreasePct: 10\n"))
	require.NoError(t, err)
	closed := []Labels{{"benchmark": "BenchmarkUpgradeGate", "load": "max", "c": "8", "loop": "closed"}}
	err = g.CheckValues(closed, Domains)
	var fe *verdict.FixtureError
	require.ErrorAs(t, err, &fe)
	assert.EqualError(t, err, "g.yaml:3: rules[0].match.loop: \"opn\" matches no value of loop, so the rule gates nothing; did you mean open?\n"+
		"g.yaml:6: rules[1].match.load: \"open\" matches no value of load, so the rule gates nothing; load takes max")

	assert.EqualError(t, g.CheckValues(nil, Domains), "g.yaml:3: rules[0].match.loop: \"opn\" matches no value of loop, so the rule gates nothing; did you mean open?",
		"before the points are known, the labels with a domain are checked")
}

// Against a stored reference the verdict's error is split over its
// decisions and looks as a sequential verdict's is over its decisions.
func TestStoredConfidenceSplitsAlphaOverDecisionsAndLooks(t *testing.T) {
	assert.InDelta(t, 0.90, StoredConfidence(1, 1), 1e-15)
	assert.InDelta(t, 1-0.1/6, StoredConfidence(6, 1), 1e-15)
	assert.InDelta(t, 1-0.1/18, StoredConfidence(6, 3), 1e-15)
	assert.InDelta(t, 1-Sequential{Decisions: 6}.Alpha(), StoredConfidence(6, 1), 1e-15, "as the paired gate's level")
}
