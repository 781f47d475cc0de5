#!/usr/bin/env bash
# nightly-history.sh: `meshbench history` over the LAST newest stored runs
# of KEY (bench-results, worktree stored/): its Markdown to the job
# summary, its HTML to history/. Exits as history does: 1 when a series'
# newest run sits after a change point worse than FAIL_ON_CHANGE percent,
# 2 on bad input (and 1 when nothing is stored yet).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "${REPO_ROOT}" || exit 2

key=${KEY:?KEY: where on bench-results the runs are kept}
check_positive_int last "${LAST:-}"
check_number fail-on-change "${FAIL_ON_CHANGE:-}"
# Names start with the run's start time (UTC), so they sort by it.
runs=()
for f in "stored/nightly/${key}"/*.json.gz "stored/nightly/${key}"/*.journal.jsonl; do
	[ -e "${f}" ] && runs+=("${f}")
done
if [ ${#runs[@]} -eq 0 ]; then
	echo "## meshbench history: no stored run yet" >>"${SUMMARY}"
	exit 1
fi
mapfile -t runs < <(printf '%s\n' "${runs[@]}" | sort | tail -n "${LAST}")
# Built, not go run: go run exits 1 for any exit code, and 1 and 2 mean
# different things here.
bin="$(mktemp -d "${RUNNER_TEMP:-/tmp}/meshbench.XXXXXX")/meshbench"
go build -o "${bin}" ./cmd/meshbench || exit 2
"${bin}" history -o history -fail-on-change "${FAIL_ON_CHANGE}" "${runs[@]}" >history.md 2>history.err
code=$?
cat history.md >>"${SUMMARY}"
cat history.err
case ${code} in
0) ;;
1) error "meshbench history" "a series' newest run sits after a change point worse than ${FAIL_ON_CHANGE} % (see the job summary)" ;;
*) error "meshbench history" "no history (exit ${code}): $(tail -n 3 history.err)" ;;
esac
exit "${code}"
