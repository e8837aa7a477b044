#!/usr/bin/env bash
# D1 (first-level data cache) misses and instructions per delivered event in
# the single-thread loop, counted by cachegrind (repeatable on a loaded
# machine), for the library as built: an item's hot fields in its first
# cache line, items cache-line aligned (proposal 003).  (cachegrind sees user
# space only, so the kernel's epoll+eventfd, all in the kernel, cannot be
# compared this way.  The "before" layout of proposal 003 was measured with
# a build variant removed in issue 17: docs/benchmarks.md keeps the numbers.)
# Usage: scripts/cachegrind-loop.sh [BUILD_DIR]   (default build-bench)
set -euo pipefail
cd "$(dirname "$0")/.."
b=${1:-build-bench}
[ -x "$b/bench/cg_loop" ] || { echo "build $b/bench/cg_loop first (cmake --build $b)"; exit 1; }
scripts/deps.sh valgrind
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf '| D1 misses/event | D1 read misses/event | D1 write misses/event | instructions/event |\n|---:|---:|---:|---:|\n'
f=$out/cg
valgrind --tool=cachegrind --cache-sim=yes --cachegrind-out-file="$f" \
	"$b/bench/cg_loop" uepoll 1000 10 20000 >"$f.log" 2>&1
ev=$(sed -n 's/^events \([0-9]*\)/\1/p' "$f.log")
# summary: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw
read -r ir _ _ _ d1mr _ _ d1mw _ < <(sed -n 's/^summary: //p' "$f")
awk -v ev="$ev" -v ir="$ir" -v r="$d1mr" -v w="$d1mw" 'BEGIN {
	printf "| %.2f | %.2f | %.2f | %.0f |\n", (r + w) / ev, r / ev, w / ev, ir / ev }'
