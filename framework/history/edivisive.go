package history

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// Options tune change-point detection as Apache Otava's analysis options
// do; the zero value means Otava's defaults (see Normalize).
type Options struct {
	// PValue is the largest p-value of Student's t-test at which a split
	// is a change point (Otava's max_pvalue). Default 0.001.
	PValue float64
	// Window is the length of the sliding window the split step runs
	// E-divisive in (Otava's window_len), ≥ 2. Default 50.
	Window int
	// MinMagnitude is the smallest relative change (0.05 is 5 %) a change
	// point must have to survive the merge step; 0 keeps every significant
	// one. Default 0.
	MinMagnitude float64
}

// The defaults, Otava's own.
const (
	DefaultPValue = 0.001
	DefaultWindow = 50
)

// Normalize fills in the defaults for zero fields and checks the rest.
func (o Options) Normalize() (Options, error) {
	if o.PValue == 0 {
		o.PValue = DefaultPValue
	}
	if o.Window == 0 {
		o.Window = DefaultWindow
	}
	switch {
	case !(o.PValue > 0 && o.PValue < 1):
		return o, fmt.Errorf("p-value %v: want a level between 0 and 1, e.g. 0.001", o.PValue)
	case o.Window < 2:
		return o, fmt.Errorf("window %d: want at least 2 runs", o.Window)
	case o.MinMagnitude < 0 || math.IsNaN(o.MinMagnitude):
		return o, fmt.Errorf("minimum magnitude %v: want ≥ 0", o.MinMagnitude)
	}
	return o, nil
}

// Split is one change point of a series: the mean changes between
// xs[previous change point:Index] and xs[Index:next change point].
type Split struct {
	// Index is the first value after the change.
	Index int
	// MeanBefore and MeanAfter are the means of the two segments either
	// side; StdBefore and StdAfter their standard deviations (n
	// denominator, as Otava computes them).
	MeanBefore, MeanAfter float64
	StdBefore, StdAfter   float64
	// PValue is the two-sided Student's t-test's, the segments pooled.
	PValue float64
}

// Ratio is MeanAfter/MeanBefore (0 when MeanBefore is 0).
func (s Split) Ratio() float64 {
	if s.MeanBefore == 0 {
		return 0
	}
	return s.MeanAfter / s.MeanBefore
}

// magnitude is Otava's change_magnitude: the larger of the forward and
// backward relative changes, in absolute value.
func (s Split) magnitude() float64 {
	rel := func(a, b float64) float64 {
		if a == 0 {
			return 0
		}
		return math.Abs(b/a - 1)
	}
	return max(rel(s.MeanBefore, s.MeanAfter), rel(s.MeanAfter, s.MeanBefore))
}

// Detect finds the change points of xs as Apache Otava does (Fleming et
// al., "Hunter: Using Change Point Detection to Hunt for Performance
// Regressions", arXiv 2301.03034, and Otava's analysis.py):
//
//   - split: E-divisive means (Matteson and James, arXiv 1306.4933) runs
//     in windows of o.Window values, half a window apart; in each window
//     it splits at the point that maximises the energy statistic q̂, over
//     and over, as long as a two-sided Student's t-test between the two
//     sides of the new split gives p ≤ the first-pass level (10 × o.PValue
//     below 0.05, 2 × below 0.5). The union of all windows' splits are the
//     weak change points;
//   - merge: each weak change point's t-test is redone between its
//     neighbours on the whole series, and the weakest (the highest p-value
//     above o.PValue, else the smallest magnitude below o.MinMagnitude) is
//     dropped, until none is left to drop.
//
// The result is sorted by Index. xs must hold finite numbers.
func Detect(xs []float64, o Options) ([]Split, error) {
	o, err := o.Normalize()
	if err != nil {
		return nil, err
	}
	for i, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("value %d is %v: want a finite number", i, x)
		}
	}
	first := o.PValue
	switch {
	case first < 0.05:
		first *= 10
	case first < 0.5:
		first *= 2
	}
	weak := split(xs, o.Window, first)
	return merge(weak, xs, o.PValue, o.MinMagnitude), nil
}

// split is Otava's split step: the weak change points of xs, with their
// t-tests redone on the whole series.
func split(xs []float64, window int, pvalue float64) []Split {
	var cps []Split
	step := window / 2
	for start := 0; start < len(xs); {
		end := min(start+window, len(xs))
		found := divide(xs[start:end], pvalue)
		last := 0
		for _, cp := range found {
			cp.Index += start
			last = cp.Index
			if !slices.ContainsFunc(cps, func(c Split) bool { return c.Index == cp.Index }) {
				cps = append(cps, cp)
			}
		}
		start = max(last, start+step)
	}
	slices.SortFunc(cps, func(a, b Split) int { return a.Index - b.Index })
	for i := range cps {
		cps[i] = tested(xs, cps, i)
	}
	return cps
}

