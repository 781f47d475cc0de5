package gate

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/meshbench/meshbench/framework/stats"
)

// FutilityMinPairs is the fewest pairs an inconclusive decision's outlook
// may call it undecidable on: the spread of fewer pairs is too rough to
// judge a budget by (at 6 pairs it rests on 5 degrees of freedom).
const FutilityMinPairs = 6

// FutilityChance is the predicted chance of a decision at the budget's
// last look below which a sequential gate stops adding rounds and says
// the budget cannot decide (Outlook.Futile). Stopping early only ever
// turns a possible pass or fail into an inconclusive one: it cannot make
// a verdict wrong, only less often decided (TestOutlookPredictsTheOutcome
// measures how much less).
const FutilityChance = 0.05

// Outlook is what an inconclusive paired sequential decision can still
// become within its plan's budget (Sequential.Max pairs), predicted from
// its pairs so far as if their mean and spread held. It is what the gate
// says early about what this machine cannot decide.
type Outlook struct {
	// Resolvable is the smallest change the budget can resolve at the
	// spread so far, as a fraction (0.081 for 8.1 %): a decision at the
	// last look needs the ratio at least this far beyond or within its
	// limit (exp(c(Max)·sd/√Max) - 1, the last look's half-width).
	Resolvable float64 `json:"resolvable"`
	// Distance is how far the ratio so far is from the limit, as a
	// fraction of the limit (|ratio/limit - 1|).
	Distance float64 `json:"distance"`
	// Chance is the predicted probability that the last look decides:
	// the mean of all Max pairs, given the pairs so far and the spread
	// they show (normal, with the variance of the pairs still to come
	// and of the mean so far), outside the last look's half-width from
	// the limit. It counts the last look only, so it underestimates a
	// little the chance of deciding at some look.
	Chance float64 `json:"chance"`
	// Futile is set when Chance is under FutilityChance with at least
	// FutilityMinPairs pairs: the gate stops adding rounds there.
	Futile bool `json:"futile,omitempty"`
	// Pairs and Max are the pairs the outlook rests on and the budget.
	Pairs int `json:"pairs"`
	Max   int `json:"max"`
}

// outlook is the Outlook of a straddling repeated interval iv against
// limit under the plan b; nil when the budget is spent or the pairs do
// not vary (zero spread: see SignTestPairs).
func outlook(iv stats.RatioInterval, limit float64, b stats.SequentialBounds) *Outlook {
	n, max := iv.N, b.Plan.Max
	if n >= max || iv.LogSD <= 0 || iv.Unpaired {
		return nil
	}
	h := stats.HalfWidth(b.At(max), iv.LogSD, max, iv.RunSD)
	dist := iv.LogMean - math.Log(limit)
	spread := iv.LogSD * math.Sqrt(float64(max-n)/float64(max*n))
	chance := distuv.UnitNormal.CDF((dist-h)/spread) + distuv.UnitNormal.CDF((-dist-h)/spread)
	return &Outlook{
		Resolvable: math.Expm1(h), Distance: math.Expm1(math.Abs(dist)),
		Chance: chance, Futile: n >= FutilityMinPairs && chance < FutilityChance,
		Pairs: n, Max: max,
	}
}

// sentence says, in an inconclusive decision's reason, that the budget
// cannot decide it and what would.
func (o *Outlook) sentence(pairsNeeded int) string {
	more := fmt.Sprintf("about %d pairs in all would", o.Pairs+pairsNeeded)
	if pairsNeeded < 0 {
		more = fmt.Sprintf("not even %d pairs would", MaxPairsEstimate)
	}
	return fmt.Sprintf("this machine cannot decide it within %d pairs: at the spread of the first %d, the last look resolves changes of %s or more from the limit, "+
		"and the ratio is %s from it (a %.0f %% chance to decide); %s, or a quieter machine, or both arms at once (the duet mode)",
		o.Max, o.Pairs, pct(o.Resolvable), pct(o.Distance), 100*o.Chance, more)
}

// String is the outlook in brief, as a gate's progress line shows it.
func (o *Outlook) String() string {
	return fmt.Sprintf("[%.0f %% chance to decide by %d; resolves %.1f %% from the limit, is %.1f %% from it]",
		100*o.Chance, o.Max, 100*o.Resolvable, 100*o.Distance)
}

// Futile reports whether the verdict is inconclusive and each of its
// inconclusive decisions is one the budget cannot decide (Outlook.Futile):
// a gate then stops adding rounds.
func (v Verdict) Futile() bool {
	if v.Outcome != Inconclusive {
		return false
	}
	for _, d := range v.Decisions {
		if d.Outcome == Inconclusive && (d.Outlook == nil || !d.Outlook.Futile) {
			return false
		}
	}
	return true
}
