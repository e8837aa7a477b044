#!/usr/bin/env bash
# D1 (first-level data cache) misses per delivered event in the single-thread
# loop, counted by cachegrind (repeatable on a loaded machine), for uepoll's
# two ready queues.  (cachegrind sees user space only, so the kernel's
# epoll+eventfd, all in the kernel, cannot be compared this way; cg_loop
# kernel still runs it.)
# Usage: scripts/cachegrind-loop.sh [BUILD_DIR]   (default build-bench)
set -euo pipefail
cd "$(dirname "$0")/.."
b=${1:-build-bench}
bin=$b/bench/cg_loop
[ -x "$bin" ] || { echo "build $bin first (cmake --build $b)"; exit 1; }
scripts/deps.sh valgrind
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf '| system | D1 misses/event | D1 read misses/event | D1 write misses/event | instructions/event |\n|---|---:|---:|---:|---:|\n'
for s in locked wfcq; do
	valgrind --tool=cachegrind --cache-sim=yes --cachegrind-out-file="$out/$s" \
		"$bin" "$s" 1000 10 20000 >"$out/$s.log" 2>&1
	ev=$(sed -n 's/^events \([0-9]*\)/\1/p' "$out/$s.log")
	# summary: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw
	read -r ir _ _ _ d1mr _ _ d1mw _ < <(sed -n 's/^summary: //p' "$out/$s")
	awk -v s="$s" -v ev="$ev" -v ir="$ir" -v r="$d1mr" -v w="$d1mw" 'BEGIN {
		printf "| %s | %.2f | %.2f | %.2f | %.0f |\n", s, (r + w) / ev, r / ev, w / ev, ir / ev }'
done
