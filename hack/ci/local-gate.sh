#!/usr/bin/env bash
# local-gate.sh: mesh-upgrade.yml's local job: CANDIDATE against REFERENCE
# (local sidecars, both arms interleaved in one run), up to MAX_COUNT
# rounds, its outcome through hack/gate-outcome.sh (ON_INCONCLUSIVE: fail
# or warn). Results and the log go to RESULTS (default results/).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "${REPO_ROOT}"

ref=${REFERENCE:-} cand=${CANDIDATE:-}
max_count=${MAX_COUNT:-60}
[ -n "${ref}" ] || bad_input reference "" "empty"
[ -n "${cand}" ] || bad_input candidate "" "empty"
check_positive_int max-count "${max_count}"
check_inconclusive inconclusive "${ON_INCONCLUSIVE:-fail}"
check_flags reference "${ref}" -sidecar "${ref}"
check_flags candidate "${cand}" -sidecar "${ref}" -candidate "${cand}"
check_flags max-count "${max_count}" -sidecar "${ref}" -candidate "${cand}" -max-count "${max_count}"

results=$(realpath -m "${RESULTS:-results}") # absolute: go test runs in ./benchmarks
mkdir -p "${results}"
set +e
meshbench gate -results "${results}" -sidecar "${ref}" -candidate "${cand}" -max-count "${max_count}" >"${results}/gate.log" 2>&1
code=$?
set -e
exec "${REPO_ROOT}/hack/gate-outcome.sh" "${code}" "${cand} against ${ref}" "${results}/gate.log"
