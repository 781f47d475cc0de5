#!/usr/bin/env bash
# nightly-stored.sh: the stored nightly runs, the branch bench-results,
# checked out as the worktree stored/ (a new orphan branch the first
# night).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "${REPO_ROOT}"

if git ls-remote --exit-code --heads origin bench-results >/dev/null; then
	git worktree add -B bench-results stored origin/bench-results
else
	git worktree add --detach stored
	git -C stored checkout -q --orphan bench-results
	git -C stored rm -rfq --ignore-unmatch .
fi
