#!/usr/bin/env bash
# e2e-images.sh: everything `make e2e` needs before its first cluster: a
# Docker engine, the kind node image, and the nginx, loadgen and node CPU
# agent images. Each step is cached (a second run takes seconds), so CI
# starts it in the background at its first stage, beside the tests that
# do not measure (.ci/run), and `make e2e` runs it again to check.
#
# Usage: hack/offline/e2e-images.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

main() {
	timed docker "${OFFLINE_DIR}/docker.sh"
	timed node-image "${OFFLINE_DIR}/node-image.sh"
	timed nginx-image "${OFFLINE_DIR}/images.sh" nginx >/dev/null
	timed loadgen-image "${OFFLINE_DIR}/images.sh" go meshbench/mbloadgen:dev ./cmd/mbloadgen >/dev/null
	timed nodecpu-image "${OFFLINE_DIR}/images.sh" mbnodecpu >/dev/null
}

main "$@"
