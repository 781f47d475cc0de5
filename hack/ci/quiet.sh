#!/usr/bin/env bash
# quiet.sh [MAX_SECONDS]: waits until the machine is quiet before the
# tests that measure: writes the dirty pages out (sync), then reads
# /proc/stat every 2 s until the whole machine was under 10 % busy for
# three reads in a row (the share above which a measured run calls itself
# invalid: busy machine), or MAX_SECONDS (default 180) pass. A build that
# just ended leaves gigabytes of build cache to write back and files to
# discard, which the kernel's threads do for a minute or more after it:
# CI's background image build ends right before make test-measure.
# Prints what it waited for; when the machine stays busy it names the
# busiest processes and returns 0 all the same: the runs then say "busy
# machine" themselves.
set -euo pipefail
max=${1:-180}
[[ ${max} =~ ^[0-9]+$ ]] || { echo "quiet.sh: MAX_SECONDS '${max}' is not a whole number" >&2; exit 2; }

# busy_total: the machine's busy, total and stolen jiffies so far. Steal
# (time the hypervisor gave another guest) is not busy here: no process on
# this machine used it, and the runs do not count it as busy either.
busy_total() {
	local _cpu user nice system idle iowait irq softirq steal _rest
	read -r _cpu user nice system idle iowait irq softirq steal _rest </proc/stat
	echo "$((user + nice + system + irq + softirq)) $((user + nice + system + idle + iowait + irq + softirq + steal)) ${steal}"
}

start=${SECONDS}
sync
quiet=0 pct="?" stolen="?"
read -r b0 t0 s0 < <(busy_total)
while [ "${quiet}" -lt 3 ]; do
	if [ $((SECONDS - start)) -ge "${max}" ]; then
		echo "quiet.sh: still busy after ${max}s (last read ${pct}% of the machine, ${stolen}% stolen by the host); the busiest processes:"
		ps -eo pid,pcpu,etime,comm --sort=-pcpu | head -n 6
		exit 0
	fi
	sleep 2
	read -r b1 t1 s1 < <(busy_total)
	pct=$(((b1 - b0) * 100 / (t1 - t0 > 0 ? t1 - t0 : 1)))
	stolen=$(((s1 - s0) * 100 / (t1 - t0 > 0 ? t1 - t0 : 1)))
	b0=${b1} t0=${t1} s0=${s1}
	if [ "${pct}" -lt 10 ]; then
		quiet=$((quiet + 1))
	else
		quiet=0
	fi
done
echo "quiet.sh: quiet after $((SECONDS - start))s (last read ${pct}% of the machine busy)"
