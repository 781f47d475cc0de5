#!/usr/bin/env bash
# bench.sh: bench.yml's run, `make bench` with the input FLAGS: split into
# one argument per flag (each -name or -name=value), never pasted into a
# shell (make's BENCHFLAGS would be: its recipe re-reads it), and the
# results in results/bench.txt; exits as go test does.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "${REPO_ROOT}"

split_flags flags "${FLAGS:-}"
mkdir -p results
# as the Makefile's bench target
go test ./benchmarks -run '^$' -bench . -timeout 2h "${FLAGS[@]}" | tee results/bench.txt
