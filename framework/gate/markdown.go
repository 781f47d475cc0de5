package gate

import (
	"fmt"
	"io"
	"strings"

	"github.com/meshbench/meshbench/framework/stats"
)

// Markdown writes v for a CI job summary or a pull-request comment: the
// outcome in words, then one row per decision (the scenario, the metric,
// the reference's and the candidate's medians, the candidate/reference
// ratio with its interval, the limit, the pairs it was decided on and
// measured, and the outcome), then every decision's sentence, and how the
// intervals were computed. title names what was gated, e.g. "caddy+access-log
// against caddy".
func (v Verdict) Markdown(w io.Writer, title string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## meshbench upgrade gate: %s\n\n", title)
	fmt.Fprintf(&b, "**%s** (exit code %d): %s\n\n", strings.ToUpper(v.Outcome.String()), v.ExitCode(), outcomeWords(v.Outcome))
	b.WriteString("| scenario | metric | reference | candidate | candidate/reference | limit | pairs | outcome |\n")
	b.WriteString("| --- | --- | ---: | ---: | --- | --- | --- | --- |\n")
	for _, d := range v.Decisions {
		iv := d.Interval
		op := "≤"
		if d.Rule.Worse == LowerIsWorse {
			op = "≥"
		}
		ratio := "–"
		switch dec := decimals(iv.Lo, iv.Hi, d.Limit); {
		case d.TooWide():
			ratio = fmt.Sprintf("%.*f, %s", dec, iv.Ratio, d.tooFewWords())
		case iv.N > 0:
			ratio = fmt.Sprintf("%.*f (%.*f–%.*f)", dec, iv.Ratio, dec, iv.Lo, dec, iv.Hi)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s %.2f | %s | %s |\n", d.Scenario, d.Metric.Label(),
			median(d.Reference), median(d.Candidate), ratio, op, d.Limit, pairsCell(d), outcomeCell(d.Outcome))
	}
	b.WriteString("\n")
	for _, d := range v.Decisions {
		fmt.Fprintf(&b, "- %s: %s\n", d.Outcome, d.Reason)
	}
	fmt.Fprintf(&b, "\n%s\n", levelWords(v))
	_, err := io.WriteString(w, b.String())
	return err
}

// outcomeWords says what an outcome means for the change gated.
func outcomeWords(o Outcome) string {
	switch o {
	case Pass:
		return "every gated metric of the candidate is within its limit of the reference."
	case Fail:
		return "the candidate is worse than the reference by more than a limit."
	}
	return "the gate could not tell within its budget whether the candidate is within its limits: not a pass, not a fail. Rerun with a larger -max-count, on a quieter machine, or look at the pairs each decision still needs."
}

func outcomeCell(o Outcome) string {
	switch o {
	case Pass:
		return "pass"
	case Fail:
		return "**FAIL**"
	}
	return "*inconclusive*"
}

// pairsCell is "decided at n of m" when a sequential decision stopped
// before its last pair, else the pairs.
func pairsCell(d Decision) string {
	n, all := d.Interval.N, len(d.Reference)
	switch {
	case d.Interval.Unpaired:
		return fmt.Sprintf("%d stored, %d this run", d.Interval.NReference, d.Interval.NCandidate)
	case n > 0 && n < all:
		return fmt.Sprintf("%d (decided) of %d", n, all)
	}
	return fmt.Sprint(all)
}

func median(xs []float64) string {
	if len(xs) == 0 {
		return "–"
	}
	return fmt.Sprintf("%.4g", stats.Summarize(xs).Median)
}

// levelWords says how the intervals were computed.
func levelWords(v Verdict) string {
	if q := v.Sequential; q != nil {
		return fmt.Sprintf("Looked at after every round from %d to at most %d pairs a point; a decision stands at its first conclusive look. "+
			"Its repeated intervals (group-sequential, Pocock-type alpha spending, on the log ratios' mean trimmed by %.0f %% at each end) cover the ratio at every look at once at %.2f %%, "+
			"so the verdict, of at most %d decisions, is wrong at most %.0f %% of the time.", MinPairsToDecide, q.Max, Trim*100, v.Confidence*100, q.Decisions, VerdictAlpha*100)
	}
	return fmt.Sprintf("Every interval at %.1f %%.", v.Confidence*100)
}
