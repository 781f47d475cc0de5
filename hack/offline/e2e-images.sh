#!/usr/bin/env bash
# e2e-images.sh: everything `make e2e` needs before its first cluster: a
# Docker engine, the kind node image, the nginx, loadgen and node CPU
# agent images, and Istio's (istiod and pilot-agent of the 1.31-dev pin,
# for the proxyless e2e). Each step is cached (a second run takes seconds), so CI
# starts it in the background at its first stage, beside the tests that
# do not measure (.ci/run), and `make e2e` runs it again to check.
#
# Usage: hack/offline/e2e-images.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

main() {
	timed docker "${OFFLINE_DIR}/docker.sh"
	apt_install "${BUILD_PACKAGES[@]}"
	# The node image (Go builds) and the workload images (a debootstrap
	# and a Go build) at once: each leaves the other's idle time to use.
	# Each script prints its own stages' times.
	timed node-image.sh "${OFFLINE_DIR}/node-image.sh" &
	local node=$!
	"${OFFLINE_DIR}/images.sh" nginx >/dev/null
	"${OFFLINE_DIR}/images.sh" go meshbench/mbloadgen:dev ./cmd/mbloadgen >/dev/null
	"${OFFLINE_DIR}/images.sh" mbnodecpu >/dev/null
	"${OFFLINE_DIR}/istio.sh" 131 >/dev/null
	wait "${node}" || die "the node image failed (its log is above)"
}

main "$@"
