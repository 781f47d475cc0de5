package stats

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// RatioInterval is the ratio of a candidate to a reference over paired
// repeats, with a Student-t confidence interval computed on the log scale
// (see PairedLogRatio). Ratio, Lo and Hi are unitless: 1.10 is 10 % more.
type RatioInterval struct {
	// Ratio is the geometric mean of candidate[i]/reference[i]:
	// exp(LogMean).
	Ratio float64 `json:"ratio"`
	// Lo and Hi bound the interval: exp(LogMean ∓ LogHalfWidth).
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
	// N is the number of pairs; Confidence the two-sided level, e.g. 0.95.
	N          int     `json:"n"`
	Confidence float64 `json:"confidence"`
	// LogMean and LogSD are the mean and the sample standard deviation
	// (n-1 denominator) of ln(candidate[i]/reference[i]); LogHalfWidth is
	// t(1-(1-Confidence)/2, N-1)·LogSD/√N.
	LogMean      float64 `json:"logMean"`
	LogSD        float64 `json:"logSD"`
	LogHalfWidth float64 `json:"logHalfWidth"`
	// Unpaired is set by UnpairedLogRatio: the two samples were not
	// measured back to back, and DF is Welch's degrees of freedom.
	Unpaired bool    `json:"unpaired,omitempty"`
	DF       float64 `json:"df,omitempty"`
	// NReference and NCandidate are the sizes of the two samples of an
	// unpaired interval, which may differ (N is the smaller).
	NReference int `json:"nReference,omitempty"`
	NCandidate int `json:"nCandidate,omitempty"`
	// Sequential is set by RepeatedLogRatio: the interval is one of a
	// sequence looked at after every pair, and Confidence is the level at
	// which every interval of the sequence covers the ratio at once;
	// Critical is the boundary it used in place of Student's t quantile
	// (LogHalfWidth = Critical·LogSD/√N).
	Sequential bool    `json:"sequential,omitempty"`
	Critical   float64 `json:"critical,omitempty"`
	// Trim is the fraction trimmed from each end of the log ratios before
	// their mean (TrimmedMean); 0 for the plain mean.
	Trim float64 `json:"trim,omitempty"`
	// RunSD is the standard deviation, on the log scale, of an offset
	// between the arms that holds for a whole run (WithRunSD): pairs
	// cannot average it away, so the half-width is the critical value
	// times √(LogSD²/N + RunSD²). 0: none.
	RunSD float64 `json:"runSD,omitempty"`
}

// HalfWidth is the log-scale half-width of an interval with critical
// value crit over n pairs whose log ratios spread sd, with a run-level
// offset of SD runSD: crit·√(sd²/n + runSD²), which is crit·sd/√n
// without one.
func HalfWidth(crit, sd float64, n int, runSD float64) float64 {
	if runSD == 0 {
		return crit * sd / math.Sqrt(float64(n))
	}
	return crit * math.Sqrt(sd*sd/float64(n)+runSD*runSD)
}

// critical is the value the half-width is a multiple of the standard
// error by: the plan's boundary, Welch's or Student's t quantile.
func (r RatioInterval) critical() float64 {
	switch {
	case r.Sequential:
		return r.Critical
	case r.Unpaired:
		return tQuantile(r.Confidence, r.DF)
	}
	return TQuantile(r.Confidence, r.N-1)
}

// WithRunSD widens r for a run-level offset of SD runSD (on the log
// scale) between the arms: a placement, memory layout or connection state
// that one arm's processes got at start and kept for the whole run, which
// pairing cannot cancel and more pairs cannot shrink. The ratio stays;
// the half-width becomes HalfWidth(critical, LogSD, N, runSD). runSD ≤ 0
// returns r unchanged.
func (r RatioInterval) WithRunSD(runSD float64) RatioInterval {
	if !(runSD > 0) || r.N == 0 {
		return r
	}
	h := HalfWidth(r.critical(), r.LogSD, r.N, runSD)
	r.RunSD, r.LogHalfWidth = runSD, h
	r.Lo, r.Hi = math.Exp(r.LogMean-h), math.Exp(r.LogMean+h)
	return r
}

// MinPairsForInterval is the fewest pairs PairedLogRatio accepts: one pair
// has no spread to estimate.
const MinPairsForInterval = 2

