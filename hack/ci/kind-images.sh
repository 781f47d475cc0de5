#!/usr/bin/env bash
# kind-images.sh: mesh-upgrade.yml's kind job, first step: Docker and the
# offline images `make e2e` uses (hack/offline/e2e-images.sh), as root (sudo when the runner is not
# root). Writes HEAD_NGINX to $GITHUB_ENV, and what the pin's two arms
# need that each tree builds for itself (the base commit BASE_SHA's from
# a worktree of it):
#   - PIN=kind-sidecar: BASE_NGINX, the base's own sidecar image, built from
#     its versions.env;
#   - PIN=istio-proxyless: the images of REFERENCE (the base's Istio) and of
#     CANDIDATE (the head's), built offline by each tree's
#     hack/offline/istio.sh, and REFERENCE_MESH_FLAGS and
#     CANDIDATE_MESH_FLAGS, the flags that install each: its charts from
#     its own Istio module (-mesh-charts) and the proxyless data plane
#     (-protocol=grpc), which kind-gate.sh adds to each arm's run.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "${REPO_ROOT}"

pin=${PIN:-}
[ -n "${pin}" ] || bad_input pin "" "empty"
env_file=${GITHUB_ENV:-/dev/null}

# base_tree: a worktree of the base commit BASE_SHA, in BASE. (Results
# go in variables, not through $(...), so that a refusal's exit and its
# annotation reach the job.)
base_tree() {
	local sha=${BASE_SHA:-}
	[[ ${sha} =~ ^[0-9a-f]{7,40}$ ]] || bad_input base.sha "${sha}" "not a commit id"
	BASE="${RUNNER_TEMP:-/tmp}/base-${sha}"
	[ -d "${BASE}" ] || git worktree add -q --detach "${BASE}" "${sha}"
}

# istio_flags INPUT TREE VERSION: builds the Istio images of VERSION (a
# tag such as 1.31-dev.eed52ebb66ad) with TREE's istio.sh, and sets
# MESH_FLAGS to the flags that install it; input INPUT names VERSION in
# an error.
istio_flags() {
	local input=$1 tree=$2 version=$3 n tags charts
	check_istio_version "${input}" "${version}"
	n="1${BASH_REMATCH[1]}"
	[ -x "${tree}/hack/offline/istio.sh" ] ||
		bad_input "${input}" "${version}" "the tree at ${tree} has no hack/offline/istio.sh to build it"
	if ! tags=$(cd "${tree}" && hack/offline/istio.sh "${n}" tags 2>&1); then
		bad_input "${input}" "${version}" "${tree}'s hack/offline/istio.sh pins no Istio ${n}: ${tags}"
	fi
	[[ ${tags} == *":${version} "* ]] ||
		bad_input "${input}" "${version}" "${tree}'s hack/offline/istio.sh ${n} builds ${tags}, not ${version}"
	(cd "${tree}" && as_root hack/offline/istio.sh "${n}" images)
	charts=$(cd "${tree}" && as_root hack/offline/istio.sh "${n}" charts)
	MESH_FLAGS="-protocol=grpc -mesh-charts=${charts}"
}

# check_istio_version INPUT VERSION: an istio-proxyless version, the tag
# hack/offline/istio.sh builds (1.<minor>-dev.<commit>).
check_istio_version() {
	[[ $2 =~ ^1\.([0-9]+)-dev\.[0-9a-f]{12}$ ]] ||
		bad_input "$1" "$2" "not an istio-proxyless version (want e.g. 1.31-dev.eed52ebb66ad)"
}

# Every input is checked before anything is built.
if [ "${pin}" = istio-proxyless ]; then
	check_istio_version candidate "${CANDIDATE:-}"
	check_istio_version reference "${REFERENCE:-}"
fi
as_root hack/offline/e2e-images.sh
head_nginx=$(as_root hack/offline/images.sh nginx | tail -n 1) # cached: prints its tag
echo "HEAD_NGINX=${head_nginx}" >>"${env_file}"
case ${pin} in
kind-sidecar)
	base_tree
	base_nginx=$(cd "${BASE}" && as_root hack/offline/images.sh nginx | tail -n 1)
	echo "BASE_NGINX=${base_nginx}" >>"${env_file}"
	;;
istio-proxyless)
	istio_flags candidate "${REPO_ROOT}" "${CANDIDATE:-}"
	echo "CANDIDATE_MESH_FLAGS=${MESH_FLAGS}" >>"${env_file}"
	base_tree
	istio_flags reference "${BASE}" "${REFERENCE:-}"
	echo "REFERENCE_MESH_FLAGS=${MESH_FLAGS}" >>"${env_file}"
	;;
esac
