#!/usr/bin/env bash
# Runs the default upgrade gate N times, one after another, with the
# candidate given, and tallies its outcomes: the gate's error rates as a
# distribution over whole runs on this machine (docs/measurements.md,
# "Whole gates on the 2-core machine"). Run it on a quiet machine: nothing else may run meanwhile.
#
#   hack/gate-rates.sh caddy 20                     # A/A: how often an unchanged sidecar passes
#   hack/gate-rates.sh caddy+access-log 10          # a real, modest regression: how often it fails
#   MODE=duet hack/gate-rates.sh caddy 20           # the same, with both arms at once (-gate-mode=duet)
#   MODE=both hack/gate-rates.sh caddy 20           # both modes side by side: N gates of each, interleaved
#   MODE=duet hack/wander.sh hack/gate-rates.sh caddy 20   # on an emulated bad day: the machine's cores wander 1-2
#
# MODE is sequential (the default), duet, open-duet or both. With both, run i is one
# gate of each mode, sequential first in odd runs and duet first in even
# ones, so that both modes see the same hours of the machine; each mode is
# tallied apart (docs/gate.md, "Duet mode").
#
# Every run's results, log and verdict go to $OUT (default
# results/gate-rates/<candidate>-<mode>-<time>/); the last lines count the
# outcomes by exit code (0 pass, 1 fail, 3 inconclusive, 2 no decision),
# one line per mode, then `meshbench offsets` over each mode's runs: per
# decision, the day's per-pair noise, the runs whose interval excludes 1,
# the mean ratio over the runs and an F test of the runs' means (for an
# A/A, offsets between the arms that the runs' own intervals do not cover).
set -euo pipefail
cd "$(dirname "$0")/.."
candidate=${1:?usage: [MODE=sequential|duet|open-duet|both] hack/gate-rates.sh CANDIDATE N [BENCHMARK-FLAGS...]}
n=${2:?usage: [MODE=sequential|duet|open-duet|both] hack/gate-rates.sh CANDIDATE N [BENCHMARK-FLAGS...]}
shift 2
mode=${MODE:-sequential}
case $mode in
sequential | duet | open-duet) modes=("$mode") ;;
both) modes=(sequential duet) ;;
*)
	echo "gate-rates: MODE=$mode: want sequential, duet, open-duet or both" >&2
	exit 2
	;;
esac
out=${OUT:-results/gate-rates/${candidate//[^A-Za-z0-9.+@-]/_}-$mode-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out"
go build -o "$out/meshbench" ./cmd/meshbench
"$out/meshbench" check -candidate "$candidate" -gate-mode "${modes[-1]}" # refuse a candidate or mode that cannot run before the first gate
go test -c -o /dev/null ./benchmarks # compile once, before the first window
declare -A count=()
for i in $(seq 1 "$n"); do
	order=("${modes[@]}")
	if ((${#modes[@]} > 1 && i % 2 == 0)); then
		order=("${modes[1]}" "${modes[0]}")
	fi
	for m in "${order[@]}"; do
		run=run$i-$m
		start=$SECONDS
		set +e
		"$out/meshbench" gate -results "$out/$run" -summary "$out/$run.md" -candidate "$candidate" -gate-mode "$m" "$@" >"$out/$run.log" 2>&1
		code=$?
		set -e
		count[$m:$code]=$((${count[$m:$code]:-0} + 1))
		echo "run $i/$n ($m): exit $code in $((SECONDS - start))s ($(grep -m1 -o '\*\*[A-Z]*\*\*' "$out/$run.md" 2>/dev/null || echo 'no verdict'))"
	done
done
for m in "${modes[@]}"; do
	echo "gate-rates: candidate $candidate, -gate-mode $m, $n runs: ${count[$m:0]:-0} pass, ${count[$m:1]:-0} fail, ${count[$m:3]:-0} inconclusive, ${count[$m:2]:-0} no decision ($out)"
	# The day's per-pair noise, and for an A/A whether the runs' arms
	# carried offsets their own intervals do not cover (docs/gate.md).
	"$out/meshbench" offsets "$out"/run*-"$m"/ || echo "gate-rates: meshbench offsets failed (exit $?)" >&2
done
