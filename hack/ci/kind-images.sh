#!/usr/bin/env bash
# kind-images.sh: mesh-upgrade.yml's kind job, first step: Docker and the
# offline images `make e2e` uses (hack/offline/e2e-images.sh), as root (sudo when the runner is not
# root). Writes HEAD_NGINX, and for PIN=kind-sidecar BASE_NGINX (the base
# commit BASE_SHA's own sidecar image, built from its versions.env), to
# $GITHUB_ENV.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "${REPO_ROOT}"

pin=${PIN:-}
[ -n "${pin}" ] || bad_input pin "" "empty"
env_file=${GITHUB_ENV:-/dev/null}

as_root hack/offline/e2e-images.sh
head_nginx=$(as_root hack/offline/images.sh nginx | tail -n 1) # cached: prints its tag
echo "HEAD_NGINX=${head_nginx}" >>"${env_file}"
if [ "${pin}" = kind-sidecar ]; then
	sha=${BASE_SHA:-}
	[[ ${sha} =~ ^[0-9a-f]{7,40}$ ]] || bad_input base.sha "${sha}" "not a commit id"
	base="${RUNNER_TEMP:-/tmp}/base-${sha}"
	[ -d "${base}" ] || git worktree add -q --detach "${base}" "${sha}"
	base_nginx=$(cd "${base}" && as_root hack/offline/images.sh nginx | tail -n 1)
	echo "BASE_NGINX=${base_nginx}" >>"${env_file}"
fi
