package gate

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/labels"
	"github.com/meshbench/meshbench/framework/load"
	meas "github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/testbed"
)

// settings mirrors the JSON names of the suite's Config that Comparable
// reads, as a run writes them.
type settings struct {
	Target       string        `json:"target"`
	Concurrency  []int         `json:"concurrency"`
	Duration     time.Duration `json:"duration"`
	Warmup       time.Duration `json:"warmup"`
	QPS          float64       `json:"qps"`
	Protocol     string        `json:"protocol"`
	ResponseSize int           `json:"responseSize"`
	RequestSize  int           `json:"requestSize"`
	Sidecar      string        `json:"sidecar"`
}

func record(bench string, path testbed.Path, c int, arm testbed.Arm, qps float64) report.Record {
	return report.Record{Benchmark: bench, Concurrency: c, Run: &testbed.Run{Arm: arm, Path: path,
		Load: &load.Result{Options: load.Options{Concurrency: c, QPS: qps, Duration: 3 * time.Second, Warmup: time.Second, Protocol: "http1"}}}}
}

func results(mut func(*settings, *report.Results)) *report.Results {
	s := settings{Target: "local", Concurrency: []int{1, 8}, Duration: 3 * time.Second, Warmup: time.Second,
		Protocol: "http1", ResponseSize: 128, Sidecar: "caddy@v2.10.2"}
	r := &report.Results{Schema: report.Schema,
		Environment: testbed.Environment{Target: "local", GoVersion: "go1.26.8", Kernel: "6.1.0-18-amd64",
			CPUModel: "Intel(R) Xeon(R) Processor", Cores: 2, MemoryMiB: 24000, Nodes: 1,
			Mesh: testbed.MeshInfo{Name: "sidecar/caddy", Version: "v2.10.2"}},
		Records: []report.Record{
			record("BenchmarkOneHop", testbed.OneHop, 1, testbed.Baseline, 0),
			record("BenchmarkOneHop", testbed.OneHop, 1, testbed.Meshed, 0),
			record("BenchmarkOneHop", testbed.OneHop, 8, testbed.Meshed, 0),
			record("BenchmarkOneHopOpenLoop", testbed.OneHop, 8, testbed.Meshed, 2000),
		}}
	if mut != nil {
		mut(&s, r)
	}
	r.Settings = s
	return r
}

// stored round-trips r through JSON, as report.Read would give it back:
// Settings becomes a map.
func stored(t *testing.T, r *report.Results) *report.Results {
	data, err := json.Marshal(r)
	require.NoError(t, err)
	var out report.Results
	require.NoError(t, json.Unmarshal(data, &out))
	require.IsType(t, map[string]any{}, out.Settings)
	return &out
}

func TestComparableRunsWithAnotherMeshVersion(t *testing.T) {
	ref := stored(t, results(nil))
	run := results(func(s *settings, r *report.Results) {
		s.Sidecar = "caddy@v2.11.9" // the mesh is what is compared
		r.Environment.Mesh.Version = "v2.11.9"
	})
	warnings, err := Comparable(ref, run)
	require.NoError(t, err)
	assert.Empty(t, warnings)
}

