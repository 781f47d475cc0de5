#!/usr/bin/env bash
# ci-run.sh: ci.yml's run of .ci/run, which installs packages, starts
# dockerd and builds the offline kind node: as root (sudo when the runner
# is not root), with its caches in runner-owned directories that
# actions/cache restores and saves: MESHBENCH_CACHE, GOCACHE and
# GOMODCACHE (set by the workflow), handed back to the runner's user at the
# end, so that the cache step can save them and the next run restore them.
#
# The node and workload images are debootstrapped from a Debian archive:
# on a Debian runner, the one its apt sources name; on any other
# (ubuntu-latest has no Debian suite in its sources) DEBIAN_MIRROR, from the
# repository variable of that name, must name one.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "${REPO_ROOT}"

for v in MESHBENCH_CACHE GOCACHE GOMODCACHE; do
	[ -n "${!v:-}" ] || { error "ci" "${v} is not set: the workflow points it at a runner-owned directory it caches"; exit 2; }
	mkdir -p "${!v}"
done
os=$( (. /etc/os-release && echo "${ID:-unknown}") 2>/dev/null || echo unknown)
if [ "${os}" != debian ] && [ -z "${DEBIAN_MIRROR:-}" ]; then
	error "ci" "this runner runs ${os}, not Debian: its apt sources name no Debian archive to build the kind node from. Set the repository variable DEBIAN_MIRROR (Settings, Secrets and variables, Actions, Variables) to a Debian archive URL, or run on a self-hosted Debian runner (repository variable CI_RUNNER)"
	exit 2
fi
trap 'give_back "${MESHBENCH_CACHE}" "${GOCACHE}" "${GOMODCACHE}"' EXIT
as_root env "MESHBENCH_CACHE=${MESHBENCH_CACHE}" "GOCACHE=${GOCACHE}" "GOMODCACHE=${GOMODCACHE}" "DEBIAN_MIRROR=${DEBIAN_MIRROR:-}" bash .ci/run
