package gate

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat"

	"github.com/meshbench/meshbench/framework/stats"
)

// R's PlantGrowth, summary(aov(weight ~ group)): "group 2 3.766 1.8832
// 4.846 0.0159; Residuals 27 10.492 0.3886".
func TestOneWayANOVAMatchesR(t *testing.T) {
	groups := [][]float64{
		{4.17, 5.58, 5.18, 6.11, 4.50, 4.61, 5.17, 4.53, 5.33, 5.14},
		{4.81, 4.17, 4.41, 3.59, 5.87, 3.83, 6.03, 4.89, 4.32, 4.69},
		{6.31, 5.12, 5.54, 5.50, 5.37, 5.29, 4.92, 6.15, 5.80, 5.26},
	}
	var n []int
	var mean, sd []float64
	for _, g := range groups {
		m, s := stat.MeanStdDev(g, nil)
		n, mean, sd = append(n, len(g)), append(mean, m), append(sd, s)
	}
	a := OneWayANOVA(n, mean, sd)
	assert.Equal(t, 2, a.DF1)
	assert.Equal(t, 27, a.DF2)
	assert.InDelta(t, 3.766, a.SSB, 5e-4)
	assert.InDelta(t, 10.492, a.SSW, 5e-4)
	assert.InDelta(t, 0.3886, a.MSW, 5e-5)
	assert.InDelta(t, 4.846, a.F, 5e-4)
	assert.InDelta(t, 0.0159, a.P, 5e-5)
}

func TestOneWayANOVAByHand(t *testing.T) {
	// Groups {1,2,3}, {2,3,4}, {5,6,7}: means 2, 3, 6, SD 1, grand mean
	// 11/3; SSB = 3·(25+4+49)/9 = 26, SSW = 3·2·1 = 6, F = 13 on (2, 6),
	// and F(2, d)'s upper tail is (1 + 2F/d)^(−d/2) = (16/3)^−3.
	a := OneWayANOVA([]int{3, 3, 3}, []float64{2, 3, 6}, []float64{1, 1, 1})
	assert.InDelta(t, 26, a.SSB, 1e-12)
	assert.InDelta(t, 6, a.SSW, 1e-12)
	assert.InDelta(t, 13, a.F, 1e-12)
	assert.InDelta(t, 27.0/4096, a.P, 1e-12)

	one := OneWayANOVA([]int{3}, []float64{2}, []float64{1})
	assert.True(t, math.IsNaN(one.F), "one group has nothing to compare")
	assert.InDelta(t, 1, one.MSW, 1e-12)
	assert.True(t, math.IsNaN(OneWayANOVA(nil, nil, nil).MSW))
}

func TestRunOffsets(t *testing.T) {
	sc := Labels{"load": "max"}
	dec := func(m Metric, logMean, logSD float64, n int, lo, hi float64) Decision {
		return Decision{Scenario: sc, Metric: m, Interval: stats.RatioInterval{
			Ratio: math.Exp(logMean), Lo: lo, Hi: hi, N: n, LogMean: logMean, LogSD: logSD}}
	}
	runs := map[string][]Decision{
		"run2": {dec(Throughput, 0.2, 0.2, 4, 1.01, 1.5), dec(SidecarCPUPer1kReq, 0, 0, 0, 0, 0)},
		"run1": {dec(Throughput, 0.1, 0.2, 4, 0.9, 1.3)},
		"run3": {dec(Throughput, 0.3, 0.2, 4, 1.05, 1.7)},
	}
	got := RunOffsets(runs)
	require.Len(t, got, 1, "a decision with no interval (n=0) is left out")
	o := got[0]
	assert.Equal(t, []string{"run1", "run2", "run3"}, []string{o.Runs[0].Run, o.Runs[1].Run, o.Runs[2].Run})
	assert.Equal(t, 2, o.Excluding)
	// Means 0.1, 0.2, 0.3 (SD 0.1 over the runs, t(0.975, 2) = 4.3027),
	// 4 pairs each with SD 0.2: SSB = 4·0.02 = 0.08 on 2 df, SSW = 9·0.04
	// on 9, F = 0.04/0.04 = 1, upper tail (1 + 2/9)^−4.5.
	assert.InDelta(t, math.Exp(0.2), o.Mean, 1e-12)
	assert.InDelta(t, math.Exp(0.2-4.302652729911275*0.1/math.Sqrt(3)), o.MeanLo, 1e-9)
	assert.InDelta(t, 0.2, o.PairSD, 1e-12)
	assert.InDelta(t, 1, o.Spread.F, 1e-12)
	assert.Equal(t, [2]int{2, 9}, [2]int{o.Spread.DF1, o.Spread.DF2})
	assert.InDelta(t, math.Pow(11.0/9, -4.5), o.Spread.P, 1e-9)
	assert.Equal(t, "throughput load=max: 3 runs, 2 of whose intervals exclude 1; per-pair SD 20.0 %; mean ratio 1.2214 (0.9527–1.5658 over the runs); between runs F 1.00 on 2 and 9 df, p=0.405; run-level SD 0.00 %", o.String())
	assert.Zero(t, o.RunSD, "the runs spread as their pairs do: MSB = MSW")
}

// TestRunLevelSD: the random-effects (ANOVA, method-of-moments) estimate
// of the between-group SD, which for balanced groups is also REML's.
func TestRunLevelSD(t *testing.T) {
	// R's PlantGrowth: MSB 1.8832, MSW 0.3886, 10 a group, so
	// σ² = (1.8832 − 0.3886)/10 = 0.14946.
	plant := ANOVA{MSB: 3.76634 / 2, MSW: 10.49209 / 27, F: 4.846}
	assert.InDelta(t, math.Sqrt((3.76634/2-10.49209/27)/10), runLevelSD([]int{10, 10, 10}, plant), 1e-12)
	assert.InDelta(t, 0.3866, runLevelSD([]int{10, 10, 10}, plant), 5e-5)
	// By hand: groups {1,2,3}, {2,3,4}, {5,6,7}: MSB 13, MSW 1, n₀ 3.
	assert.InDelta(t, 2, runLevelSD([]int{3, 3, 3}, OneWayANOVA([]int{3, 3, 3}, []float64{2, 3, 6}, []float64{1, 1, 1})), 1e-12)
	// Unequal runs: n₀ = (N − Σn²/N)/(k − 1) = (6 − 20/6)/1 = 8/3.
	assert.InDelta(t, math.Sqrt((5-1)/(8.0/3)), runLevelSD([]int{2, 4}, ANOVA{MSB: 5, MSW: 1, F: 5}), 1e-12)
	assert.Zero(t, runLevelSD([]int{3, 3}, ANOVA{MSB: 0.5, MSW: 1, F: 0.5}), "runs closer than their pairs: no run-level offset")
	assert.True(t, math.IsNaN(runLevelSD([]int{3}, ANOVA{F: math.NaN()})))
}
