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
	Alpha      float64
	Spend      Spending
	Statistic  Statistic
	// Sims is how many Monte Carlo paths set the boundaries (default
	// 200000); Seed makes them reproducible.
	Sims int
	Seed uint64
}

// SequentialBounds are the critical values of a SequentialPlan: a look at
// sample size n rejects when |statistic| > Crit[n-First].
type SequentialBounds struct {
	Plan SequentialPlan
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
	key := fmt.Sprintf("%d/%d/%g/%d/%d/%d/%p", p.First, p.Max, p.Alpha, p.Statistic, p.Sims, p.Seed, p.Spend)
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
	}
	return nil
}

// simulate runs Sims paths of Max standard normal draws and sets each
// look's critical value from the paths that have not crossed yet.
func (p SequentialPlan) simulate() []float64 {
	rng := rand.New(rand.NewPCG(p.Seed, 0x6d657368))
	sum := make([]float64, p.Sims)
	sumsq := make([]float64, p.Sims)
	alive := make([]bool, p.Sims)
	for i := range alive {
		alive[i] = true
	}
	crit := make([]float64, 0, p.Max-p.First+1)
	crossed := 0
	stat := make([]float64, 0, p.Sims)
	for n := 1; n <= p.Max; n++ {
		for i := range sum {
			x := rng.NormFloat64()
			sum[i] += x
			sumsq[i] += x * x
		}
		if n < p.First {
			continue
		}
		stat = stat[:0]
		for i := range sum {
			if alive[i] {
				stat = append(stat, p.statistic(sum[i], sumsq[i], n))
			}
		}
		target := int(math.Round(p.Spend(p.Alpha, float64(n)/float64(p.Max)) * float64(p.Sims)))
		c := threshold(stat, target-crossed)
		crit = append(crit, c)
		for i := range sum {
			if alive[i] && p.statistic(sum[i], sumsq[i], n) > c {
				alive[i] = false
				crossed++
			}
		}
	}
	return crit
}

// statistic is |√n·mean| or |√n·mean/sd| of a path after n draws.
func (p SequentialPlan) statistic(sum, sumsq float64, n int) float64 {
	mean := sum / float64(n)
	z := math.Abs(mean) * math.Sqrt(float64(n))
	if p.Statistic == KnownVariance {
		return z
	}
	v := (sumsq - float64(n)*mean*mean) / float64(n-1)
	return z / math.Sqrt(max(v, 0))
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
// confidence interval: b.At(n)·sd/√n, so that over every look of the plan
// the intervals all cover the true ratio with probability at least
// 1 - Alpha. Its Confidence is that simultaneous level, and Sequential is
// set. It fails as PairedLogRatio does, and when n is outside the plan's
// looks.
func RepeatedLogRatio(reference, candidate []float64, b SequentialBounds) (RatioInterval, error) {
	n := len(reference)
	c := b.At(n)
	if math.IsNaN(c) {
		return RatioInterval{}, fmt.Errorf("stats: %d pairs: the sequential plan looks at %d to %d", n, b.Plan.First, b.Plan.Max)
	}
	iv, err := PairedLogRatio(reference, candidate, 0.95)
	if err != nil {
		return RatioInterval{}, err
	}
	h := c * iv.LogSD / math.Sqrt(float64(n))
	iv.LogHalfWidth, iv.Lo, iv.Hi = h, math.Exp(iv.LogMean-h), math.Exp(iv.LogMean+h)
	iv.Confidence, iv.Sequential, iv.Critical = 1-b.Plan.Alpha, true, c
	return iv, nil
}