// PairedLogRatio summarises paired repeats (reference[i] and candidate[i]
// measured back to back) as the geometric-mean ratio candidate/reference
// with a two-sided Student-t confidence interval at level confidence
// (0 < confidence < 1):
//
//	d[i] = ln(candidate[i] / reference[i])
//	m = mean(d), s = sd(d) with n-1, h = t(1-(1-confidence)/2, n-1) · s / √n
//	Ratio = e^m, Lo = e^(m-h), Hi = e^(m+h)
//
// Pairing cancels the drift of the machine that hits both arms of a pair;
// the log makes a ratio and its inverse symmetric (1.25 and 0.8 are equally
// far from 1) and keeps the interval positive. The t interval assumes the
// d[i] are roughly normal; it is exact for log-normal noise and robust to
// moderate departures, and an outlier widens it on both sides rather than
// moving it, so it errs towards "inconclusive".
//
// It fails when the slices differ in length, hold fewer than
// MinPairsForInterval pairs, hold a value that is not a finite number > 0,
// or confidence is not in (0, 1).
func PairedLogRatio(reference, candidate []float64, confidence float64) (RatioInterval, error) {
	if err := checkLogPairs(reference, candidate); err != nil {
		return RatioInterval{}, err
	}
	if !(confidence > 0 && confidence < 1) {
		return RatioInterval{}, fmt.Errorf("stats: confidence %v: want a level between 0 and 1, e.g. 0.95", confidence)
	}
	n := len(reference)
	d := make([]float64, n)
	var mean float64
	for i := range d {
		d[i] = math.Log(candidate[i] / reference[i])
		mean += d[i]
	}
	mean /= float64(n)
	var ss float64
	for _, x := range d {
		ss += (x - mean) * (x - mean)
	}
	sd := math.Sqrt(ss / float64(n-1))
	h := TQuantile(confidence, n-1) * sd / math.Sqrt(float64(n))
	return RatioInterval{
		Ratio: math.Exp(mean), Lo: math.Exp(mean - h), Hi: math.Exp(mean + h),
		N: n, Confidence: confidence,
		LogMean: mean, LogSD: sd, LogHalfWidth: h,
	}, nil
}

// TQuantile returns the two-sided critical value of Student's t with df
// degrees of freedom at level confidence: the (1+confidence)/2 quantile,
// e.g. 2.5706 for confidence 0.95 and df 5. It returns NaN for df < 1.
func TQuantile(confidence float64, df int) float64 {
	return tQuantile(confidence, float64(df))
}

// PairsToResolve returns the smallest number of pairs N ≥ MinPairsForInterval
// at which a t interval at level confidence with log-scale spread sd has a
// half-width below distance: t(1-(1-confidence)/2, N-1)·sd/√N < distance. It
// is how many pairs in all an estimate distance away (on the log scale)
// from a limit needs for its interval to clear the limit, if the spread
// stays as observed. It returns MinPairsForInterval for sd == 0, and -1
// when distance ≤ 0 or more than maxPairs pairs would be needed.
func PairsToResolve(sd, distance, confidence float64, maxPairs int) int {
	return PairsToResolveRun(sd, 0, distance, confidence, maxPairs)
}

// PairsToResolveRun is PairsToResolve for an interval widened by a
// run-level offset of SD runSD (RatioInterval.WithRunSD): the half-width
// t·√(sd²/N + runSD²) never falls below z·runSD, so a distance within that
// is never resolved (-1).
func PairsToResolveRun(sd, runSD, distance, confidence float64, maxPairs int) int {
	if sd == 0 && runSD == 0 {
		return MinPairsForInterval
	}
	if !(distance > 0) || math.IsNaN(sd) {
		return -1
	}
	ok := func(n int) bool { return HalfWidth(TQuantile(confidence, n-1), sd, n, runSD) < distance }
	if !ok(maxPairs) {
		return -1
	}
	// t(n-1) > z for every n, so no n with z·√(sd²/n + runSD²) ≥ distance
	// will do; walk up from there (the half-width falls as n grows, and
	// the answer is near).
	z := distuv.UnitNormal.Quantile((1 + confidence) / 2)
	n := max(MinPairsForInterval, int(math.Ceil(z*z*sd*sd/(distance*distance-z*z*runSD*runSD))))
	for !ok(n) {
		n++
	}
	return n
}

// Summary returns the interval as a Summary (Median holds the geometric-mean
// ratio), for the tables and messages that print summaries.
func (r RatioInterval) Summary() Summary {
	return Summary{Median: r.Ratio, Lo: r.Lo, Hi: r.Hi, N: r.N, Confidence: r.Confidence}
}

// checkLogPairs validates the inputs of PairedLogRatio.
func checkLogPairs(reference, candidate []float64) error {
	if len(reference) != len(candidate) {
		return fmt.Errorf("stats: %d reference repeats but %d candidate: repeats must come in pairs", len(reference), len(candidate))
	}
	if len(reference) < MinPairsForInterval {
		return errors.New("stats: an interval needs at least 2 pairs")
	}
	for i := range reference {
		for _, v := range []struct {
			arm string
			x   float64
		}{{"reference", reference[i]}, {"candidate", candidate[i]}} {
			if !(v.x > 0) || math.IsInf(v.x, 0) {
				return fmt.Errorf("stats: pair %d: %s is %g; a ratio on the log scale needs finite values > 0", i, v.arm, v.x)
			}
		}
	}
	return nil
}
