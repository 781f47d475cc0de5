#!/usr/bin/env bash
# Runs a command on a machine whose speed wanders, as this 2-core VM's did
# on its bad days (2026-12-03: a reference arm's throughput ranged from
# 3,000 to 6,100 req/s within eight minutes). The command and everything
# it starts run in a CPU cgroup whose quota changes at random: every 5 to
# 30 s (uniform) to between 1.0 and 2.0 cores (uniform), so the cores the
# run may use wander ×2 within minutes. No other process is started: the
# run's busy-machine check stays quiet, and what moves is the machine's
# speed, as a noisy host moves it. It is for measuring what a gate does
# on a bad day, on any day (docs/gate.md, "A noisy day, emulated").
#
#   MODE=duet hack/wander.sh hack/gate-rates.sh caddy 10       # 10 A/A duet gates on a wandering machine
#   SEED=7 MIN_CORES=1.25 hack/wander.sh go test ./benchmarks -bench .
#
# SEED (default 1) makes the quota's path repeatable; MIN_CORES and
# MAX_CORES (default 1.0 and 2.0) bound it, HOLD_MIN and HOLD_MAX (5 and
# 30 s) bound each level's hold. Each change is logged, with its UTC time,
# to WANDER_LOG (default results/wander-<time>.log), and the cgroup's
# throttling at the end, so that a result can be laid beside the speed
# the machine had. Needs root and the cgroup v1 cpu controller (or v2's
# cpu.max); it says so and exits 2 without them.
# shellcheck disable=SC2317 # cleanup and throttled run from the EXIT trap
set -euo pipefail
cd "$(dirname "$0")/.."
(($# > 0)) || {
	echo "usage: [SEED=N] [MIN_CORES=C] [MAX_CORES=C] [HOLD_MIN=S] [HOLD_MAX=S] hack/wander.sh COMMAND [ARGS...]" >&2
	exit 2
}
seed=${SEED:-1} min=${MIN_CORES:-1.0} max=${MAX_CORES:-2.0} hmin=${HOLD_MIN:-5} hmax=${HOLD_MAX:-30}
log=${WANDER_LOG:-results/wander-$(date -u +%Y%m%dT%H%M%SZ).log}
period=100000 # µs: the CFS period, as the kernel's default
if [[ -d /sys/fs/cgroup/cpu && -w /sys/fs/cgroup/cpu ]]; then
	cg=/sys/fs/cgroup/cpu/meshbench-wander-$$
	mkdir "$cg"
	echo $period >"$cg/cpu.cfs_period_us"
	setq() { echo "$1" >"$cg/cpu.cfs_quota_us"; }
	throttled() { grep -E 'nr_periods|nr_throttled|throttled_time' "$cg/cpu.stat" | tr '\n' ' '; }
	root=/sys/fs/cgroup/cpu
elif [[ -f /sys/fs/cgroup/cgroup.controllers ]] && grep -qw cpu /sys/fs/cgroup/cgroup.controllers; then
	cg=/sys/fs/cgroup/meshbench-wander-$$
	mkdir "$cg"
	setq() { echo "$1 $period" >"$cg/cpu.max"; }
	throttled() { grep -E 'nr_periods|nr_throttled|throttled_usec' "$cg/cpu.stat" | tr '\n' ' '; }
	root=/sys/fs/cgroup
else
	echo "wander: no writable cgroup cpu controller (v1 /sys/fs/cgroup/cpu or v2 cpu.max): run as root on a machine that has one" >&2
	exit 2
fi
mkdir -p "$(dirname "$log")"
# quota prints the quota, in µs per period, the i-th step of the path takes.
quota() { awk -v s="$seed" -v i="$1" -v lo="$min" -v hi="$max" -v p=$period 'BEGIN { srand(s * 100003 + i); printf "%d", (lo + rand() * (hi - lo)) * p }'; }
hold() { awk -v s="$seed" -v i="$1" -v lo="$hmin" -v hi="$hmax" 'BEGIN { srand(s * 100019 + i); printf "%.1f", lo + rand() * (hi - lo) }'; }
echo "# wander: seed $seed, $min to $max cores, each held $hmin to $hmax s; cgroup $cg; command: $*" >"$log"
(
	i=0
	while true; do
		q=$(quota $i) h=$(hold $i)
		setq "$q"
		echo "$(date -u +%FT%T.%3NZ) quota $q/$period µs ($(awk -v q="$q" -v p=$period 'BEGIN { printf "%.2f", q / p }') cores) for ${h} s" >>"$log"
		sleep "$h"
		i=$((i + 1))
	done
) &
wanderer=$!
cleanup() {
	kill "$wanderer" 2>/dev/null || true
	wait "$wanderer" 2>/dev/null || true
	echo "# wander: end $(date -u +%FT%T.%3NZ): $(throttled)" >>"$log"
	echo $$ >"$root/cgroup.procs" 2>/dev/null || true
	rmdir "$cg" 2>/dev/null || echo "wander: $cg still holds processes; remove it with rmdir when they end" >&2
}
trap cleanup EXIT
echo $$ >"$cg/cgroup.procs" # the command and all it starts inherit it
echo "wander: $* on $min to $max cores, wandering (log: $log)" >&2
set +e
"$@"
code=$?
set -e
exit $code
