package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"gonum.org/v1/gonum/stat/distuv"
)

// Spending is an alpha-spending function (Lan and DeMets, 1983): of a
// total error alpha, how much may have been spent by information fraction
// t in (0, 1], the share of the largest sample that has been seen. It is
// non-decreasing, and Spending(alpha, 1) == alpha.
type Spending func(alpha, t float64) float64

// PocockSpending is Lan and DeMets' Pocock-type spending function,
// alpha·ln(1 + (e-1)·t): it spends early, so that a clear answer stops a
// sequence soon (Jennison and Turnbull, Group Sequential Methods, 2000,
// §7.2).
func PocockSpending(alpha, t float64) float64 {
	return alpha * math.Log(1+(math.E-1)*min(max(t, 0), 1))
}

// OBrienFlemingSpending is Lan and DeMets' O'Brien-Fleming-type spending
// function for a two-sided error alpha, 2 - 2Φ(z(1-alpha/2)/√t): it spends
// almost nothing early and keeps the last look close to a fixed-sample
// test.
func OBrienFlemingSpending(alpha, t float64) float64 {
	if t <= 0 {
		return 0
	}
	z := distuv.UnitNormal.Quantile(1 - alpha/2)
	return 2 - 2*distuv.UnitNormal.CDF(z/math.Sqrt(min(t, 1)))
}

// Statistic is what a sequential boundary bounds.
type Statistic int

const (
	// StudentT is √n·mean/sd: the variance is estimated from the sample.
	StudentT Statistic = iota
	// KnownVariance is √n·mean with unit variance: the classical z
	// statistic of group-sequential tables.
	KnownVariance
)

// SequentialPlan is a two-sided group-sequential test of a mean, with a
// look after every observation from First to Max, that errs with
// probability at most Alpha over all the looks together: the repeated
// confidence intervals of Jennison and Turnbull (2000, ch. 9), with the
// boundaries of an alpha-spending function.
type SequentialPlan struct {
	First, Max int // first and last sample size looked at; First ≥ 2 for StudentT
	// Alpha is the error probability over all the looks, 0–1 (e.g. 0.05).
	Alpha float64
	// Spend is the alpha-spending function the boundaries follow.
	Spend Spending
	// Statistic is the statistic compared with the boundaries.
	Statistic Statistic
	// Trim, for StudentT, is the fraction γ trimmed from each end of the
	// sample (Yuen's trimmed t: TrimmedMean); 0 is Student's t on the
	// mean. KnownVariance ignores it.
	Trim float64
	// Sims is how many Monte Carlo paths set the boundaries (default
	// 200000); Seed makes them reproducible.
	Sims int
	Seed uint64
}

// SequentialBounds are the critical values of a SequentialPlan: a look at
// sample size n rejects when |statistic| > Crit[n-First].
type SequentialBounds struct {
	// Plan is the plan the bounds are of.
	Plan SequentialPlan
	// Crit are the critical values, one per sample size from Plan.First to
	// Plan.Max.
	Crit []float64
}

// At is the critical value at sample size n; NaN outside [First, Max].
func (b SequentialBounds) At(n int) float64 {
	if n < b.Plan.First || n > b.Plan.Max {
		return math.NaN()
	}
	return b.Crit[n-b.Plan.First]
}

var boundsCache sync.Map // SequentialPlan without Spend, spending name → SequentialBounds

// Bounds computes the plan's critical values by simulation, and caches
// them. The statistic is pivotal under the null (for StudentT: its joint
// law over the looks is that of normal data whatever the mean and
// variance), so the boundaries hold for every normal sample: at each look
// n in turn, c(n) is set so that the share of simulated paths that have
// crossed at some look up to n is Spend(Alpha, n/Max). The paths' noise is
// the standard error of a proportion, √(α/Sims): 0.3 % of α = 0.05 at the
// default Sims.
func (p SequentialPlan) Bounds() (SequentialBounds, error) {
	if err := p.check(); err != nil {
		return SequentialBounds{}, err
	}
	if p.Sims == 0 {
		p.Sims = 200000
	}
	key := fmt.Sprintf("%d/%d/%g/%d/%g/%d/%d/%p", p.First, p.Max, p.Alpha, p.Statistic, p.Trim, p.Sims, p.Seed, p.Spend)
	if b, ok := boundsCache.Load(key); ok {
		return b.(SequentialBounds), nil
	}
	b := SequentialBounds{Plan: p, Crit: p.simulate()}
	boundsCache.Store(key, b)
	return b, nil
}

func (p SequentialPlan) check() error {
	least := 1
	if p.Statistic == StudentT {
		least = MinPairsForInterval
	}
	switch {
	case p.First < least || p.Max < p.First:
		return fmt.Errorf("stats: sequential looks %d to %d: want %d ≤ first ≤ max", p.First, p.Max, least)
	case !(p.Alpha > 0 && p.Alpha < 1):
		return fmt.Errorf("stats: sequential alpha %v: want a level between 0 and 1", p.Alpha)
	case p.Spend == nil:
		return fmt.Errorf("stats: sequential plan without a spending function")
	case p.Sims < 0:
		return fmt.Errorf("stats: sequential plan with %d simulations", p.Sims)
	case !(p.Trim >= 0 && p.Trim < 0.5):
		return fmt.Errorf("stats: sequential trim %v: want a fraction of each end in [0, 0.5)", p.Trim)
	}
	return nil
}

