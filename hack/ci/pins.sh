#!/usr/bin/env bash
# pins.sh: what mesh-upgrade.yml gates (its pins job).
#
# On a pull request (EVENT=pull_request), the base commit BASE_SHA's own
# tree prints its pins (`meshbench pins`, built from that tree, since a
# mesh adapter's pin is compiled in) and the head's compares them
# (`meshbench pins -base`): every changed pin is gated. A base whose
# `meshbench pins` fails (a commit older than the command, a tree that
# does not build) fails the job, naming the commit: the pull request is
# never passed ungated.
#
# On demand (workflow_dispatch), the inputs are the local gate's:
# INPUT_REFERENCE, INPUT_CANDIDATE, INPUT_MAX_COUNT and INPUT_INCONCLUSIVE,
# each checked as the gate would check it (meshbench check), and refused
# naming the input.
#
# Writes to $GITHUB_OUTPUT: local (yes/no), local-reference,
# local-candidate, kind (a JSON matrix of the kind pins:
# [{"pin":…,"reference":…,"candidate":…}]), max-count and inconclusive;
# and the table of changed pins to $GITHUB_STEP_SUMMARY.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "${REPO_ROOT}"

work=$(mktemp -d "${RUNNER_TEMP:-/tmp}/pins.XXXXXX")
base=""
cleanup() {
	[ -z "${base}" ] || git worktree remove --force "${base}" >/dev/null 2>&1 || true
	rm -rf "${work}"
}
trap cleanup EXIT
changed="${work}/changed"

max_count=${INPUT_MAX_COUNT:-60}
inconclusive=${INPUT_INCONCLUSIVE:-fail}
if [ "${EVENT:?EVENT: the event that started the workflow}" != pull_request ]; then
	check_positive_int max-count "${max_count}"
	check_inconclusive inconclusive "${inconclusive}"
	ref=${INPUT_REFERENCE:-}
	cand=${INPUT_CANDIDATE:-}
	[ -n "${ref}" ] || bad_input reference "" "empty; want a local sidecar, e.g. caddy@v2.10.2"
	[ -n "${cand}" ] || bad_input candidate "" "empty; want a local sidecar, e.g. caddy@v2.11.9 or caddy+access-log"
	check_flags reference "${ref}" -sidecar "${ref}"
	check_flags candidate "${cand}" -sidecar "${ref}" -candidate "${cand}"
	check_flags max-count "${max_count}" -sidecar "${ref}" -candidate "${cand}" -max-count "${max_count}"
	echo "local ${ref} ${cand}" >"${changed}"
else
	sha=${BASE_SHA:?BASE_SHA: the pull request base commit}
	[[ ${sha} =~ ^[0-9a-f]{7,40}$ ]] || bad_input base.sha "${sha}" "not a commit id"
	git cat-file -e "${sha}^{commit}" 2>/dev/null ||
		{ error "pins" "base commit ${sha} is not in this clone (checkout with fetch-depth: 0)"; exit 1; }
	# One path for the base's tree, whatever the commit: go's build cache
	# is keyed by it, so a second base reuses what the first built.
	base="${RUNNER_TEMP:-/tmp}/meshbench-pins-base"
	git worktree remove --force "${base}" >/dev/null 2>&1 || rm -rf "${base}"
	git worktree prune
	git worktree add -q --detach "${base}" "${sha}"
	# The base's own tree prints the base's pins.
	if ! (cd "${base}" && go run ./cmd/meshbench pins) >"${work}/base.pins" 2>"${work}/base.err"; then
		cat "${work}/base.err" >&2
		why=$(grep -m1 -E 'unknown command|meshbench:|cannot|error' "${work}/base.err" || tail -n 1 "${work}/base.err")
		error "pins" "base commit ${sha}: \`meshbench pins\` failed (${why}): its pins cannot be read, so nothing can be gated; rebase onto a base that has \`meshbench pins\`, or gate by hand (workflow_dispatch)"
		{
			echo "## meshbench upgrade gate: NO DECISION"
			echo
			echo "The base commit \`${sha}\` has no working \`meshbench pins\` (\`${why}\`): what this change pins cannot be compared, so nothing was gated."
		} >>"${SUMMARY}"
		exit 1
	fi
	# The head's tree compares; a failure here fails the job too.
	meshbench pins -base "${work}/base.pins" >"${changed}"
fi

{
	echo "## meshbench upgrade gate: what this change pins"
	echo
	echo "| pin | reference | candidate |"
	echo "|---|---|---|"
	awk '{print "| " $1 " | " ($2 == "-" ? "(new: nothing to gate against)" : $2) " | " $3 " |"}' "${changed}"
	if [ ! -s "${changed}" ]; then
		echo "| (none) | | |"
		echo
		echo "No pin changed: nothing to gate."
	fi
} >>"${SUMMARY}"
cat "${changed}"

ref="" cand=""
while read -r name r c; do
	if [ "${name}" = local ] && [ "${r}" != - ]; then
		ref=${r} cand=${c}
	fi
done <"${changed}"
{
	echo "local=$([ -n "${cand}" ] && echo yes || echo no)"
	echo "local-reference=${ref}"
	echo "local-candidate=${cand}"
	# the kind pins as a matrix; a new pin has nothing to gate against
	awk 'BEGIN{printf "kind=["} $1!="local" && $2!="-"{printf "%s{\"pin\":\"%s\",\"reference\":\"%s\",\"candidate\":\"%s\"}", (n++?",":""), $1, $2, $3} END{print "]"}' "${changed}"
	echo "max-count=${max_count}"
	echo "inconclusive=${inconclusive}"
} >>"${OUTPUT}"
