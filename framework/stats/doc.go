// Package stats turns raw load results into the numbers meshbench reports:
// HDR histograms of latency (3 significant digits from 1 µs to 60 s, stored
// in HDR's compact encoding) and fortio's coarser histograms, both merged
// losslessly over threads and load generators, percentiles computed on
// merged data (never averaged), repeat summaries as a median with an
// interval, meshed-versus-baseline overheads as both an absolute delta and
// a ratio, and, for gating an upgrade, the paired candidate/reference ratio
// with a Student-t interval on log ratios (PairedLogRatio), its unpaired
// counterpart for a stored reference run (UnpairedLogRatio, Welch), and the
// pairs an interval needs to clear a limit (PairsToResolve), or against a
// fixed stored reference the candidate repeats (CandidateRepeatsToResolve,
// ReferenceHalfWidth).
package stats

// Summary is a set of repeated measurements of one quantity, summarised as
// its median with an interval. Lo and Hi bound the interval; N is the number
// of repeats it rests on. With N == 1, Lo == Median == Hi.
type Summary struct {
	// Median is the repeats' median, in the quantity's unit.
	Median float64 `json:"median"`
	// Lo is the interval's lower bound, in the quantity's unit.
	Lo float64 `json:"lo"`
	// Hi is the interval's upper bound, in the quantity's unit.
	Hi float64 `json:"hi"`
	// N is the number of repeats (or pairs) summarised, a count.
	N int `json:"n"`
	// Confidence is the confidence level of [Lo, Hi] (e.g. 0.95), or 0 when
	// the interval is simply the range of the samples (too few for a level).
	Confidence float64 `json:"confidence,omitempty"`
}
