#!/usr/bin/env bash
# Differential fuzzing of uepoll against the kernel (tests/fuzz/fuzz_diff.c)
# for SECONDS (default 600), then a summary: executions, coverage (cov =
# edges, ft = features), corpus size and divergences (inputs saved).
#   scripts/fuzz.sh [SECONDS]
# Builds build-fuzz/ (clang, libFuzzer + ASan + UBSan).  The corpus grows in
# build-fuzz/fuzz-corpus/ across runs (seeded from tests/fuzz/corpus/); an
# input that makes uepoll and the kernel differ (or crash, leak, hang) is
# saved in build-fuzz/fuzz-artifacts/ and replayed with
#   build-fuzz/tests/fuzz_diff FILE
# FUZZ_ARGS adds libFuzzer
# flags (e.g. FUZZ_ARGS=-max_len=4096).  Exit status 0 iff no divergence.
#
#   scripts/fuzz.sh --preload [SECONDS]
# is the preload's differential fuzzer instead (preload/tests/pfuzz.c,
# issue 33): random programs over the libc calls that touch fds, each run
# natively and under uepoll-run, until SECONDS (default 600) are up.  It
# builds build-pfuzz/ (gcc, no sanitizer: an LD_PRELOAD cannot go with
# one) and runs preload/tests/pfuzz.sh from seed PFUZZ_FROM (default: from
# the clock, printed) with PFUZZ_STEPS steps (default 200), the kinds of
# preload/tests/pfuzz_known.txt switched off (PFUZZ_MASK: another list,
# `-` for none).  On the first divergence it prints the minimised
# sequence and the reproducer (also appended to build-pfuzz/pfuzz_repro.txt)
# and exits 1.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --preload ]; then
	secs=${2:-600}
	dir=build-pfuzz
	scripts/deps.sh build-essential cmake pkg-config liburcu-dev
	cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DUEPOLL_WERROR=ON -DUEPOLL_BENCH=OFF >/dev/null
	cmake --build "$dir" -j"$(nproc)" --target uepoll_preload uepoll-run pfuzz >/dev/null
	from=${PFUZZ_FROM:-$(( $(date +%s) % 1000000 * 1000 ))}
	steps=${PFUZZ_STEPS:-200}
	mask=${PFUZZ_MASK:-preload/tests/pfuzz_known.txt}
	echo "preload fuzzing for ${secs}s: seeds from $from, $steps steps, off: $mask"
	PFUZZ_SECONDS=$secs PFUZZ_REPRO=$dir/pfuzz_repro.txt \
		exec preload/tests/pfuzz.sh "$dir/preload/uepoll-run" \
		"$dir/preload/tests/pfuzz" "$from" 1000000000 "$steps" "$mask"
fi
secs=${1:-600}
dir=build-fuzz
scripts/deps.sh build-essential cmake pkg-config clang libclang-rt-14-dev liburcu-dev
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
	-DUEPOLL_SANITIZE=address -DUEPOLL_WERROR=ON -DUEPOLL_BENCH=OFF >/dev/null
cmake --build "$dir" -j"$(nproc)" --target fuzz_diff >/dev/null
mkdir -p "$dir/fuzz-corpus" "$dir/fuzz-artifacts"
log="$dir/fuzz-$(date -u +%Y%m%dT%H%M%S).log"
before=$(ls "$dir/fuzz-artifacts" | wc -l)
echo "fuzzing for ${secs}s; log: $log"
start=$(date +%s)
set +e
# shellcheck disable=SC2086
"$dir/tests/fuzz_diff" -max_total_time="$secs" -timeout=20 -max_len=1024 \
	-print_final_stats=1 -artifact_prefix="$dir/fuzz-artifacts/" ${FUZZ_ARGS:-} \
	"$dir/fuzz-corpus" tests/fuzz/corpus >"$log" 2>&1
rc=$?
set -e
end=$(date +%s)
after=$(ls "$dir/fuzz-artifacts" | wc -l)
last=$(grep -E '^#[0-9]+' "$log" | tail -n 1 || true)
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
[ -n "$execs" ] || execs=$(printf '%s\n' "$last" | sed -n 's/^#\([0-9]*\).*/\1/p')
echo "time:        $((end - start)) s"
echo "executions:  ${execs:-?}"
echo "coverage:    $(printf '%s\n' "$last" | grep -oE 'cov: [0-9]+ ft: [0-9]+' || echo '?')"
echo "corpus:      $(ls "$dir/fuzz-corpus" | wc -l) inputs"
echo "divergences: $((after - before)) (new inputs in $dir/fuzz-artifacts/)"
grep -E '^(DIVERGENCE|FD LEAK)|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error' "$log" | head -n 5 || true
[ "$rc" -eq 0 ] && [ "$after" -eq "$before" ]
