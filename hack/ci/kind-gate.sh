#!/usr/bin/env bash
# kind-gate.sh reference|gate: mesh-upgrade.yml's kind job, one pin
# (PIN) of a pull request, CANDIDATE (the head's) against REFERENCE (the
# base's), on kind, as root (sudo when the runner is not root).
#
#   PIN=kind-sidecar: both sidecar images (BASE_NGINX, HEAD_NGINX, from
#     kind-images.sh) interleaved on one cluster; `reference` does nothing.
#   PIN=a mesh (istio, istio-ambient, linkerd, cilium): one cluster cannot
#     run two releases of a mesh, so `reference` measures the base's
#     release, BenchmarkUpgradeGate with -store-reference (baseline and
#     meshed arms, COUNT repeats, no decision), into RESULTS/reference/,
#     and `gate` gates the head's release against that file (-reference),
#     adding repeats up to MAX_COUNT while undecided.
#
# The gate's outcome goes through hack/gate-outcome.sh (ON_INCONCLUSIVE,
# default warn: a runner that cannot decide says so, with the smallest
# change it could detect, and is not red by design). Every input is
# checked first (meshbench check) and a bad one refused naming it.
# REFERENCE_TIMEOUT and GATE_TIMEOUT are go test's -timeout of each run
# (default 60m; the suite measures for at most 3/4 of it, then decides).
# REFERENCE_MESH_FLAGS and CANDIDATE_MESH_FLAGS are flags that install
# each release (kind-images.sh writes them for a mesh built offline, such
# as istio-proxyless: its charts and data plane); EXTRA_FLAGS are added to
# both runs (make e2e: -kind-cluster=NAME -keep-cluster, short windows).
# DRY_RUN=1 checks the inputs and prints the commands instead of running
# them.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "${REPO_ROOT}"

stage=${1:-}
case ${stage} in
reference | gate) ;;
*) echo "usage: kind-gate.sh reference|gate" >&2; exit 2 ;;
esac
pin=${PIN:-} ref=${REFERENCE:-} cand=${CANDIDATE:-}
max_count=${MAX_COUNT:-} count=${COUNT:-6}
ref_timeout=${REFERENCE_TIMEOUT:-60m} gate_timeout=${GATE_TIMEOUT:-60m}
head_nginx=${HEAD_NGINX:-} base_nginx=${BASE_NGINX:-}
results=$(realpath -m "${RESULTS:-results}") # absolute: go test runs in ./benchmarks
refdir="${results}/reference"

[ -n "${pin}" ] || bad_input pin "" "empty"
[ -n "${ref}" ] || bad_input reference "" "empty"
[ -n "${cand}" ] || bad_input candidate "" "empty"
check_positive_int max-count "${max_count}"
check_positive_int count "${count}"
check_inconclusive inconclusive "${ON_INCONCLUSIVE:-warn}"
[[ ${ref_timeout} =~ ^[1-9][0-9]*[mh]$ ]] || bad_input REFERENCE_TIMEOUT "${ref_timeout}" "want minutes or hours, e.g. 60m"
[[ ${gate_timeout} =~ ^[1-9][0-9]*[mh]$ ]] || bad_input GATE_TIMEOUT "${gate_timeout}" "want minutes or hours, e.g. 60m"
[ -n "${head_nginx}" ] || bad_input HEAD_NGINX "" "empty: kind-images.sh sets it"
split_flags REFERENCE_MESH_FLAGS "${REFERENCE_MESH_FLAGS:-}"
ref_flags=(${FLAGS[@]+"${FLAGS[@]}"})
split_flags CANDIDATE_MESH_FLAGS "${CANDIDATE_MESH_FLAGS:-}"
cand_flags=(${FLAGS[@]+"${FLAGS[@]}"})
split_flags EXTRA_FLAGS "${EXTRA_FLAGS:-}"
extra=(${FLAGS[@]+"${FLAGS[@]}"})

# As TestKindCandidateGateE2E: open loop at 0.2 of the capacity, after a
# 3 s warm-up. With the defaults (0.25, 300 ms) 8 of 12 open-loop runs on
# kind missed their rate by 5-11 % and were invalid; with 0.2 and 300 ms
# still 9 of 12; with 0.2 and 3 s, 1 of 12.
common=(-target=kind -loadgen-image=meshbench/mbloadgen:dev -gate-fraction=0.2 -warmup=3s ${extra[@]+"${extra[@]}"})
if [ "${pin}" = kind-sidecar ]; then
	[ -n "${base_nginx}" ] || bad_input BASE_NGINX "" "empty: kind-images.sh sets it for kind-sidecar"
	check_flags candidate "${cand} (${head_nginx})" "${common[@]}" -mesh=sidecar -nginx-image="${base_nginx}" -candidate="${head_nginx}"
	check_flags max-count "${max_count}" "${common[@]}" -mesh=sidecar -nginx-image="${base_nginx}" -candidate="${head_nginx}" -max-count="${max_count}"
	# both sidecars in one cluster, interleaved
	reference_run=()
	gate_run=(gate -results "${results}" -timeout "${gate_timeout}" "${common[@]}" -mesh=sidecar
		-nginx-image="${base_nginx}" -candidate="${head_nginx}" -max-count="${max_count}")
