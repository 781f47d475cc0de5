package stats

import (
	"fmt"
	"math"
	"math/big"
	"slices"
)

// ConfidenceLevel is the confidence level Summarize aims for: the interval is
// the narrowest pair of order statistics whose coverage of the median is at
// least this. Six repeats are the fewest that reach it.
const ConfidenceLevel = 0.95

// minNForInterval is the smallest N for which order statistics give a
// ConfidenceLevel interval for the median: with N = 5 even the full range
// covers the median with probability 1 - 2/2^5 = 0.9375 only.
const minNForInterval = 6

// Summarize summarises repeated measurements xs of one quantity, in any unit
// (the Summary has the unit of xs). xs is not modified.
//
//   - Median is the middle value, or the mean of the two middle values for an
//     even count.
//   - For N >= 6, [Lo, Hi] is the distribution-free confidence interval for
//     the median from binomial order statistics, as benchstat computes it:
//     Lo = x(k) and Hi = x(N-k+1) of the sorted sample for the largest k whose
//     coverage 1 - 2·P(Binomial(N, ½) <= k-1) is at least ConfidenceLevel.
//     Confidence is that exact coverage rounded to 3 decimals (e.g. 0.969 for
//     N = 6, where the interval is the whole range).
//   - For 1 <= N < 6, [Lo, Hi] is the range of the samples and Confidence is 0:
//     too few samples for any standard level.
//   - For N == 0 it returns the zero Summary.
//
// NaN values are not meaningful; they sort below every number.
func Summarize(xs []float64) Summary {
	n := len(xs)
	if n == 0 {
		return Summary{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	out := Summary{N: n, Lo: s[0], Hi: s[n-1]}
	if n%2 == 1 {
		out.Median = s[n/2]
	} else {
		out.Median = (s[n/2-1] + s[n/2]) / 2
	}
	if n >= minNForInterval {
		k, coverage := medianInterval(n, ConfidenceLevel)
		out.Lo, out.Hi = s[k-1], s[n-k]
		out.Confidence = math.Round(coverage*1000) / 1000
	}
	return out
}

// medianInterval returns the largest k (1-based, k <= (n+1)/2) such that the
// order statistics x(k), x(n-k+1) of n samples cover the median with
// probability at least level, and that probability. It returns k == 0 when
// even k == 1 falls short.
//
// The coverage of [x(k), x(n-k+1)] is P(k <= B <= n-k) = 1 - 2·P(B <= k-1)
// for B ~ Binomial(n, ½), computed exactly with integers: with
// S = Σ_{i<k} C(n, i), coverage = 1 - 2S/2^n.
func medianInterval(n int, level float64) (k int, coverage float64) {
	total := new(big.Int).Lsh(big.NewInt(1), uint(n)) // 2^n
	// coverage >= level  <=>  S <= (1-level)·2^n / 2  <=>  S <= limit, with
	// limit the floor of that exact rational.
	miss := new(big.Rat).Sub(big.NewRat(1, 1), new(big.Rat).SetFloat64(level))
	miss.Mul(miss, new(big.Rat).SetFrac(total, big.NewInt(2)))
	limit := new(big.Int).Quo(miss.Num(), miss.Denom())
	s := new(big.Int)  // Σ_{i<cand} C(n, i)
	c := big.NewInt(1) // C(n, cand-1)
	best := new(big.Int)
	for cand := 1; 2*cand <= n+1; cand++ {
		s.Add(s, c)
		if s.Cmp(limit) > 0 {
			break
		}
		k = cand
		best.Set(s)
		// C(n, cand) = C(n, cand-1) · (n-cand+1) / cand, exactly.
		c.Mul(c, big.NewInt(int64(n-cand+1)))
		c.Quo(c, big.NewInt(int64(cand)))
	}
	if k == 0 {
		return 0, 0
	}
	// coverage = 1 - 2S/2^n
	cov := new(big.Rat).SetFrac(new(big.Int).Sub(total, best.Lsh(best, 1)), total)
	coverage, _ = cov.Float64()
	return k, coverage
}

// String prints s as "3.21 (2.90–3.62, n=3)": the median to about three
// significant digits, and the interval with as many decimals. The zero Summary
// prints as "no data (n=0)".
func (s Summary) String() string {
	if s.N == 0 {
		return "no data (n=0)"
	}
	mag := math.Abs(s.Median)
	if mag == 0 || math.IsNaN(mag) || math.IsInf(mag, 0) {
		mag = math.Max(math.Abs(s.Lo), math.Abs(s.Hi))
	}
	dec := 0
	if mag > 0 && !math.IsInf(mag, 0) && !math.IsNaN(mag) {
		dec = 2 - int(math.Floor(math.Log10(mag)))
		dec = max(0, min(dec, 15))
	}
	return fmt.Sprintf("%.*f (%.*f–%.*f, n=%d)", dec, s.Median, dec, s.Lo, dec, s.Hi, s.N)
}

// Scale returns s with Median, Lo and Hi multiplied by f, for a change of
// unit (e.g. Scale(1e3) for seconds to milliseconds). A negative f swaps Lo
// and Hi so that Lo <= Hi still holds. N and Confidence are kept.
func (s Summary) Scale(f float64) Summary {
	s.Median, s.Lo, s.Hi = s.Median*f, s.Lo*f, s.Hi*f
	if s.Lo > s.Hi {
		s.Lo, s.Hi = s.Hi, s.Lo
	}
	return s
}

// PercentChange maps a ratio summary (see PairedRatio) to a percentage
// change: each of Median, Lo and Hi becomes (r-1)*100, so a meshed/baseline
// latency ratio of 1.30 reads as +30 % overhead. The interval keeps its order.
func (s Summary) PercentChange() Summary {
	if s.N == 0 {
		return s
	}
	f := func(r float64) float64 { return (r - 1) * 100 }
	s.Median, s.Lo, s.Hi = f(s.Median), f(s.Lo), f(s.Hi)
	return s
}

// PercentLoss maps a ratio summary (see PairedRatio) to a percentage loss:
// each value becomes (1-r)*100, so a meshed/baseline throughput ratio of 0.80
// reads as a 20 % throughput loss. Lo and Hi swap so that Lo <= Hi.
func (s Summary) PercentLoss() Summary {
	if s.N == 0 {
		return s
	}
	f := func(r float64) float64 { return (1 - r) * 100 }
	s.Median, s.Lo, s.Hi = f(s.Median), f(s.Hi), f(s.Lo)
	return s
}
