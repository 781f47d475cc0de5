# shellcheck shell=bash
# Shared helpers of the workflows' scripts (.github/workflows call the
# scripts of this directory, never multi-line shell). Source it; do not
# run it.
#
# A workflow input reaches a script as an environment variable, never
# pasted into the shell, and is checked here before anything is built:
# a bad one stops the script with exit 2 and an error naming the input.

CI_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "${CI_DIR}/../.." && pwd)"
# GitHub's files, or nothing outside Actions (a run by hand, the tests).
# shellcheck disable=SC2034 # used by the scripts that source this file
SUMMARY="${GITHUB_STEP_SUMMARY:-/dev/null}"
# shellcheck disable=SC2034 # used by the scripts that source this file
OUTPUT="${GITHUB_OUTPUT:-/dev/null}"

# error TITLE MESSAGE: an error annotation (a plain line outside Actions).
error() { echo "::error title=$1::$2"; }
warning() { echo "::warning title=$1::$2"; }

# bad_input NAME VALUE WHY: refuses a workflow input, naming it; exit 2.
bad_input() {
	error "bad input" "input $1=\"$2\": $3"
	echo "### bad input: \`$1\`=\`$2\`: $3" >>"${SUMMARY}"
	exit 2
}

# check_positive_int NAME VALUE: a whole number of at least 1.
check_positive_int() {
	[[ $2 =~ ^[1-9][0-9]*$ ]] || bad_input "$1" "$2" "want a whole number of at least 1"
}

# check_number NAME VALUE: a non-negative decimal number (10, 2.5).
check_number() {
	[[ $2 =~ ^[0-9]+(\.[0-9]+)?$ ]] || bad_input "$1" "$2" "want a number, e.g. 10 or 2.5"
}

# check_inconclusive NAME VALUE: what an inconclusive gate does to the job.
check_inconclusive() {
	case $2 in
	fail | warn) ;;
	*) bad_input "$1" "$2" "want fail or warn" ;;
	esac
}

# meshbench ARGS...: this tree's meshbench ($MESHBENCH, a built binary,
# when set: go tool's exit code is the command's, but it compiles first).
meshbench() {
	if [ -n "${MESHBENCH:-}" ]; then
		"${MESHBENCH}" "$@"
	else
		(cd "${REPO_ROOT}" && go tool meshbench "$@")
	fi
}

# check_flags NAME VALUE FLAGS...: refuses input NAME, whose value is
# VALUE, when the benchmark flags FLAGS are not a run's (meshbench check
# names the flag and why).
check_flags() {
	local name=$1 value=$2 out
	shift 2
	if ! out=$(meshbench check "$@" 2>&1); then
		out=$(echo "${out}" | sed 's/^meshbench: check: //' | tr '\n' ' ')
		bad_input "${name}" "${value}" "${out% }"
	fi
}

# split_flags NAME VALUE: the words of VALUE in the array FLAGS, split on
# blanks with no quote removal, globbing or expansion (read -a), each
# checked to be one flag, -name or -name=value. A flag and its value as
# two words is refused: the value would be taken for an argument.
split_flags() {
	local name=$1 value=$2 w
	FLAGS=()
	read -r -a FLAGS <<<"${value}"
	for w in "${FLAGS[@]}"; do
		[[ ${w} =~ ^--?[A-Za-z][A-Za-z0-9._-]*(=.*)?$ ]] ||
			bad_input "${name}" "${value}" "\"${w}\" is not a flag: write each as -name or -name=value (e.g. -count=5 -concurrency=1,8)"
	done
}

# as_root CMD...: runs CMD as root: directly when root, else through
# passwordless sudo, keeping the environment (GITHUB_*, MESHBENCH_*) and
# PATH (sudo resets it) but with root's own HOME, so that root's Go caches
# do not land in the runner user's home. Without either it stops, saying
# what the runner needs.
as_root() {
	if [ "$(id -u)" = 0 ]; then
		"$@"
		return
	fi
	if ! sudo -n true 2>/dev/null; then
		error "needs root" "$(basename "$1") needs root (Docker, debootstrap, kind's nodes): run the runner as root, or give its user passwordless sudo"
		exit 2
	fi
	sudo -E env "PATH=${PATH}" "HOME=$(getent passwd root | cut -d: -f6)" "$@"
}

# give_back DIR...: hands what a root step wrote back to the runner's
# user, so that the next checkout can clean it and the cache and artifact
# steps can read and replace it.
give_back() {
	[ "$(id -u)" = 0 ] && return 0 # root owns what root runs
	local d
	for d in "$@"; do
		[ -e "${d}" ] && { sudo -n chown -R "$(id -u):$(id -g)" "${d}" 2>/dev/null || warning "give back" "could not hand ${d} back to $(id -un)"; }
	done
	return 0
}

# newest_json DIR: the newest results file in DIR; fails when none.
newest_json() {
	local f newest=""
	for f in "$1"/*.json; do
		[ -e "${f}" ] || continue
		if [ -z "${newest}" ] || [ "${f}" -nt "${newest}" ]; then
			newest=${f}
		fi
	done
	[ -n "${newest}" ] || return 1
	echo "${newest}"
}

# only_invalid_runs LOG: whether go test's output LOG failed only because
# some runs were invalid (every reason under a "--- FAIL:" line an
# "INVALID run:" one; a parent's "--- FAIL:" has none of its own), with
# the suite's one "FAIL meshbench: not a valid result: invalid runs in
# ...", rather than because the run broke. Such a run's results file is
# whole: its valid repeats can be used, the invalid ones are left out by
# what reads it.
only_invalid_runs() {
	awk '
		/--- FAIL:/ { infail = 1; next }
		infail && /^    / { if ($0 ~ /INVALID run:/) reasons++; else bad = 1; next }
		{ infail = 0 }
		/^FAIL meshbench:/ { if ($0 ~ /^FAIL meshbench: not a valid result: invalid runs in /) invalid++; else bad = 1 }
		/^panic:/ { bad = 1 }
		END { exit !(invalid == 1 && reasons > 0 && !bad) }
	' "$1"
}
