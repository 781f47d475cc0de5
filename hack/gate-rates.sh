#!/usr/bin/env bash
# Runs the default upgrade gate N times, one after another, with the
# candidate given, and tallies its outcomes: the gate's error rates as a
# distribution over whole runs on this machine (docs/measurements.md,
# "Whole gates on the 2-core machine"). Run it on a quiet machine: nothing else may run meanwhile.
#
#   hack/gate-rates.sh caddy 20               # A/A: how often an unchanged sidecar passes
#   hack/gate-rates.sh caddy+access-log 10    # a real, modest regression: how often it fails
#
# Every run's results, log and verdict go to $OUT (default
# results/gate-rates/<candidate>-<time>/); the last line counts the
# outcomes by exit code (0 pass, 1 fail, 3 inconclusive, 2 no decision).
set -euo pipefail
cd "$(dirname "$0")/.."
candidate=${1:?usage: hack/gate-rates.sh CANDIDATE N [BENCHMARK-FLAGS...]}
n=${2:?usage: hack/gate-rates.sh CANDIDATE N [BENCHMARK-FLAGS...]}
shift 2
out=${OUT:-results/gate-rates/${candidate//[^A-Za-z0-9.+@-]/_}-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out"
go build -o "$out/meshbench" ./cmd/meshbench
go test -c -o /dev/null ./benchmarks # compile once, before the first window
declare -A count=([0]=0 [1]=0 [2]=0 [3]=0)
for i in $(seq 1 "$n"); do
	start=$SECONDS
	set +e
	"$out/meshbench" gate -results "$out/run$i" -summary "$out/run$i.md" -candidate "$candidate" "$@" >"$out/run$i.log" 2>&1
	code=$?
	set -e
	count[$code]=$(( ${count[$code]:-0} + 1 ))
	echo "run $i/$n: exit $code in $((SECONDS - start))s ($(grep -m1 -o '\*\*[A-Z]*\*\*' "$out/run$i.md" 2>/dev/null || echo 'no verdict'))"
done
echo "gate-rates: candidate $candidate, $n runs: ${count[0]} pass, ${count[1]} fail, ${count[3]} inconclusive, ${count[2]} no decision ($out)"
