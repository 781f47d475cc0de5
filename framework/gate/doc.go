// Package gate decides whether a candidate (a new mesh or sidecar version,
// or another configuration) is worse than its reference by more than a
// limit. It answers pass, fail or inconclusive, from paired repeats of both
// measured back to back in the same run.
//
// # Fixtures
//
// Limits are relative, candidate against reference, and live in a YAML
// fixture per target under fixtures/gates/:
//
//	target: local                     # refused on any other target (Gate.CheckTarget)
//	rules:
//	  - metric: sidecarCPUPer1kReq    # see Metrics
//	    match: {}                     # every scenario
//	    maxIncreasePct: 10            # candidate/reference ≤ 1.10
//	  - metric: p99
//	    match: {loop: open, c: "8"}   # label → value or glob ("*", "[1-9]*")
//	    maxIncreasePct: 15
//	  - metric: throughput
//	    match: {loop: closed}
//	    maxDecreasePct: 5             # candidate/reference ≥ 0.95
//
// A rule limits an increase (maxIncreasePct) for a metric that is worse
// when higher (CPU, latency, memory) and a decrease (maxDecreasePct) for
// one that is worse when lower (throughput); the other key is refused. Per
// metric, the first rule in file order whose match selects a scenario
// applies. [Parse] decodes strictly and fails with a [*verdict.FixtureError]
// naming the file, the line and the field, as the threshold fixtures do;
// [Gate.Check] then checks the rules against the run's scenarios before
// anything is measured (a misspelt label, a rule that gates nothing, a
// rule hidden by those above it).
//
// # Method
//
// For each gated metric of each scenario, with n pairs (reference[i],
// candidate[i]) measured back to back, the decision rests on the ratio
// candidate/reference: d[i] = ln(candidate[i]/reference[i]), and the 95 %
// Student-t interval exp(mean(d) ∓ t(0.975, n-1)·sd(d)/√n) around the
// geometric-mean ratio (stats.PairedLogRatio).
//
//   - Fail: the whole interval is beyond the limit.
//   - Pass: the whole interval is inside it (the limit itself is inside).
//   - Inconclusive: it straddles the limit. PairsNeeded estimates the more
//     pairs that would settle it, holding the observed mean m and spread s:
//     the smallest N with t(0.975, N-1)·s/√N < |m - ln limit|, minus n.
//
// Why this interval for n around 6. Pairing cancels the drift that hits
// both arms of a pair. The log makes ratios additive and symmetric (1.25
// and 0.8 are equally far from 1), so the interval is the same whichever
// arm is on top and never goes below 0. The t interval uses every pair,
// narrows as 1/√n, and so gives the pairs-needed formula above. The
// distribution-free interval for the median that benchstat prints
// (stats.Summarize) is at n=6 the whole range of the six ratios, at 96.9 %,
// and cannot narrow until n=9; its width cannot be extrapolated to a number
// of pairs. The t interval assumes roughly normal log ratios, which CPU per
// request and percentiles of a steady window are; one outlier widens it on
// both sides more than it moves it, so noise errs towards inconclusive,
// not towards a wrong pass or fail. At the 95 % level a candidate exactly
// at its limit is failed wrongly, or passed wrongly, at most 2.5 % of the
// time each; an unchanged candidate, far inside the limit, far less.
//
// # Sequential decisions
//
// A gate with the candidate in the run keeps measuring while it is
// undecided ([Gate.DecideSequential], [Sequential]): after
// [MinPairsToDecide] pairs, and again after every pair up to a budget
// (the run's MaxCount, [DefaultLocalMaxPairs] or [DefaultMaxPairs]), the way Chromium's Pinpoint adds
// repeats until it can say same or different. Each look's interval is a
// repeated confidence interval of a group-sequential plan (Jennison and
// Turnbull, Group Sequential Methods with Applications to Clinical Trials,
// 2000, ch. 9): the t statistic's boundary at n pairs is set, by
// simulation of its exact null law (it is pivotal for normal log ratios),
// so that the error spent by then follows Lan and DeMets' Pocock-type
// spending function (Biometrika 70, 1983). Every interval of the sequence
// then covers the true ratio at once with probability 1 - Alpha(), so a
// decision may stop at its first conclusive look, and does: later pairs
// do not change it. The statistic is Yuen's trimmed t, a tenth of the
// log ratios trimmed from each end ([Trim]), so that one disturbed round
// does not widen an interval by its own size. Alpha() splits [VerdictAlpha] over the decisions the
// verdict can make (Bonferroni over decisions, not over looks), each
// erring one way only, so the verdict is wrong (a fail of a candidate
// within every limit, or a pass of one beyond a limit) at most 5 % of the
// time however often it was looked at.
//
// Against a stored reference the decisions are made once, or, with
// a MaxCount, at most [MaxLooks] times, each at [StoredConfidence]: the
// verdict's VerdictAlpha split over the looks and the decisions, as a
// sequential verdict splits it over its decisions ([Gate.UntilConclusive],
// [Looks], [Gate.DecideAt], [Targets]). A gated scenario with no valid
// repeat in one run or the other is refused (no verdict), not dropped.
//
// # Noise
//
// An A/A run (candidate identical to reference) shows what the machine can
// detect: [Gate.Calibrate] ([Gate.CalibrateAt] at the decisions' level) reports, per gated metric, the half-width of the
// A/A interval as the smallest detectable change. A change that size is
// the smallest the interval can tell from none, and it is also how far an
// unchanged candidate's interval reaches, so when it exceeds the limit the
// gate cannot pass honestly, and says so, with the pairs that would let it.
//
// # Outcomes and exit codes
//
// A [Verdict] is the worst of its decisions: fail over inconclusive over
// pass. Its exit code is 0 for pass, 1 for fail and 3 for inconclusive;
// 2 ([ExitError]) is left for a run that could not decide (a bad fixture,
// results that are not comparable), as the go command uses it.
//
// # Stored reference
//
// When reference and candidate cannot run together, [Comparable] checks
// that a stored results file can stand in for the reference: it refuses,
// naming the field, on a different target, scenario set, concurrency,
// load, placement or machine size, and warns on a different CPU model,
// kernel or Kubernetes version. [ComparableSettings] is the part that can
// be checked before this run has measured anything, [ComparableScenarios]
// the part that needs its records.
//
// The stored repeats were not measured back to back with this run's, so
// nothing pairs them: a [Measurement] marked Unpaired holds the two runs'
// repeats as two independent samples, of sizes that may differ, and its
// decision rests on Welch's interval on the log values
// (stats.UnpairedLogRatio), which counts the spread of both runs and is
// wider than the paired interval on the same numbers. Its message says
// "unpaired". The stored repeats are fixed, so its pairs-needed estimate
// counts repeats of this run only: the smallest N at which Welch's
// half-width t(ν)·√(var(a)/n_a + var(b)/N) clears the limit, holding both
// spreads (stats.CandidateRepeatsToResolve). As this run adds repeats that
// half-width tends to the reference's own, t(n_a-1)·√(var(a)/n_a); when
// that reaches the limit and no N up to [MaxPairsEstimate] clears it, the
// decision says so ([Decision.ReferenceTooFew]): rerun the reference with
// a higher -count.
package gate