else
	check_flags pin "${pin}" "${common[@]}" -mesh="${pin}" -mesh-install ${cand_flags[@]+"${cand_flags[@]}"}
	store=("${common[@]}" -nginx-image="${head_nginx}" -mesh="${pin}" -mesh-install -mesh-version="${ref}"
		${ref_flags[@]+"${ref_flags[@]}"} -store-reference)
	check_flags reference "${ref}" "${store[@]}" -count="${count}"
	against=("${common[@]}" -nginx-image="${head_nginx}" -mesh="${pin}" -mesh-install -mesh-version="${cand}"
		${cand_flags[@]+"${cand_flags[@]}"})
	check_flags candidate "${cand}" "${against[@]}" -reference="${refdir}/stored.json"
	against+=(-count="${count}" -max-count="${max_count}")
	check_flags max-count "${max_count}" "${against[@]}" -reference="${refdir}/stored.json"
	reference_run=(go test ./benchmarks -run '^$' -bench '^BenchmarkUpgradeGate$' -count="${count}" -timeout="${ref_timeout}"
		-results="${refdir}" -thresholds=none "${store[@]}")
	gate_run=(gate -results "${results}" -timeout "${gate_timeout}" "${against[@]}")
fi

run() {
	if [ -n "${DRY_RUN:-}" ]; then
		printf '%q ' "$@"
		echo
		return 0
	fi
	as_root "$@"
}

# logged LOG CMD...: runs CMD (run) with all its output in LOG, and the
# progress lines (a step of the plan, with the time left) on the job's
# log as well: a run takes minutes to an hour. Returns CMD's status.
logged() {
	local log=$1
	shift
	run "$@" 2>&1 | tee "${log}" | { grep --line-buffered -E '^# meshbench: .*\[[0-9]+/[0-9]+, about .* left\]$' || true; }
}
trap 'give_back "${results}"' EXIT
mkdir -p "${results}"

if [ "${stage}" = reference ]; then
	[ ${#reference_run[@]} -gt 0 ] || { echo "kind-gate.sh: ${pin}: both arms run in the gate's cluster: no reference to store"; exit 0; }
	mkdir -p "${refdir}"
	if ! logged "${results}/reference.log" "${reference_run[@]}"; then
		# Some invalid runs (an open-loop run that missed its rate): the
		# stored file keeps them marked, and the gate uses the valid
		# repeats, refusing a point that has none.
		if only_invalid_runs "${results}/reference.log" && newest_json "${refdir}" >/dev/null; then
			why=$(grep -m1 '^FAIL meshbench: not a valid result' "${results}/reference.log" | sed 's/^FAIL meshbench: //')
			warning "mesh upgrade gate" "the reference (${pin} ${ref}) is stored with ${why}; the gate uses its valid repeats"
			echo "### reference (${pin} ${ref}): stored with ${why}; the gate uses its valid repeats" >>"${SUMMARY}"
			exit 0
		fi
		tail -n 60 "${results}/reference.log"
		echo "### NO DECISION: the reference run (${pin} ${ref}) failed: see reference.log in the artifact" >>"${SUMMARY}"
		error "mesh upgrade gate" "no decision: the reference run (${pin} ${ref}) failed (see reference.log)"
		exit 2
	fi
	[ -n "${DRY_RUN:-}" ] && cat "${results}/reference.log"
	exit 0
fi

if [ ${#reference_run[@]} -gt 0 ]; then
	stored="${refdir}/<stored run>.json"
	if [ -z "${DRY_RUN:-}" ] && ! stored=$(newest_json "${refdir}"); then
		echo "### NO DECISION: no stored reference in ${refdir}: the reference step wrote none" >>"${SUMMARY}"
		error "mesh upgrade gate" "no decision: no stored reference in ${refdir}"
		exit 2
	fi
	gate_run+=(-reference="${stored}")
fi
bin=${MESHBENCH:-}
if [ -z "${bin}" ]; then
	bin="$(mktemp -d "${RUNNER_TEMP:-/tmp}/meshbench.XXXXXX")/meshbench"
	go build -o "${bin}" ./cmd/meshbench # as the runner's user; root only runs it
fi
set +e
logged "${results}/gate.log" "${bin}" "${gate_run[@]}"
code=$?
set -e
[ -n "${DRY_RUN:-}" ] && cat "${results}/gate.log"
MAX_COUNT=${max_count} ON_INCONCLUSIVE=${ON_INCONCLUSIVE:-warn} "${REPO_ROOT}/hack/gate-outcome.sh" "${code}" "${pin} ${cand} against ${ref}" "${results}/gate.log"
