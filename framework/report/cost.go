package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/meshbench/meshbench/fixtures/prices"
	"github.com/meshbench/meshbench/framework/stats"
	"github.com/meshbench/meshbench/framework/verdict"
)

// Prices is a decoded price fixture (fixtures/prices/example.yaml documents
// the keys). It holds prices and rates only: the cores and memory it prices
// are always the measured ones.
type Prices struct {
	File          string  `yaml:"-"`             // where it was loaded from, for messages
	Currency      string  `yaml:"currency"`      // e.g. USD
	VCPUHour      float64 `yaml:"vcpuHour"`      // price of one vCPU for one hour
	GiBHour       float64 `yaml:"gibHour"`       // price of one GiB of memory for one hour
	AverageRPS    float64 `yaml:"averageRPS"`    // steady rate priced, requests/second
	PeakRPS       float64 `yaml:"peakRPS"`       // peak rate provisioned for, requests/second
	HoursPerMonth float64 `yaml:"hoursPerMonth"` // hours in the month priced
}

var priceKeys = []string{"currency", "vcpuHour", "gibHour", "averageRPS", "peakRPS", "hoursPerMonth"}

// LoadPrices reads a price fixture; "" loads the embedded example.
func LoadPrices(path string) (*Prices, error) {
	if path == "" {
		return ParsePrices(prices.ExampleFile, prices.Example)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("prices: %w", err)
	}
	return ParsePrices(path, data)
}

// ParsePrices decodes a price fixture strictly: one YAML mapping with every
// key of example.yaml and no other, each number finite and > 0. A problem
// is a *verdict.FixtureError naming the file, line and key.
func ParsePrices(name string, data []byte) (*Prices, error) {
	fail := func(line int, field, format string, args ...any) error {
		return &verdict.FixtureError{File: name, Line: line, Field: field, Problem: fmt.Sprintf(format, args...)}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fail(0, "", "invalid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fail(1, "top level", "want a mapping with %s", strings.Join(priceKeys, ", "))
	}
	root := doc.Content[0]
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch {
		case !slices.Contains(priceKeys, k.Value):
			return nil, fail(k.Line, k.Value, "unknown field; known fields are %s", strings.Join(priceKeys, ", "))
		case seen[k.Value]:
			return nil, fail(k.Line, k.Value, "repeated")
		case k.Value == "currency":
			if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" || v.Value == "" {
				return nil, fail(v.Line, k.Value, "want a currency name, e.g. USD")
			}
		default:
			var f float64
			if v.Kind != yaml.ScalarNode || (v.ShortTag() != "!!int" && v.ShortTag() != "!!float") || v.Decode(&f) != nil {
				return nil, fail(v.Line, k.Value, "%q is not a number; want a number > 0", v.Value)
			}
			if math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 {
				return nil, fail(v.Line, k.Value, "%s: want a finite number > 0", v.Value)
			}
		}
		seen[k.Value] = true
	}
	for _, k := range priceKeys {
		if !seen[k] {
			return nil, fail(root.Line, k, "missing; every key of %s is required", prices.ExampleFile)
		}
	}
	p := &Prices{File: name}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(p); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return p, nil
}

// Cost is what the mesh of one scenario's meshed arm costs, from its
// measured cores, memory and achieved rate.
type Cost struct {
	// Scenario names the comparison priced (Comparison.Scenario).
	Scenario string
	// Inputs, medians over repeats (the cores per 1k req/s with their
	// interval): mesh cores, achieved req/s, mesh memory in GiB.
	MeshCores         float64
	MeshCoresPer1kRPS stats.Summary
	RPS               float64
	MeshGiB           float64
	// VCPUHoursPer1M = cores per 1k req/s × 1000 / 3600, with interval.
	VCPUHoursPer1M stats.Summary
	// CPUPer1M and MemoryPer1M are money per million requests, in
	// Prices.Currency; Per1M their sum, with the interval of the CPU part.
	CPUPer1M, MemoryPer1M float64
	Per1M                 stats.Summary
	// MonthlyAverage and MonthlyPeak are the month's mesh cost, in
	// Prices.Currency, at the average and the peak rate of the price
	// fixture.
	MonthlyAverage, MonthlyPeak float64
	// CPUInvalid says the mesh cores include runs whose CPU figures are
	// not valid (ArmStats.CPUInvalid): every figure priced from them is
	// marked (CPUMark).
	CPUInvalid bool
}

// Cost prices a comparison's meshed arm; false when it has no mesh cores
// or no throughput to price.
func (p *Prices) Cost(c Comparison) (Cost, bool) {
	m := c.Meshed
	if m.MeshCores.N == 0 || m.QPS.Median <= 0 || m.MeshCoresPer1kRPS.N == 0 {
		return Cost{}, false
	}
	k := Cost{Scenario: c.Scenario(), MeshCores: m.MeshCores.Median, MeshCoresPer1kRPS: m.MeshCoresPer1kRPS,
		RPS: m.QPS.Median, MeshGiB: m.MeshRSSMiB.Median / 1024, CPUInvalid: m.CPUInvalid > 0}
	k.VCPUHoursPer1M = m.MeshCoresPer1kRPS.Scale(1000.0 / 3600)
	cpu := k.VCPUHoursPer1M.Scale(p.VCPUHour)
	k.CPUPer1M = cpu.Median
	k.MemoryPer1M = k.MeshGiB * p.GiBHour * 1e6 / (k.RPS * 3600)
	k.Per1M = stats.Summary{N: cpu.N, Median: cpu.Median + k.MemoryPer1M, Lo: cpu.Lo + k.MemoryPer1M, Hi: cpu.Hi + k.MemoryPer1M, Confidence: cpu.Confidence}
	month := func(rps float64) float64 {
		return m.MeshCoresPer1kRPS.Median/1000*rps*p.HoursPerMonth*p.VCPUHour + k.MeshGiB*p.HoursPerMonth*p.GiBHour
	}
	k.MonthlyAverage, k.MonthlyPeak = month(p.AverageRPS), month(p.PeakRPS)
	return k, true
}
