package stats

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// UnpairedLogRatio summarises two independent samples, reference and
// candidate, as the ratio of their geometric means with a two-sided Welch
// t interval at level confidence, computed on the log scale:
//
//	a[i] = ln reference[i], b[j] = ln candidate[j]
//	m = mean(b) - mean(a), se = √(var(a)/n_a + var(b)/n_b)
//	ν = se⁴ / ((var(a)/n_a)²/(n_a-1) + (var(b)/n_b)²/(n_b-1))  (Welch–Satterthwaite)
//	h = t(1-(1-confidence)/2, ν) · se
//	Ratio = e^m, Lo = e^(m-h), Hi = e^(m+h)
//
// Use it when the repeats were not measured back to back, such as a
// stored run against this one: nothing cancels the drift between them, so
// the spread of both samples counts, and the interval is wider than
// PairedLogRatio's on the same numbers. Welch does not assume the two
// spreads are equal (a stored run may have been quieter).
//
// The result has Unpaired set, DF = ν, N = min(n_a, n_b), NReference = n_a,
// NCandidate = n_b, and LogSD the per-repeat spread that gives se at N
// repeats (se·√N; √(var(a)+var(b)) when n_a = n_b), so that
// PairsToResolve(LogSD, …) estimates the repeats each run would need;
// CandidateRepeatsToResolve is the estimate when the reference is fixed.
// It fails when a sample has fewer than
// MinPairsForInterval values, holds a value that is not a finite number > 0,
// or confidence is not in (0, 1).
func UnpairedLogRatio(reference, candidate []float64, confidence float64) (RatioInterval, error) {
	if err := checkSample("reference", reference); err != nil {
		return RatioInterval{}, err
	}
	if err := checkSample("candidate", candidate); err != nil {
		return RatioInterval{}, err
	}
	if !(confidence > 0 && confidence < 1) {
		return RatioInterval{}, fmt.Errorf("stats: confidence %v: want a level between 0 and 1, e.g. 0.95", confidence)
	}
	ma, va := logMeanVar(reference)
	mb, vb := logMeanVar(candidate)
	na, nb := float64(len(reference)), float64(len(candidate))
	wa, wb := va/na, vb/nb
	se := math.Sqrt(wa + wb)
	df := na + nb - 2 // no spread on either side: the interval is a point
	if se > 0 {
		df = (wa + wb) * (wa + wb) / (wa*wa/(na-1) + wb*wb/(nb-1))
	}
	h := tQuantile(confidence, df) * se
	n := min(len(reference), len(candidate))
	m := mb - ma
	return RatioInterval{
		Ratio: math.Exp(m), Lo: math.Exp(m - h), Hi: math.Exp(m + h),
		N: n, Confidence: confidence,
		LogMean: m, LogSD: se * math.Sqrt(float64(n)), LogHalfWidth: h,
		Unpaired: true, DF: df, NReference: len(reference), NCandidate: len(candidate),
	}, nil
}

// CandidateRepeatsToResolve is PairsToResolve for UnpairedLogRatio when the
// reference sample is fixed (a stored run) and only the candidate grows: the
// smallest number of candidate repeats N ≥ MinPairsForInterval at which
// Welch's half-width at level confidence falls below distance, holding both
// samples' log variances as observed:
//
//	w_a = var(a)/n_a, w_b = var(b)/N
//	t(1-(1-confidence)/2, ν(N)) · √(w_a + w_b) < distance
//
// with ν(N) Welch–Satterthwaite's (see UnpairedLogRatio). As N grows the
// half-width tends to ReferenceHalfWidth, the reference's own: a distance
// at or below it may never be cleared by candidate repeats alone. It
// returns -1 when distance ≤ 0, when either sample has fewer than
// MinPairsForInterval values (no spread to hold), or when no N up to
// maxRepeats will do.
//
// t(ν) > z for every ν, so no N with z²·(w_a + var(b)/N) ≥ distance² will
// do; the walk starts above that bound. ν(N) is not monotone in N, so
// every N from there is tried in turn.
func CandidateRepeatsToResolve(reference, candidate []float64, distance, confidence float64, maxRepeats int) int {
	if len(reference) < MinPairsForInterval || len(candidate) < MinPairsForInterval || !(distance > 0) {
		return -1
	}
	_, va := logMeanVar(reference)
	_, vb := logMeanVar(candidate)
	na := float64(len(reference))
	wa := va / na
	z := distuv.UnitNormal.Quantile((1 + confidence) / 2)
	room := distance*distance/(z*z) - wa // what w_b must stay below
	if !(room > 0) || vb/room >= float64(maxRepeats) {
		return -1
	}
	n := max(MinPairsForInterval, int(math.Floor(vb/room))+1)
	for ; n <= maxRepeats; n++ {
		wb := vb / float64(n)
		se := math.Sqrt(wa + wb)
		if se == 0 {
			return n
		}
		df := (wa + wb) * (wa + wb) / (wa*wa/(na-1) + wb*wb/float64(n-1))
		if tQuantile(confidence, df)*se < distance {
			return n
		}
	}
	return -1
}

// ReferenceHalfWidth is what Welch's half-width on the log scale tends to
// as candidate repeats are added against a fixed reference sample:
// t(1-(1-confidence)/2, n_a-1)·√(var(a)/n_a), the reference's own
// interval. A distance from the limit at or below it is the reference's
// to settle: rerun it with more repeats. It is +Inf for fewer than
// MinPairsForInterval reference values.
func ReferenceHalfWidth(reference []float64, confidence float64) float64 {
	if len(reference) < MinPairsForInterval {
		return math.Inf(1)
	}
	_, va := logMeanVar(reference)
	n := len(reference)
	return TQuantile(confidence, n-1) * math.Sqrt(va/float64(n))
}

// logMeanVar returns the mean and the sample variance (n-1) of ln xs.
func logMeanVar(xs []float64) (mean, variance float64) {
	for _, x := range xs {
		mean += math.Log(x)
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		d := math.Log(x) - mean
		variance += d * d
	}
	return mean, variance / float64(len(xs)-1)
}

// tQuantile is TQuantile for a real number of degrees of freedom
// (Welch's); NaN unless df > 0.
func tQuantile(confidence, df float64) float64 {
	if !(df > 0) {
		return math.NaN()
	}
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile((1 + confidence) / 2)
}

// checkSample validates one sample of UnpairedLogRatio.
func checkSample(arm string, xs []float64) error {
	if len(xs) < MinPairsForInterval {
		return errors.New("stats: an unpaired interval needs at least 2 " + arm + " repeats")
	}
	for i, x := range xs {
		if !(x > 0) || math.IsInf(x, 0) {
			return fmt.Errorf("stats: %s repeat %d is %g; a ratio on the log scale needs finite values > 0", arm, i, x)
		}
	}
	return nil
}