// divide is E-divisive on xs (Otava's ChangePointDetector): split at the
// best candidate of any segment while its t-test is significant at pvalue.
func divide(xs []float64, pvalue float64) []Split {
	calc := newCalculator(xs)
	var cps []Split
	for {
		bounds := boundaries(cps, len(xs))
		best, lo, hi, ok := -1, 0, 0, false
		var bestQ float64
		for i := 0; i+1 < len(bounds); i++ {
			if bounds[i+1]-bounds[i] < 2 {
				continue
			}
			idx, q := calc.candidate(bounds[i], bounds[i+1])
			if !ok || q > bestQ {
				best, bestQ, lo, hi, ok = idx, q, bounds[i], bounds[i+1], true
			}
		}
		if !ok {
			return cps
		}
		cp := ttest(xs[lo:best], xs[best:hi])
		cp.Index = best
		if !(cp.PValue <= pvalue) {
			return cps
		}
		cps = append(cps, cp)
		slices.SortFunc(cps, func(a, b Split) int { return a.Index - b.Index })
	}
}

// merge is Otava's merge step: drop the weakest change point (the highest
// p-value if it is not below pvalue, else the smallest magnitude if it is
// not above minMagnitude) and redo the t-tests after it, until no change
// point is weak.
func merge(cps []Split, xs []float64, pvalue, minMagnitude float64) []Split {
	for len(cps) > 0 {
		weakest := 0
		for i, c := range cps {
			if c.PValue > cps[weakest].PValue {
				weakest = i
			}
		}
		if cps[weakest].PValue < pvalue {
			weakest = 0
			for i, c := range cps {
				if c.magnitude() < cps[weakest].magnitude() {
					weakest = i
				}
			}
			if cps[weakest].magnitude() > minMagnitude {
				return cps
			}
		}
		cps = slices.Delete(cps, weakest, weakest+1)
		// Otava redoes the tests of the change point that took the dropped
		// one's place and of the next one (analysis.py, merge); the one
		// before keeps its old test. Done the same way here, so that the
		// same series give the same change points (TestOtavaTigerbeetle
		// fails with the left neighbour redone instead).
		for _, i := range []int{weakest, weakest + 1} {
			if i >= 0 && i < len(cps) {
				cps[i] = tested(xs, cps, i)
			}
		}
	}
	return cps
}

// tested is cps[i] with its t-test redone between its neighbours.
func tested(xs []float64, cps []Split, i int) Split {
	lo, hi := 0, len(xs)
	if i > 0 {
		lo = cps[i-1].Index
	}
	if i+1 < len(cps) {
		hi = cps[i+1].Index
	}
	at := cps[i].Index
	s := ttest(xs[lo:at], xs[at:hi])
	s.Index = at
	return s
}

// boundaries are the segments' bounds between change points: 0, each
// index, n.
func boundaries(cps []Split, n int) []int {
	b := []int{0}
	for _, c := range cps {
		if c.Index != b[len(b)-1] {
			b = append(b, c.Index)
		}
	}
	if b[len(b)-1] != n {
		b = append(b, n)
	}
	return b
}

// errEmpty is a t-test of an empty side: a bug in the caller.
var errEmpty = errors.New("history: t-test of an empty segment")

// ttest is Otava's TTestSignificanceTester.compare: a two-sided Student's
// t-test with pooled variance between left and right, from their means and
// n-denominator standard deviations (as scipy's ttest_ind_from_stats is
// called there). Two values in all have p = 1.
func ttest(left, right []float64) Split {
	if len(left) == 0 || len(right) == 0 {
		panic(errEmpty)
	}
	s := Split{MeanBefore: mean(left), MeanAfter: mean(right), PValue: 1}
	s.StdBefore, s.StdAfter = pstd(left, s.MeanBefore), pstd(right, s.MeanAfter)
	n1, n2 := float64(len(left)), float64(len(right))
	if n1+n2 <= 2 {
		return s
	}
	df := n1 + n2 - 2
	pooled := ((n1-1)*s.StdBefore*s.StdBefore + (n2-1)*s.StdAfter*s.StdAfter) / df
	se := math.Sqrt(pooled * (1/n1 + 1/n2))
	d := s.MeanBefore - s.MeanAfter
	switch {
	case se == 0 && d == 0:
		// No spread and no difference: scipy's t is NaN, which is never
		// significant.
	case se == 0:
		s.PValue = 0
	default:
		t := math.Abs(d / se)
		s.PValue = 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Survival(t)
	}
	return s
}

func mean(xs []float64) float64 {
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// pstd is the standard deviation with an n denominator (numpy's np.std),
// 0 for fewer than two values.
func pstd(xs []float64, m float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	ss := 0.0
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	return math.Sqrt(ss / float64(len(xs)))
}