func TestComparableRefusesNamingTheField(t *testing.T) {
	for _, tc := range []struct {
		name string
		mut  func(*settings, *report.Results)
		want string
	}{
		{"target", func(s *settings, r *report.Results) { r.Environment.Target = "kind" }, "environment.target differs: reference local, this run kind"},
		{"concurrency", func(s *settings, r *report.Results) { s.Concurrency = []int{1, 8, 32} }, "settings.concurrency differs: reference [1 8], this run [1 8 32]"},
		{"duration", func(s *settings, r *report.Results) { s.Duration = 10 * time.Second }, "settings.duration differs: reference 3s, this run 10s"},
		{"warmup", func(s *settings, r *report.Results) { s.Warmup = 0 }, "settings.warmup differs: reference 1s, this run 0s"},
		{"qps", func(s *settings, r *report.Results) { s.QPS = 500 }, "settings.qps differs: reference 0, this run 500"},
		{"protocol", func(s *settings, r *report.Results) { s.Protocol = "h2" }, "settings.protocol differs: reference http1, this run h2"},
		{"payload", func(s *settings, r *report.Results) { s.ResponseSize = 1024 }, "settings.responseSize differs: reference 128, this run 1024"},
		{"request size", func(s *settings, r *report.Results) { s.RequestSize = 512 }, "settings.requestSize differs: reference 0, this run 512"},
		{"cores", func(s *settings, r *report.Results) { r.Environment.Cores = 4 }, "environment.cores differs: reference 2, this run 4"},
		{"nodes", func(s *settings, r *report.Results) { r.Environment.Nodes = 3 }, "environment.nodes differs: reference 1, this run 3"},
		{"scenario set", func(s *settings, r *report.Results) {
			r.Records = append(r.Records[:3], record("BenchmarkTwoHop", testbed.TwoHop, 8, testbed.Meshed, 0))
		}, "scenarios differ: only the reference has BenchmarkOneHopOpenLoop/path=one-hop/c=8; only this run has BenchmarkTwoHop/path=two-hop/c=8"},
		{"a scenario's own rate", func(s *settings, r *report.Results) { r.Records[3].Load.Options.QPS = 1000 }, "records[BenchmarkOneHopOpenLoop/path=one-hop/c=8].load.options differs: reference {QPS:2000 RateFraction:0 Duration:3s Warmup:1s Protocol:http1 RequestSize:0}, this run {QPS:1000 RateFraction:0 Duration:3s Warmup:1s Protocol:http1 RequestSize:0}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Comparable(stored(t, results(nil)), results(tc.mut))
			require.Error(t, err)
			var ie *IncomparableError
			assert.True(t, errors.As(err, &ie))
			assert.Equal(t, tc.want, err.Error())
		})
	}
}

// The upgrade gate's open-loop rate is a fraction of the capacity each run
// measured: runs at the same fraction are comparable whatever rate it came
// to on each machine (818 req/s stored, 833 now).
func TestComparableByTheRateFraction(t *testing.T) {
	frac := func(qps, f float64) func(*settings, *report.Results) {
		return func(_ *settings, r *report.Results) {
			o := &r.Records[3].Load.Options
			o.QPS, o.RateFraction = qps, f
		}
	}
	_, err := Comparable(stored(t, results(frac(818, 0.25))), results(frac(833, 0.25)))
	require.NoError(t, err)
	_, err = Comparable(stored(t, results(frac(818, 0.25))), results(frac(833, 0.5)))
	assert.EqualError(t, err, "records[BenchmarkOneHopOpenLoop/path=one-hop/c=8].load.options differs: reference {QPS:0 RateFraction:0.25 Duration:3s Warmup:1s Protocol:http1 RequestSize:0}, this run {QPS:0 RateFraction:0.5 Duration:3s Warmup:1s Protocol:http1 RequestSize:0}")
}

func TestComparableListsEveryDifference(t *testing.T) {
	_, err := Comparable(stored(t, results(nil)), results(func(s *settings, r *report.Results) {
		s.Duration = 10 * time.Second
		r.Environment.Cores = 8
	}))
	assert.EqualError(t, err, "settings.duration differs: reference 3s, this run 10s\nenvironment.cores differs: reference 2, this run 8")
}

func TestComparableWarnsOnTheMachine(t *testing.T) {
	warnings, err := Comparable(stored(t, results(nil)), results(func(s *settings, r *report.Results) {
		r.Environment.CPUModel = "AMD EPYC 7B13"
		r.Environment.Kernel = "6.1.0-21-amd64"
		r.Environment.Kubernetes = "v1.34.0"
		r.Environment.CPUCounters = "on demand"
	}))
	require.NoError(t, err)
	assert.Equal(t, []string{
		"environment.cpuModel differs: reference Intel(R) Xeon(R) Processor, this run AMD EPYC 7B13; figures may shift with it",
		"environment.kernel differs: reference 6.1.0-18-amd64, this run 6.1.0-21-amd64; figures may shift with it",
		"environment.kubernetes differs: reference (none), this run v1.34.0; figures may shift with it",
		"environment.cpuCounters differs: reference (none), this run on demand; figures may shift with it",
	}, warnings)
}

