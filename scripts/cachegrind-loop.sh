#!/usr/bin/env bash
# D1 (first-level data cache) misses per delivered event in the single-thread
# loop, counted by cachegrind (repeatable on a loaded machine), for uepoll's
# two ready queues and two item layouts:
#   compact  the library as built: an item's hot fields in its first cache
#            line, items cache-line aligned (proposal 003's "after");
#   spread   cmake -DUEPOLL_LAYOUT_SPREAD=ON: the hot fields over three lines
#            with the cold links between them, in a plain malloc'd block (the
#            kernel's epitem before proposal 003).
# (cachegrind sees user space only, so the kernel's epoll+eventfd, all in the
# kernel, cannot be compared this way.)
# Usage: scripts/cachegrind-loop.sh [BUILD_DIR]   (default build-bench; the
# spread build goes to BUILD_DIR-spread and is configured here)
set -euo pipefail
cd "$(dirname "$0")/.."
b=${1:-build-bench}
[ -x "$b/bench/cg_loop" ] || { echo "build $b/bench/cg_loop first (cmake --build $b)"; exit 1; }
scripts/deps.sh valgrind
cmake -S . -B "$b-spread" -DCMAKE_BUILD_TYPE=Release -DUEPOLL_TESTS=OFF \
	-DUEPOLL_LAYOUT_SPREAD=ON >/dev/null
cmake --build "$b-spread" -j"$(nproc)" --target cg_loop >/dev/null
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf '| ready queue | item layout | D1 misses/event | D1 read misses/event | D1 write misses/event | instructions/event |\n|---|---|---:|---:|---:|---:|\n'
for s in locked wfcq; do
	for layout in compact spread; do
		bin=$b/bench/cg_loop
		[ "$layout" = spread ] && bin=$b-spread/bench/cg_loop
		f=$out/$s-$layout
		valgrind --tool=cachegrind --cache-sim=yes --cachegrind-out-file="$f" \
			"$bin" "$s" 1000 10 20000 >"$f.log" 2>&1
		ev=$(sed -n 's/^events \([0-9]*\)/\1/p' "$f.log")
		# summary: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw
		read -r ir _ _ _ d1mr _ _ d1mw _ < <(sed -n 's/^summary: //p' "$f")
		awk -v s="$s" -v l="$layout" -v ev="$ev" -v ir="$ir" -v r="$d1mr" -v w="$d1mw" 'BEGIN {
			printf "| %s | %s | %.2f | %.2f | %.2f | %.0f |\n", s, l, (r + w) / ev, r / ev, w / ev, ir / ev }'
	done
done
