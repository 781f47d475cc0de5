// Package verdict decides whether a meshed run passes: it loads the
// per-target threshold fixtures in fixtures/thresholds/, decoded strictly into
// typed rules, and checks measured overheads against them.
//
// A fixture is one YAML file per target:
//
//	# Thresholds for the embedded local target.
//	target: local
//	limits:
//	  - path: one-hop          # one-hop | two-hop | "*"
//	    concurrency: "1-4"     # "N", "N-M", "N+" or "*"
//	    p50DeltaPct: 900       # meshed-minus-baseline p50, percent of the baseline p50 (or p50DeltaMs, milliseconds)
//	    p99DeltaPct: 600       # p99 increase over baseline, percent
//	    meshedP99OverBaselineP50: 40  # optional: the meshed p99 over the baseline p50, a ratio (meshedP99Ms: in milliseconds)
//	    throughputLossPct: 85  # req/s loss versus baseline, percent
//	    sidecarCPUOverBaselineCPU: 9  # sidecar CPU per request over the baseline arm's, a ratio (or sidecarCPUPer1kReqMs, CPU-ms per 1000 requests)
//	    sidecarRSSMiB: 300     # resident memory of any one sidecar, MiB
//	    meshCores: 1.5         # optional: cores of the whole mesh (sidecars, node proxies, waypoints, control plane)
//
// p99DeltaPct, throughputLossPct and sidecarRSSMiB are required, and so is
// one of each pair (p50DeltaPct or p50DeltaMs; sidecarCPUOverBaselineCPU
// or sidecarCPUPer1kReqMs); the meshed p99 and meshCores are optional (a
// rule without one does not gate it). The limits relative to the baseline
// travel across machine speeds; those in ms and CPU-ms do not. Every limit
// is a finite number ≥ 0: an unknown
// key (a misspelled limit), a missing limit or a value YAML reads as text
// would otherwise switch a gate off without anyone noticing, so [Parse]
// rejects them, naming the file, the line and the field. A bare * is a YAML
// alias, so write it quoted: "*".
//
// Rules are matched in file order and the first rule whose path and
// concurrency both match an observation applies; later rules are not
// consulted. Put narrow rules above broad ones. A rule that can never apply
// because the rules above it already match everything it names is rejected.
// An observation that no rule matches is reported by [Thresholds.Check] as
// uncovered, which fails the verdict just like a breach.
//
// [Thresholds.Check] decides on each metric's interval over repeats, as the
// upgrade gate does: wholly above a limit is a breach, a typed error
// ([*Breach]) returned with the measured [stats.Summary], so nothing
// measured is lost when a gate fails; holding the limit is [*Undecided],
// which does not fail the verdict; wholly at or below it passes.
//
// [Calibrate] computes a fixture from quiet runs (`meshbench calibrate`):
// one rule per measured point, each limit between what the quiet runs'
// intervals reached and what a [Regression] would reach.
package verdict
