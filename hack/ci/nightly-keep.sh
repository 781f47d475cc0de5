#!/usr/bin/env bash
# nightly-keep.sh: keeps the night's results on bench-results (the worktree
# stored/, from nightly-stored.sh), under nightly/KEY/: each finished
# run's results file gzipped, and a killed run's journal as it is; one
# commit, pushed.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "${REPO_ROOT}"

key=${KEY:?KEY: where on bench-results the runs of this cluster are kept}
[[ ${key} =~ ^[a-z0-9-]+$ ]] || { error "nightly" "KEY=${key}: not a plain name"; exit 2; }
mkdir -p "stored/nightly/${key}"
added=()
for f in results/*.json; do # a finished run's results, gzipped
	[ -e "${f}" ] || continue
	gzip -c "${f}" >"stored/nightly/${key}/$(basename "${f}").gz"
	added+=("$(basename "${f}")")
done
for f in results/*.journal.jsonl; do # a run killed before it finished: what it measured
	[ -e "${f}" ] || continue
	cp "${f}" "stored/nightly/${key}/"
	added+=("$(basename "${f}")")
done
if [ ${#added[@]} -eq 0 ]; then
	warning "nightly" "the run wrote no results file"
	exit 0
fi
cd stored
git add "nightly/${key}"
git -c user.name="meshbench nightly" -c user.email="nightly@users.noreply.github.com" \
	commit -q -m "nightly ${key}: ${added[*]} (main $(git -C .. rev-parse --short HEAD))"
git push -q origin bench-results
