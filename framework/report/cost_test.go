package report_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/report"
	"github.com/meshbench/meshbench/framework/stats"
	"github.com/meshbench/meshbench/framework/testbed"
)

// Round prices make the formula checkable by hand: 0.5 mesh cores per 1k
// req/s at 1000 req/s is 0.5/1000 × 1e6/3600 vCPU-hours per 1M requests,
// and 1 GiB held for the 1000 s that 1M requests take.
func TestCostFollowsTheFormula(t *testing.T) {
	p := &report.Prices{Currency: "USD", VCPUHour: 3.6, GiBHour: 0.36, AverageRPS: 2000, PeakRPS: 10000, HoursPerMonth: 100}
	c := report.Comparison{Benchmark: "BenchmarkOneHop", Path: testbed.OneHop, Concurrency: 4, Meshed: report.ArmStats{
		MeshCores:         stats.Summary{N: 2, Median: 0.5, Lo: 0.4, Hi: 0.6},
		MeshCoresPer1kRPS: stats.Summary{N: 2, Median: 0.5, Lo: 0.4, Hi: 0.6},
		MeshRSSMiB:        stats.Summary{N: 2, Median: 1024, Lo: 1000, Hi: 1048},
		QPS:               stats.Summary{N: 2, Median: 1000, Lo: 900, Hi: 1100},
	}}
	k, ok := p.Cost(c)
	require.True(t, ok)
	assert.Equal(t, "BenchmarkOneHop/c=4", k.Scenario)
	assert.InDelta(t, 0.5*1000/3600, k.VCPUHoursPer1M.Median, 1e-12)
	assert.InDelta(t, 0.5, k.CPUPer1M, 1e-12)      // 0.1389 vCPU-h × 3.6
	assert.InDelta(t, 0.1, k.MemoryPer1M, 1e-12)   // 1 GiB × 0.36 × 1000 s / 3600
	assert.InDelta(t, 0.6, k.Per1M.Median, 1e-12)  // both
	assert.InDelta(t, 0.5, k.Per1M.Lo, 1e-12)      // 0.4 cores per 1k req/s
	assert.InDelta(t, 396, k.MonthlyAverage, 1e-9) // 0.5/1000 × 2000 × 100 h × 3.6 + 1 × 100 × 0.36
	assert.InDelta(t, 1836, k.MonthlyPeak, 1e-9)   // 0.5/1000 × 10000 × 100 h × 3.6 + 36
	_, ok = p.Cost(report.Comparison{Meshed: report.ArmStats{QPS: stats.Summary{N: 1, Median: 10}}})
	assert.False(t, ok, "no mesh cores measured, nothing to price")
}

func TestParsePrices(t *testing.T) {
	p, err := report.LoadPrices("")
	require.NoError(t, err)
	assert.Equal(t, report.Prices{File: "fixtures/prices/example.yaml", Currency: "USD", VCPUHour: 0.0425, GiBHour: 0.0057,
		AverageRPS: 50000, PeakRPS: 1e6, HoursPerMonth: 730}, *p)
	p, err = report.LoadPrices("../../fixtures/prices/example.yaml")
	require.NoError(t, err)
	assert.Equal(t, 0.0425, p.VCPUHour, "the file and the embedded copy agree")

	const good = "currency: EUR\nvcpuHour: 0.04\ngibHour: 0.005\naverageRPS: 100\npeakRPS: 1000\nhoursPerMonth: 730\n"
	for _, tc := range []struct{ data, want string }{
		{good + "vcpuHours: 1\n", "p.yaml:7: vcpuHours: unknown field; known fields are currency, vcpuHour, gibHour, averageRPS, peakRPS, hoursPerMonth"},
		{"currency: EUR\nvcpuHour: 0.04\n", "p.yaml:1: gibHour: missing; every key of fixtures/prices/example.yaml is required"},
		{"currency: EUR\nvcpuHour: -1\n", "p.yaml:2: vcpuHour: -1: want a finite number > 0"},
		{"currency: EUR\nvcpuHour: \"0.04\"\n", `p.yaml:2: vcpuHour: "0.04" is not a number; want a number > 0`},
		{"currency: EUR\ncurrency: USD\n", "p.yaml:2: currency: repeated"},
		{"- 1\n", "p.yaml:1: top level: want a mapping with currency, vcpuHour, gibHour, averageRPS, peakRPS, hoursPerMonth"},
	} {
		_, err := report.ParsePrices("p.yaml", []byte(tc.data))
		assert.EqualError(t, err, tc.want, tc.data)
	}
}

// The per-pod ratio divides each sidecar by the app beside it; the
// loadgen's sidecar, with no app beside it, is left out.
func TestPodRatiosAndMeshUsage(t *testing.T) {
	w := measure.Window{Usage: []measure.Usage{
		{Name: "loadgen", Role: measure.RoleLoadgen, MilliCores: 900},
		{Name: "meshed/loadgen-sidecar", Role: measure.RoleSidecar, Pod: "meshed/loadgen", MilliCores: 600, LoadRSS: 30 << 20},
		{Name: "meshed/backend-sidecar", Role: measure.RoleSidecar, Pod: "meshed/backend", MilliCores: 300, LoadRSS: 40 << 20},
		{Name: "meshed/backend", Role: measure.RoleApp, Pod: "meshed/backend", MilliCores: 100, LoadRSS: 10 << 20},
		{Name: "istio-system/ztunnel-x/istio-proxy", Role: measure.RoleNodeProxy, Pod: "istio-system/ztunnel-x", MilliCores: 50, LoadRSS: 20 << 20},
		{Name: "istio-system/istiod-y/discovery", Role: measure.RoleControlPlane, Pod: "istio-system/istiod-y", MilliCores: 50},
	}}
	assert.Equal(t, map[string]float64{"meshed/backend": 3}, report.PodRatios(w))
	assert.Equal(t, report.MeshUsage{Cores: 1.0, RSSMiB: 90}, report.Mesh(w))
}

func TestParseFormats(t *testing.T) {
	fs, err := report.ParseFormats("html,md")
	require.NoError(t, err)
	assert.Equal(t, []report.Format{report.FormatHTML, report.FormatMarkdown}, fs)
	fs, err = report.ParseFormats("csv, smp")
	require.NoError(t, err)
	assert.Equal(t, []report.Format{report.FormatCSV, report.FormatSMP}, fs)
	assert.Equal(t, []string{"html", "md", "csv", "smp.yaml"}, []string{report.FormatHTML.Ext(), report.FormatMarkdown.Ext(), report.FormatCSV.Ext(), report.FormatSMP.Ext()})
	_, err = report.ParseFormats("pdf")
	assert.EqualError(t, err, `format "pdf": want html, md, csv or smp, or several comma-separated`)
}