// simulate runs Sims paths of Max standard normal draws, computes each
// path's statistic at every look, then sets each look's critical value
// from the paths that have not crossed yet.
func (p SequentialPlan) simulate() []float64 {
	rng := rand.New(rand.NewPCG(p.Seed, 0x6d657368))
	looks := p.Max - p.First + 1
	stats := make([]float64, p.Sims*looks) // path i, look j at i*looks+j
	x := make([]float64, p.Max)
	for i := range p.Sims {
		for n := range x {
			x[n] = rng.NormFloat64()
		}
		for j := range looks {
			stats[i*looks+j] = p.statistic(x[:p.First+j])
		}
	}
	alive := make([]bool, p.Sims)
	for i := range alive {
		alive[i] = true
	}
	crit := make([]float64, 0, looks)
	crossed := 0
	at := make([]float64, 0, p.Sims)
	for j := range looks {
		at = at[:0]
		for i := range alive {
			if alive[i] {
				at = append(at, stats[i*looks+j])
			}
		}
		target := int(math.Round(p.Spend(p.Alpha, float64(p.First+j)/float64(p.Max)) * float64(p.Sims)))
		c := threshold(at, target-crossed)
		crit = append(crit, c)
		for i := range alive {
			if alive[i] && stats[i*looks+j] > c {
				alive[i] = false
				crossed++
			}
		}
	}
	return crit
}

// statistic is |√n·mean| (KnownVariance) or |mean/se| of a sample about
// a true mean of 0, with the plan's trim.
func (p SequentialPlan) statistic(x []float64) float64 {
	if p.Statistic == KnownVariance {
		var sum float64
		for _, v := range x {
			sum += v
		}
		return math.Abs(sum) / math.Sqrt(float64(len(x)))
	}
	m, se := TrimmedMean(x, p.Trim)
	return math.Abs(m) / se
}

// TrimmedMean returns the γ-trimmed mean of x and its standard error
// (Yuen, Biometrika 61, 1974; Wilcox, Introduction to Robust Estimation
// and Hypothesis Testing, 2012, §4.3): with g = ⌊γ·n⌋ values dropped from
// each end and h = n - 2g kept, the mean of the h middle values, and
// √((n-1)·s_w² / (h·(h-1))) where s_w² is the variance (n-1 denominator)
// of x winsorized at g (the g lowest set to the next value up, the g
// highest to the next value down). γ = 0 gives the mean and s/√n. One
// wild value among five or more moves it little at γ = 0.2, where it
// would widen Student's interval by its whole size. x needs h ≥ 2.
func TrimmedMean(x []float64, gamma float64) (mean, se float64) {
	n := len(x)
	s := slices.Clone(x)
	slices.Sort(s)
	g := int(math.Floor(gamma * float64(n)))
	h := n - 2*g
	for _, v := range s[g : n-g] {
		mean += v
	}
	mean /= float64(h)
	var wm float64
	for i := range s {
		s[i] = s[min(max(i, g), n-g-1)]
		wm += s[i]
	}
	wm /= float64(n)
	var ss float64
	for _, v := range s {
		ss += (v - wm) * (v - wm)
	}
	return mean, math.Sqrt(ss / float64(h*(h-1)))
}

// threshold returns the value that exactly k of stat exceed: the midpoint
// between the k-th and (k+1)-th largest; the largest value when k ≤ 0
// (none exceeds it).
func threshold(stat []float64, k int) float64 {
	slices.Sort(stat)
	n := len(stat)
	switch {
	case n == 0:
		return math.Inf(1)
	case k <= 0:
		return stat[n-1]
	case k >= n:
		return 0
	}
	return (stat[n-k] + stat[n-k-1]) / 2
}

// RepeatedLogRatio is PairedLogRatio with the half-width of a repeated
// confidence interval of the plan b: around the (trimmed, b.Plan.Trim)
// mean m of the log ratios, m ± b.At(n)·se, so that over every look of
// the plan the intervals all cover the true ratio with probability at
// least 1 - Alpha. Its Confidence is that simultaneous level, Sequential
// is set, LogMean is m and LogSD is se·√n (the spread a mean of n would
// have at that standard error). It fails as PairedLogRatio does, and when
// n is outside the plan's looks.
func RepeatedLogRatio(reference, candidate []float64, b SequentialBounds) (RatioInterval, error) {
	n := len(reference)
	c := b.At(n)
	if math.IsNaN(c) {
		return RatioInterval{}, fmt.Errorf("stats: %d pairs: the sequential plan looks at %d to %d", n, b.Plan.First, b.Plan.Max)
	}
	if err := checkLogPairs(reference, candidate); err != nil {
		return RatioInterval{}, err
	}
	d := make([]float64, n)
	for i := range d {
		d[i] = math.Log(candidate[i] / reference[i])
	}
	m, se := TrimmedMean(d, b.Plan.Trim)
	h := c * se
	return RatioInterval{
		Ratio: math.Exp(m), Lo: math.Exp(m - h), Hi: math.Exp(m + h),
		N: n, Confidence: 1 - b.Plan.Alpha,
		LogMean: m, LogSD: se * math.Sqrt(float64(n)), LogHalfWidth: h,
		Sequential: true, Critical: c, Trim: b.Plan.Trim,
	}, nil
}
