#!/usr/bin/env bash
# gate-outcome.sh CODE WHAT LOG: turns `meshbench gate`'s exit code into a
# CI job's outcome, with a line in the job summary ($GITHUB_STEP_SUMMARY)
# and an annotation. 0 pass; 1 fail; 3 inconclusive, which fails the job
# (exit 3) unless ON_INCONCLUSIVE=warn; anything else is no decision (bad
# input, a run that failed, results that are not comparable), which fails
# it with that code. On inconclusive the summary also gets the smallest
# change the run could detect, per gated metric, when the log has it.
# Used by .github/workflows/mesh-upgrade.yml (hack/ci/local-gate.sh,
# hack/ci/kind-gate.sh).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/ci/lib.sh"
[ $# = 3 ] || { echo "usage: gate-outcome.sh CODE WHAT LOG" >&2; exit 2; }
code=$1 what=$2 log=$3
[[ ${code} =~ ^[0-9]+$ ]] || { echo "gate-outcome.sh: exit code \"${code}\" is not a number" >&2; exit 2; }
on_inconclusive=${ON_INCONCLUSIVE:-fail}
check_inconclusive ON_INCONCLUSIVE "${on_inconclusive}"
tail -n 60 "${log}"

# detectable: the log's "smallest change this run could detect" lines
# (framework/suite's gate output), without their "# meshbench: " prefix.
detectable() {
	awk '/^# meshbench: gate: smallest change this run could detect/ {on=1; next}
		on && /^# meshbench:   / {sub(/^# meshbench:   /, ""); print "- " $0; next}
		{on=0}' "${log}" 2>/dev/null
}

case ${code} in
0)
	echo "### PASS: ${what}" >>"${SUMMARY}"
	echo "gate ${what}: PASS"
	;;
1)
	echo "### FAIL: ${what}: worse than the reference by more than a limit" >>"${SUMMARY}"
	error "mesh upgrade gate" "FAIL: ${what}: worse than the reference by more than a limit (see the job summary)"
	exit 1
	;;
3)
	{
		echo "### INCONCLUSIVE: ${what}: neither a pass nor a fail"
		echo
		echo "The gate could not tell within -max-count=${MAX_COUNT:-?} rounds; each undecided row says how many more pairs would settle it."
		det=$(detectable)
		if [ -n "${det}" ]; then
			echo "The smallest change this run could detect (a change below it goes unseen on this runner):"
			echo
			echo "${det}"
		else
			echo "The gate log has no smallest detectable change (see ${log} in the artifact)."
		fi
	} >>"${SUMMARY}"
	if [ "${on_inconclusive}" = warn ]; then
		warning "mesh upgrade gate" "INCONCLUSIVE: ${what}: neither a pass nor a fail; this runner could not decide within its budget (see the job summary)"
		exit 0
	fi
	error "mesh upgrade gate" "INCONCLUSIVE: ${what}: neither a pass nor a fail (see the job summary)"
	exit 3
	;;
*)
	echo "### NO DECISION (exit ${code}): ${what}: see ${log} in the artifact" >>"${SUMMARY}"
	error "mesh upgrade gate" "no decision (exit ${code}): ${what}: bad input, a run that failed, or results that are not comparable (see ${log})"
	exit "${code}"
	;;
esac