// Scenarios are told apart by every label but the arm: two payloads of
// the same benchmark and c are two scenarios.
func TestComparableScenariosUseTheLabels(t *testing.T) {
	labelled := func(payload string, arm testbed.Arm) report.Record {
		r := record("BenchmarkPayload", testbed.OneHop, 8, arm, 0)
		r.Labels = labels.Set{{Key: labels.Benchmark, Value: "BenchmarkPayload"}, {Key: labels.Payload, Value: payload}, {Key: labels.Concurrency, Value: "8"}}
		return r
	}
	ref := []report.Record{labelled("128B", testbed.Baseline), labelled("128B", testbed.Meshed), labelled("16KiB", testbed.Meshed)}
	assert.NoError(t, ComparableScenarios(ref, []report.Record{labelled("128B", testbed.Meshed), labelled("16KiB", testbed.Baseline)}))
	err := ComparableScenarios(ref, []report.Record{labelled("128B", testbed.Meshed), labelled("100KiB", testbed.Meshed)})
	assert.EqualError(t, err, "scenarios differ: only the reference has BenchmarkPayload/payload=16KiB/c=8/path=one-hop; only this run has BenchmarkPayload/payload=100KiB/c=8/path=one-hop")
	assert.Equal(t, "BenchmarkPayload/payload=16KiB/c=8/path=one-hop", ScenarioName(labelled("16KiB", testbed.Candidate)))
}

// Settings alone can be checked before this run has any record.
func TestComparableSettingsIgnoresTheRecords(t *testing.T) {
	_, err := ComparableSettings(stored(t, results(nil)), results(func(s *settings, r *report.Results) { r.Records = nil }))
	assert.NoError(t, err)
	_, err = ComparableSettings(stored(t, results(nil)), results(func(s *settings, r *report.Results) {
		r.Records = nil
		s.QPS = 500
	}))
	assert.EqualError(t, err, "settings.qps differs: reference 0, this run 500")
}

// A cluster's sidecar memory is its RSS since 2026-12-06 and was its
// working set before, unmarked: a stored reference of the one is refused
// against a run of the other, naming the field; runs that measured alike
// compare.
func TestComparableScenariosRefuseAnotherMemory(t *testing.T) {
	withMemory := func(kind meas.MemoryKind) []report.Record {
		r := record("BenchmarkOneHop", testbed.OneHop, 8, testbed.Meshed, 0)
		r.Resources.Usage = []meas.Usage{
			{Name: "ns/backend/app", Role: meas.RoleApp, Memory: kind},
			{Name: "ns/backend/sidecar", Role: meas.RoleSidecar, Memory: kind},
		}
		return []report.Record{r}
	}
	assert.NoError(t, ComparableScenarios(withMemory(meas.MemoryRSS), withMemory(meas.MemoryRSS)))
	assert.NoError(t, ComparableScenarios(withMemory(""), withMemory("")))
	err := ComparableScenarios(withMemory(""), withMemory(meas.MemoryRSS))
	var inc *IncomparableError
	require.ErrorAs(t, err, &inc)
	assert.Equal(t, "records[].resources.usage[].memory", inc.Field)
	assert.Contains(t, err.Error(), "the sidecars' memory is unmarked in the reference and rss in this run")
	assert.Contains(t, err.Error(), "store the reference again")
}

// Locally only an arm's first window at a load is warmed up, so which of
// a scenario's records had the warm-up depends on what ran before it:
// scenarios compare by the longest warm-up of their records, and another
// warm-up is still refused.
func TestComparableScenariosByTheirLongestWarmup(t *testing.T) {
	warmups := func(ws ...time.Duration) []report.Record {
		var recs []report.Record
		for _, w := range ws {
			r := record("BenchmarkOneHop", testbed.OneHop, 8, testbed.Meshed, 0)
			r.Load.Options.Warmup = w
			recs = append(recs, r)
		}
		return recs
	}
	const w = 150 * time.Millisecond
	assert.NoError(t, ComparableScenarios(warmups(w, -1, -1), warmups(-1, w, -1)), "warmed up by an earlier scenario, then at its second window")
	err := ComparableScenarios(warmups(w, -1), warmups(300*time.Millisecond, -1))
	var inc *IncomparableError
	require.ErrorAs(t, err, &inc)
	assert.Contains(t, err.Error(), "Warmup:150ms")
	assert.Contains(t, err.Error(), "Warmup:300ms")
}
