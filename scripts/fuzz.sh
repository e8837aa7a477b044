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
set -euo pipefail
cd "$(dirname "$0")/.."
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
