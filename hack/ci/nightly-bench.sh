#!/usr/bin/env bash
# nightly-bench.sh: the night's benchmarks (BENCH, with FLAGS split into
# one argument per flag, never pasted into a shell) on the local target, or
# on KUBECONFIG_FILE's cluster with MESH, into results/ (absolute: go test runs
# in ./benchmarks). Always exits 0: go test's exit code goes to
# $GITHUB_OUTPUT as code, for the workflow's last step to report.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "${REPO_ROOT}"

split_flags flags "${FLAGS:-}"
where=()
if [ -n "${KUBECONFIG_FILE:-}" ]; then
	where=(-kubeconfig "${KUBECONFIG_FILE}" -mesh "${MESH:?MESH: the mesh of the cluster}")
fi
mkdir -p results
set +e
go test ./benchmarks -run '^$' -bench "${BENCH:?BENCH: the scenarios}" -timeout 100m -results "${PWD}/results" "${where[@]}" "${FLAGS[@]}" 2>&1 | tee results/bench.log
code=${PIPESTATUS[0]}
set -e
echo "code=${code}" >>"${OUTPUT}"
