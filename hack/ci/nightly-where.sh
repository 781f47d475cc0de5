#!/usr/bin/env bash
# nightly-where.sh: where nightly.yml runs. With a kubeconfig
# (KUBECONFIG_DATA, from the secret SECRET_NAME) the cluster's, with its
# mesh (MESH, required then); without, the local target on the runner.
# Checks the other inputs too (BENCH, FLAGS, LAST, FAIL_ON_CHANGE), so that
# a bad one stops the night before anything runs, naming it.
# Writes to $GITHUB_OUTPUT: kubeconfig (a file, or empty), mesh, and key
# (where on bench-results this cluster's runs are kept).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "${REPO_ROOT}"

[ -n "${BENCH:-}" ] || bad_input bench "" "empty: want the scenarios, e.g. OneHop\$|TwoHop\$"
split_flags flags "${FLAGS:-}"
check_positive_int last "${LAST:-}"
check_number fail-on-change "${FAIL_ON_CHANGE:-}"
if [ -z "${KUBECONFIG_DATA:-}" ]; then
	{
		echo "kubeconfig="
		echo "mesh="
		echo "key=local"
	} >>"${OUTPUT}"
	exit 0
fi
[ -n "${MESH:-}" ] || bad_input mesh "" "a kubeconfig (${SECRET_NAME:-the secret}) needs a mesh: the input mesh or the variable NIGHTLY_MESH"
check_flags mesh "${MESH}" -target=remote -mesh="${MESH}"
file="${RUNNER_TEMP:-/tmp}/kubeconfig"
(umask 077 && printf '%s\n' "${KUBECONFIG_DATA}" >"${file}")
{
	echo "kubeconfig=${file}"
	echo "mesh=${MESH}"
	echo "key=$(echo "${SECRET_NAME:-cluster}-${MESH}" | tr '[:upper:]' '[:lower:]' | tr -c 'a-z0-9\n-' '-')"
} >>"${OUTPUT}"
