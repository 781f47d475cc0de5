#!/usr/bin/env bash
# mesh-release-e2e.sh CLUSTER: mesh-upgrade.yml's kind job on its
# mesh-release path, run for real by `make e2e` on the kind cluster
# CLUSTER (kept): the pin istio-proxyless, its release of this tree as
# both reference and candidate (an A/A gate; Istio 1.31-dev, built
# offline). The job's own scripts run, in the job's order and with its
# environment: kind-images.sh (the images of both arms' releases, each
# from its own tree: the base is a worktree of HEAD, and the flags that
# install each), then kind-gate.sh reference (BenchmarkUpgradeGate
# -store-reference: the reference release installed, measured and
# stored), then kind-gate.sh gate (the candidate release installed and
# gated against the stored file with -reference). An A/A gate must not
# fail, and must decide something: exit 0 on pass or inconclusive (a
# warning, as on the job's runners), 1 on fail, 2 when it decided nothing.
# Then TestMeshReleaseResults checks both results files' runs (the mTLS
# proof by SPIFFE identity, istiod's CPU): exit 1 when it fails.
# Shorter than the job: 3 rounds, 5 s windows after 1 s warm-ups (the
# cluster default is 3 s: 48 s of CI in 24 warm-ups), c=8 (EXTRA_FLAGS).
# MESH_RELEASE_REFERENCE (e.g. 1.30-dev.9739e10eb9d7, which istio.sh 130
# builds) gates a real upgrade to this tree's release instead, where a
# fail is a finding; MESH_RELEASE_COUNT and MESH_RELEASE_MAX_COUNT set the
# rounds (default 3 and 3).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "${REPO_ROOT}"

cluster=${1:-}
[ -n "${cluster}" ] || { echo "usage: mesh-release-e2e.sh CLUSTER" >&2; exit 2; }
start=${SECONDS}
work=$(mktemp -d "${TMPDIR:-/tmp}/meshbench-mesh-release.XXXXXX")
version=$(hack/offline/istio.sh 131 tags | cut -d' ' -f1)
version=${version##*:}
export PIN=istio-proxyless REFERENCE=${MESH_RELEASE_REFERENCE:-${version}} CANDIDATE=${version} BASE_SHA
BASE_SHA=$(git rev-parse HEAD 2>/dev/null) ||
	{ echo "mesh-release e2e: ${REPO_ROOT} is not a git clone: the job's base tree is a worktree of a commit"; exit 2; }
export RUNNER_TEMP=${work} GITHUB_ENV=${work}/env GITHUB_STEP_SUMMARY=${work}/summary.md
export RESULTS=${work}/results COUNT=${MESH_RELEASE_COUNT:-3} MAX_COUNT=${MESH_RELEASE_MAX_COUNT:-3} ON_INCONCLUSIVE=warn
export EXTRA_FLAGS="-kind-cluster=${cluster} -keep-cluster -duration=5s -warmup=1s -concurrency=8"
trap 'git worktree remove --force "${work}/base-${BASE_SHA}" 2>/dev/null || true' EXIT

# step NAME CMD...: runs CMD, printing its time; returns its status.
step() {
	local name=$1 t=${SECONDS} rc=0
	shift
	echo "mesh-release e2e: ${name}"
	"$@" || rc=$?
	echo "mesh-release e2e: ${name}: exit ${rc}, $((SECONDS - t))s"
	return "${rc}"
}
step "kind-images.sh (PIN=${PIN} ${REFERENCE} → ${CANDIDATE})" hack/ci/kind-images.sh
# What the job's later steps get from $GITHUB_ENV: NAME=value lines.
while IFS= read -r line; do
	export "${line?}"
done <"${GITHUB_ENV}"
step "kind-gate.sh reference" hack/ci/kind-gate.sh reference
stored=$(newest_json "${RESULTS}/reference") || { echo "mesh-release e2e: no stored reference in ${RESULTS}/reference"; exit 1; }
code=0
step "kind-gate.sh gate" hack/ci/kind-gate.sh gate || code=$?
cat "${GITHUB_STEP_SUMMARY}"
grep -qF "${stored}" "${RESULTS}/gate.log" ||
	{ echo "mesh-release e2e: the gate's log does not name the stored reference ${stored}"; code=1; }
# Both files' runs, checked as TestIstioProxylessKindE2E checks its own:
# the mTLS proof by SPIFFE identity, istiod's and each role's CPU.
step "TestMeshReleaseResults" env MESHBENCH_MESH_RELEASE_RESULTS="${RESULTS}" \
	go test -count=1 -run '^TestMeshReleaseResults$' -v ./framework/suite || code=1
echo "mesh-release e2e: exit ${code} in $((SECONDS - start))s (results: ${RESULTS})"
exit "${code}"
