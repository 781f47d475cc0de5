#!/usr/bin/env bash
# clusters.sh: stops before the tests that measure when kind clusters run on
# this machine. An idle 3-node cluster (kube-apiserver, etcd, kubelets,
# containerd) takes 200-300m of the 2 cores, over the 10 % above which a
# measured run calls itself busy, and its nodes start again whenever dockerd
# does: CI's run of 2026-12-06 10:43 UTC failed that way, every run of make
# test-measure "busy machine" beside a cluster kept from an earlier session.
# Under CI=true it deletes the clusters whose nodes run meshbench's node image
# (their label meshbench.cache-key says so): a run of ours made them and CI's
# machine is its own. Any other cluster, or any cluster outside CI, is named
# with the command that deletes it, and the script exits 1.
set -euo pipefail
cd "$(dirname "$0")/../.."

if ! command -v docker >/dev/null || ! docker info >/dev/null 2>&1; then
	echo "clusters.sh: no dockerd, so no kind cluster runs"
	exit 0
fi
mapfile -t clusters < <(docker ps -a --filter label=io.x-k8s.kind.cluster \
	--format '{{.Label "io.x-k8s.kind.cluster"}}' | sort -u)
if [ ${#clusters[@]} -eq 0 ]; then
	echo "clusters.sh: no kind cluster on this machine"
	exit 0
fi
left=()
for c in "${clusters[@]}"; do
	mapfile -t nodes < <(docker ps -a --filter "label=io.x-k8s.kind.cluster=${c}" --format '{{.Names}}')
	ours=$(docker ps -a --filter "label=io.x-k8s.kind.cluster=${c}" \
		--filter label=meshbench.cache-key --format '{{.Names}}' | wc -l)
	if [ "${CI:-}" = true ] && [ "${ours}" -eq ${#nodes[@]} ]; then
		echo "clusters.sh: deleting kind cluster ${c} (${#nodes[@]} nodes on meshbench's node image, left from an earlier run)"
		go run ./hack/offline/kindcluster down "${c}"
	else
		left+=("${c}")
	fi
done
if [ ${#left[@]} -gt 0 ]; then
	echo "clusters.sh: kind clusters run on this machine: ${left[*]}; the tests that measure would call every run busy." >&2
	for c in "${left[@]}"; do
		echo "  delete it: go run ./hack/offline/kindcluster down ${c}" >&2
	done
	exit 1
fi
