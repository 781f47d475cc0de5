package stats

import (
	"errors"
	"fmt"
	"math"
)

// Overhead compares a meshed arm to its baseline over interleaved repeats
// (A B, B A, …): baseline[i] and meshed[i] were measured back to back, so drift
// in the machine cancels out within each pair.
//
// Baseline and Meshed are in the unit of the inputs (e.g. seconds of p99
// latency, or req/s). Delta is meshed - baseline, in the same unit. Ratio is
// meshed / baseline, unitless. Report both: 0.16 ms sounds like noise, 30 % of
// a 0.537 ms p50 does not.
//
// Percentage overhead (for latencies and CPU) is (Ratio-1)*100, see
// Summary.PercentChange; throughput loss in percent is (1-Ratio)*100, see
// Summary.PercentLoss. Both carry the interval of Ratio: quote "70–90 %",
// never a bare "86 %".
type Overhead struct {
	// Baseline summarises the baseline arm's repeats, in the inputs' unit.
	Baseline Summary `json:"baseline"`
	// Meshed summarises the meshed arm's repeats, in the inputs' unit.
	Meshed Summary `json:"meshed"`
	// Delta is meshed minus baseline per pair, in the inputs' unit.
	Delta Summary `json:"delta"`
	// Ratio is meshed over baseline per pair, unitless.
	Ratio Summary `json:"ratio"`
}

// NewOverhead summarises interleaved repeat pairs: Baseline and Meshed each
// with Summarize, Delta with PairedDelta and Ratio with PairedRatio. It fails
// as those do.
func NewOverhead(baseline, meshed []float64) (Overhead, error) {
	d, err := PairedDelta(baseline, meshed)
	if err != nil {
		return Overhead{}, err
	}
	r, err := PairedRatio(baseline, meshed)
	if err != nil {
		return Overhead{}, err
	}
	return Overhead{
		Baseline: Summarize(baseline),
		Meshed:   Summarize(meshed),
		Delta:    d,
		Ratio:    r,
	}, nil
}

// PairedDelta summarises meshed[i] - baseline[i] over the repeat pairs (see
// Overhead), in the unit of the inputs. It fails when the slices differ in
// length, are empty, or hold a NaN or infinite value.
func PairedDelta(baseline, meshed []float64) (Summary, error) {
	if err := checkPairs(baseline, meshed); err != nil {
		return Summary{}, err
	}
	d := make([]float64, len(baseline))
	for i := range baseline {
		d[i] = meshed[i] - baseline[i]
	}
	return Summarize(d), nil
}

// PairedRatio summarises meshed[i] / baseline[i] over the repeat pairs (see
// Overhead); the result is unitless. It fails when the slices differ in
// length, are empty, hold a NaN or infinite value, or a baseline is zero.
func PairedRatio(baseline, meshed []float64) (Summary, error) {
	if err := checkPairs(baseline, meshed); err != nil {
		return Summary{}, err
	}
	r := make([]float64, len(baseline))
	for i := range baseline {
		if baseline[i] == 0 {
			return Summary{}, fmt.Errorf("stats: ratio of pair %d: baseline is 0", i)
		}
		r[i] = meshed[i] / baseline[i]
	}
	return Summarize(r), nil
}

// checkPairs validates the inputs of PairedDelta and PairedRatio.
func checkPairs(baseline, meshed []float64) error {
	if len(baseline) != len(meshed) {
		return fmt.Errorf("stats: %d baseline repeats but %d meshed: repeats must come in pairs", len(baseline), len(meshed))
	}
	if len(baseline) == 0 {
		return errors.New("stats: no repeat pairs")
	}
	for i := range baseline {
		for _, v := range []struct {
			arm string
			x   float64
		}{{"baseline", baseline[i]}, {"meshed", meshed[i]}} {
			if math.IsNaN(v.x) || math.IsInf(v.x, 0) {
				return fmt.Errorf("stats: pair %d: %s is %g", i, v.arm, v.x)
			}
		}
	}
	return nil
}
