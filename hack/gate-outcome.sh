#!/usr/bin/env bash
# gate-outcome.sh CODE WHAT LOG: turns `meshbench gate`'s exit code into a
# CI job's outcome, with a line in the job summary ($GITHUB_STEP_SUMMARY)
# and an annotation. 0 pass; 1 fail; 3 inconclusive, which fails the job
# unless ON_INCONCLUSIVE=warn; anything else is no decision (bad input, a
# run that failed, results that are not comparable). Used by
# .github/workflows/mesh-upgrade.yml.
set -uo pipefail
code=$1 what=$2 log=$3
summary=${GITHUB_STEP_SUMMARY:-/dev/null}
tail -n 60 "${log}"
case ${code} in
0) echo "gate ${what}: PASS" ;;
1)
	echo "::error title=mesh upgrade gate::FAIL: ${what}: worse than the reference by more than a limit (see the job summary)"
	exit 1
	;;
3)
	echo "### INCONCLUSIVE (${what}): neither a pass nor a fail. The gate could not tell within -max-count=${MAX_COUNT:-?} rounds; each undecided row says how many more pairs would settle it." >>"${summary}"
	if [ "${ON_INCONCLUSIVE:-fail}" = warn ]; then
		echo "::warning title=mesh upgrade gate::INCONCLUSIVE: ${what}: neither a pass nor a fail (see the job summary)"
		exit 0
	fi
	echo "::error title=mesh upgrade gate::INCONCLUSIVE: ${what}: neither a pass nor a fail (see the job summary)"
	exit 3
	;;
*)
	echo "::error title=mesh upgrade gate::no decision (exit ${code}): ${what}: bad input, a run that failed, or results that are not comparable (see ${log})"
	echo "### NO DECISION (exit ${code}, ${what}): see ${log} in the artifact" >>"${summary}"
	exit "${code}"
	;;
esac
